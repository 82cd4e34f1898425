"""Session I/O for evaluation: a frame queue as microphone, and sinks that timestamp replies."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from livekit import rtc
from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities, TextOutput

from .._compat import running_speech

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
        self.on_push: Callable[[float], None] | None = None
        """Told each frame's seconds as it is pushed (the turn timeline's ``stream``)."""

    async def __anext__(self) -> rtc.AudioFrame:
        frame = await self._queue.get()
        if self._queue.empty():
            self._taken.set()
        return frame

    def push(self, frame: rtc.AudioFrame) -> None:
        """Hand one frame to the session."""
        self._taken.clear()
        self._queue.put_nowait(frame)
        if self.on_push is not None:
            self.on_push(frame.duration)

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
    positive ``speed`` it plays from its first frame for its duration divided by ``speed``, as
    a speaker would. A playing segment can be paused, resumed and cleared, and reports how far
    it played; every pause or clear while a segment plays is recorded in ``halts`` (what a
    caller hears as the agent going quiet).
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
        self.first_frame_by_speech: dict[str, float] = {}
        """``time.perf_counter()`` of each speech's first frame (by speech id), since `reset`."""
        self.frames_by_speech: dict[str, list[rtc.AudioFrame]] = {}
        """Each speech's frames (by speech id), since `reset`."""
        self.played_by_speech: dict[str, float] = {}
        """Seconds of each speech's audio that played (by speech id, summed over its segments
        as each one's playout ends), since `reset`."""
        self._segment_speech: str | None = None
        self.halts: list[float] = []
        """``time.perf_counter()`` of each pause or clear while a segment was playing."""
        self.resumes: list[float] = []
        """``time.perf_counter()`` of each resume of a paused segment."""
        self.segment_started_at: float | None = None
        """``time.perf_counter()`` of the first frame of the segment now playing, if any."""
        self.segment_flushed = asyncio.Event()
        """Set when the segment now playing has all its audio (flushed)."""
        self.playing_started = asyncio.Event()
        """Set when a segment starts playing (its first frame)."""
        self._segment_s = 0.0
        self._cleared = False
        self._flushed_s: float | None = None
        self._started_loop: float | None = None
        self._paused_at: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    def set_speed(self, speed: float) -> None:
        """Play later segments at ``speed`` (0: at once; 1.0: real time)."""
        self._speed = speed

    def reset(self) -> None:
        """Start a new turn."""
        self.frames = []
        self.first_frame_at = None
        self.first_frame_by_speech = {}
        self.frames_by_speech = {}
        self.played_by_speech = {}

    @property
    def playing(self) -> bool:
        """True while a segment is playing (started, not finished; paused counts)."""
        return self._started_loop is not None

    def position_s(self) -> float:
        """Seconds of the current segment played so far (0.0 when none plays)."""
        if self._started_loop is None:
            return 0.0
        if self._paused_at is not None:
            return self._paused_at
        if self._speed <= 0:
            return self._segment_s
        elapsed = (asyncio.get_running_loop().time() - self._started_loop) * self._speed
        total = self._flushed_s if self._flushed_s is not None else self._segment_s
        return min(elapsed, total)

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        now = time.perf_counter()
        if self.first_frame_at is None:
            self.first_frame_at = now
        handle = running_speech()
        if handle is not None:
            self.first_frame_by_speech.setdefault(handle.id, now)
            self.frames_by_speech.setdefault(handle.id, []).append(frame)
        if self._segment_s == 0.0:
            self._segment_speech = handle.id if handle is not None else None
            self._cleared = False
            self._flushed_s = None
            self._paused_at = None
            self._started_loop = asyncio.get_running_loop().time()
            self.segment_started_at = now
            self.segment_flushed.clear()
            self.playing_started.set()
            self.on_playback_started(created_at=time.time())
        self.frames.append(frame)
        self._segment_s += frame.duration

    def flush(self) -> None:
        super().flush()
        duration, self._segment_s = self._segment_s, 0.0
        self._flushed_s = duration
        self.segment_flushed.set()
        if self._cleared or self._speed <= 0 or self._started_loop is None:
            self._finish(duration, interrupted=self._cleared)
            self._cleared = False
            return
        if self._paused_at is None:
            self._schedule()

    def _schedule(self) -> None:
        assert self._started_loop is not None and self._flushed_s is not None
        loop = asyncio.get_running_loop()
        remaining = self._flushed_s / self._speed - (loop.time() - self._started_loop)
        flushed = self._flushed_s
        self._timer = loop.call_later(
            max(0.0, remaining), lambda: self._finish(flushed, interrupted=False)
        )

    def _finish(self, position: float, *, interrupted: bool) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._started_loop = None
        self._paused_at = None
        self.segment_started_at = None
        self.playing_started.clear()
        if self._segment_speech is not None:
            speech = self._segment_speech
            self.played_by_speech[speech] = self.played_by_speech.get(speech, 0.0) + position
            self._segment_speech = None
        self.on_playback_finished(playback_position=position, interrupted=interrupted)

    def pause(self) -> None:
        super().pause()
        if self._started_loop is None or self._paused_at is not None or self._speed <= 0:
            return
        position = self.position_s()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._paused_at = position
        self.halts.append(time.perf_counter())

    def resume(self) -> None:
        super().resume()
        if self._started_loop is None or self._paused_at is None:
            return
        loop = asyncio.get_running_loop()
        self._started_loop = loop.time() - self._paused_at / self._speed
        self._paused_at = None
        self.resumes.append(time.perf_counter())
        if self._flushed_s is not None:
            self._schedule()

    def clear_buffer(self) -> None:
        if self._started_loop is not None and self._paused_at is None and self._speed > 0:
            self.halts.append(time.perf_counter())
        if self._flushed_s is not None and self._started_loop is not None:
            self._finish(self.position_s(), interrupted=True)
        elif self._segment_s > 0:
            # Captured but not flushed yet: the coming flush reports the interruption.
            self._cleared = True

    def close(self) -> None:
        """Cancel a simulated playout still pending."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
