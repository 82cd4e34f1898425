"""Fixture audio for a session: WAV -> frames at the session's one rate, and a twin VAD stream."""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import vad as lk_vad

from ...errors import AdapterError
from ...models import describe_conditions
from ...voice._fixture_pcm import FixturePCM, content_key, decode_fixture, save_streamed_audio
from ...voice._fixtures import (
    AudioClip,
)
from ...voice._segments import SpeechSegment, speech_segment
from ..base import TurnInput

__all__ = [
    "FixtureAudio",
    "SpeechSegment",
    "VADMirror",
    "audio_turn_extra",
    "cached_fixture_audio",
    "content_key",
    "fixture_audio_of",
    "load_fixture_audio",
    "save_streamed_frames",
    "speech_at_end",
    "speech_segment",
]


@dataclass(frozen=True, slots=True)
class FixtureAudio:
    """A fixture ready to stream: frames at the session rate, followed by trailing silence."""

    path: Path
    """The WAV file."""
    text: str | None
    """What it says, from its sidecar (None without one)."""
    frames: tuple[rtc.AudioFrame, ...]
    """The audio cut into frames, then the silence tail."""
    frame_s: float
    """Length of one frame in seconds."""
    duration_s: float
    """Length of the fixture's own audio (without the tail)."""
    source_rate: int
    """Sample rate of the WAV on disk."""
    source_channels: int
    """Channel count of the WAV on disk."""


def load_fixture_audio(
    path: Path,
    *,
    sample_rate: int,
    frame_ms: int,
    tail_s: float,
    transform: Callable[[AudioClip], AudioClip] | None = None,
) -> FixtureAudio:
    """Read, validate, down-mix and resample ``path`` to ``sample_rate``, then cut it in frames.

    ``transform`` (audio conditions) gets the validated clip at its own rate first.

    Raises:
        AudioFixtureError: Missing, unreadable, empty or silent fixture (see `validate_fixture`).
    """
    decoded = decode_fixture(path, sample_rate=sample_rate, transform=transform)
    return fixture_audio_of(decoded, frame_ms=frame_ms, tail_s=tail_s)


def fixture_audio_of(decoded: FixturePCM, *, frame_ms: int, tail_s: float) -> FixtureAudio:
    """``decoded`` (16-bit mono PCM) cut in frames of ``frame_ms``, then ``tail_s`` of
    silence."""
    sample_rate = decoded.sample_rate
    path = decoded.path
    pcm = decoded.pcm
    per_frame = sample_rate * frame_ms // 1000
    frame_bytes = per_frame * 2
    tail_frames = math.ceil(tail_s * 1000 / frame_ms)
    padded = len(pcm) + (-len(pcm)) % frame_bytes
    data = pcm.ljust(padded, b"\0") + b"\0" * (frame_bytes * tail_frames)
    frames = tuple(
        rtc.AudioFrame(
            data=data[i : i + frame_bytes],
            sample_rate=sample_rate,
            num_channels=1,
            samples_per_channel=per_frame,
        )
        for i in range(0, len(data), frame_bytes)
    )
    return FixtureAudio(
        path=path,
        text=decoded.text,
        frames=frames,
        frame_s=frame_ms / 1000,
        duration_s=decoded.duration_s,
        source_rate=decoded.source_rate,
        source_channels=decoded.source_channels,
    )


_FIXTURES_KEPT = 256
"""Fixtures kept loaded per process (a few hundred kB each at 24 kHz)."""

_loaded: OrderedDict[tuple[Any, ...], FixtureAudio] = OrderedDict()
_loaded_lock = threading.Lock()


def cached_fixture_audio(
    path: Path, *, sample_rate: int, frame_ms: int, tail_s: float
) -> FixtureAudio:
    """`load_fixture_audio`, kept for the life of the process while the file is unchanged.

    Shared by every adapter in the process (pytest builds one per test), keyed by the file's
    path, size and mtime and the framing; the least recently used beyond 256 are dropped.
    """
    identity = content_key(path)
    key = (identity, sample_rate, frame_ms, tail_s) if identity is not None else None
    if key is not None:
        with _loaded_lock:
            if key in _loaded:
                _loaded.move_to_end(key)
                return _loaded[key]
    audio = load_fixture_audio(path, sample_rate=sample_rate, frame_ms=frame_ms, tail_s=tail_s)
    if key is not None:
        with _loaded_lock:
            _loaded[key] = audio
            while len(_loaded) > _FIXTURES_KEPT:
                _loaded.popitem(last=False)
    return audio


def speech_at_end(audio: FixtureAudio) -> AdapterError:
    """The error for a fixture whose speech the VAD hears going on past its silence tail."""
    tail = len(audio.frames) * audio.frame_s - audio.duration_s
    return AdapterError(
        f"audio fixture {audio.path}: the session's VAD still hears speech at the end of "
        f"the {tail:.2f} s of silence appended to it, so the turn would never end; raise "
        "LiveKitAdapter(tail_silence_s=...) above the VAD's min_silence_duration"
    )


class VADMirror:
    """A stream of the session's VAD, fed the frames the session gets, to know what it will see.

    VAD decisions count samples, not wall time, so a stream of the same VAD fed the same frames
    from the same state finds the segments the session's stream will find, at any streaming
    speed. `scan_segments` uses one, from a clean state, over each fixture once. The adapter
    keeps one as a twin of the session's streams, fed every frame before the session gets it,
    only when the session's STT runs a VAD stream of its own that the adapter cannot reset (a
    non-streaming STT other than ours); otherwise it resets the session's stream per fixture.
    """

    # The mirror's clock lags the audio pushed by the resampler's delay and a partial window;
    # waiting for it to reach the end minus this much still covers every end of speech, since
    # those happen at least min_silence_duration before the end of the silence tail.
    _LAG_S = 0.1

    def __init__(self, vad: lk_vad.VAD) -> None:
        self._vad = vad
        self._stream = vad.stream()
        self._pushed_s = 0.0
        self._speaking = False

    @property
    def pushed_s(self) -> float:
        """Seconds of audio fed since the stream started."""
        return self._pushed_s

    async def reset(self) -> None:
        """Start over, as the session does when an agent starts or resumes (new VAD streams)."""
        await self.aclose()
        self._stream = self._vad.stream()
        self._pushed_s = 0.0
        self._speaking = False

    async def feed(self, audio: FixtureAudio, start: int = 0) -> tuple[SpeechSegment, ...]:
        """Push ``audio``'s frames from index ``start`` on; return the segments ending in them.

        Times in the segments count from the start of the fixture, whatever ``start`` is (a
        twin reset in the middle of a fixture is fed the rest of it).

        Raises:
            AdapterError: When speech is still going on at the end of the silence tail.
        """
        offset = self._pushed_s - start * audio.frame_s
        for frame in audio.frames[start:]:
            self._stream.push_frame(frame)
            self._pushed_s += frame.duration
        target = self._pushed_s - self._LAG_S
        segments: list[SpeechSegment] = []
        while True:
            event = await self._stream.__anext__()
            if event.type == lk_vad.VADEventType.START_OF_SPEECH:
                self._speaking = True
            elif event.type == lk_vad.VADEventType.END_OF_SPEECH:
                self._speaking = False
                segments.append(speech_segment(event, offset))
            elif event.type == lk_vad.VADEventType.INFERENCE_DONE and event.timestamp >= target:
                break
        if self._speaking:
            raise speech_at_end(audio)
        return tuple(segments)

    async def aclose(self) -> None:
        """Stop the mirror's stream."""
        await self._stream.aclose()


def audio_turn_extra(turn: TurnInput, audio: FixtureAudio, segments: int) -> dict[str, Any]:
    """What ``metadata["livekit"]`` says of an audio turn's input (every audio turn, cut by a
    barge-in or not, says the same)."""
    return {
        "input": "audio",
        "conditions": describe_conditions(turn.conditions),
        "conditions_seed": turn.seed if turn.conditions else None,
        "audio_duration_s": audio.duration_s,
        "speech_segments": segments,
        "fixture_rate": audio.source_rate,
        "fixture_channels": audio.source_channels,
    }


def save_streamed_frames(
    folder: Path | None, info: Any, turn_index: int, audio: FixtureAudio
) -> Path | None:
    """The exact audio a turn streamed (its frames, after its conditions, the silence tail
    included) as a WAV in ``folder``, in the layout every adapter shares; None when ``folder``
    is None (not asked to save it). ``info`` is the run's `ConversationInfo`."""
    if folder is None:
        return None
    frame = rtc.combine_audio_frames(list(audio.frames))
    return save_streamed_audio(
        folder,
        transcript_id=info.transcript.id,
        run_index=info.run_index,
        turn_index=turn_index,
        pcm=bytes(frame.data),
        sample_rate=frame.sample_rate,
    )
