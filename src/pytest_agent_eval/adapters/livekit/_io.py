"""Session I/O for evaluation: a frame queue as microphone, and sinks that timestamp replies."""

from __future__ import annotations

import asyncio
import time

from livekit import rtc
from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities, TextOutput

from ._compat import running_speech

__all__ = ["CaptureAudioOutput", "CaptureTextOutput", "FrameQueueInput"]


class FrameQueueInput(AudioInput):
    """The session's microphone: one never-ending input that turns push frames into.

    One input serves the whole session (set before ``start``), so the session's audio path is
    never torn down between turns.
    """

    def __init__(self) -> None:
        super().__init__(label="pytest_agent_eval.FrameQueueInput")
        self._queue: asyncio.Queue[rtc.AudioFrame] = asyncio.Queue()
        self._taken = asyncio.Event()
        self._taken.set()

    async def __anext__(self) -> rtc.AudioFrame:
        frame = await self._queue.get()
        if self._queue.empty():
            self._taken.set()
        return frame

    def push(self, frame: rtc.AudioFrame) -> None:
        """Hand one frame to the session."""
        self._taken.clear()
        self._queue.put_nowait(frame)

    async def taken(self) -> None:
        """Return once the session has taken every frame pushed so far."""
        await self._taken.wait()


class CaptureTextOutput(TextOutput):
    """Records when the first reply text of a turn reaches the session's text output, and the
    text each speech sent (for speech that leaves no message in the chat)."""

    def __init__(self, next_in_chain: TextOutput | None = None) -> None:
        super().__init__(label="pytest_agent_eval.CaptureTextOutput", next_in_chain=next_in_chain)
        self.first_text_at: float | None = None
        """``time.perf_counter()`` of the first non-empty text since `reset`."""
        self._by_speech: dict[str, list[str]] = {}
        self._first_by_speech: dict[str, float] = {}

    def reset(self) -> None:
        """Start a new turn."""
        self.first_text_at = None
        self._by_speech.clear()
        self._first_by_speech.clear()

    def text_of(self, speech_id: str) -> str:
        """What the speech ``speech_id`` sent to the transcription output since `reset`."""
        return "".join(self._by_speech.get(speech_id, ()))

    def first_text_time(self, speech_id: str) -> float | None:
        """``time.perf_counter()`` of the first text of speech ``speech_id`` since `reset`."""
        return self._first_by_speech.get(speech_id)

    async def capture_text(self, text: str) -> None:
        now = time.perf_counter()
        if text and self.first_text_at is None:
            self.first_text_at = now
        handle = running_speech()
        if handle is not None and text:
            self._by_speech.setdefault(handle.id, []).append(text)
            self._first_by_speech.setdefault(handle.id, now)
        if self.next_in_chain is not None:
            await self.next_in_chain.capture_text(text)

    def flush(self) -> None:
        if self.next_in_chain is not None:
            self.next_in_chain.flush()


class CaptureAudioOutput(AudioOutput):
    """An audio sink that keeps the agent's speech and timestamps its first frame.

    Playout is simulated: with ``speed`` 0 a segment "plays" the moment it is flushed; with a
    positive ``speed`` it takes its duration divided by ``speed``, as a speaker would.
    """

    def __init__(self, *, speed: float = 0.0) -> None:
        super().__init__(
            label="pytest_agent_eval.CaptureAudioOutput",
            capabilities=AudioOutputCapabilities(pause=True),
        )
        self._speed = speed
        self.frames: list[rtc.AudioFrame] = []
        """Frames captured since `reset`."""
        self.first_frame_at: float | None = None
        """``time.perf_counter()`` of the first frame since `reset`."""
        self._segment_s = 0.0
        self._cleared = False
        self._playing: tuple[asyncio.TimerHandle, float] | None = None

    def reset(self) -> None:
        """Start a new turn."""
        self.frames = []
        self.first_frame_at = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self.first_frame_at is None:
            self.first_frame_at = time.perf_counter()
        if self._segment_s == 0.0:
            self._cleared = False
            self.on_playback_started(created_at=time.time())
        self.frames.append(frame)
        self._segment_s += frame.duration

    def flush(self) -> None:
        super().flush()
        duration, self._segment_s = self._segment_s, 0.0
        if self._cleared or self._speed <= 0:
            self.on_playback_finished(playback_position=duration, interrupted=self._cleared)
            self._cleared = False
            return

        def finished() -> None:
            self._playing = None
            self.on_playback_finished(playback_position=duration, interrupted=False)

        handle = asyncio.get_running_loop().call_later(duration / self._speed, finished)
        self._playing = (handle, duration)

    def clear_buffer(self) -> None:
        if self._playing is not None:
            handle, duration = self._playing
            self._playing = None
            handle.cancel()
            self.on_playback_finished(playback_position=duration, interrupted=True)
        elif self._segment_s > 0:
            # Captured but not flushed yet: the coming flush reports the interruption.
            self._cleared = True

    def close(self) -> None:
        """Cancel a simulated playout still pending."""
        if self._playing is not None:
            self._playing[0].cancel()
            self._playing = None
