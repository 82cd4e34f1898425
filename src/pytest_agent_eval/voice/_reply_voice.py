"""The agent's replies spoken by our offline voice: one engine lock and one memory per process,
for every voice adapter.

Every run of a transcript makes the agent say the same sentences again, and speaking them is
the largest component of a voice suite's CPU after imports (`bench/suite_phases.py`). The
engines are seeded, so the same text, voice and rate give the same samples, byte for byte: a
sentence said before in this process is answered from memory, a copy of the first time's PCM.
An engine must not run in two threads at once, whichever framework asked: one lock serializes
synthesis across LiveKit's and Pipecat's services.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

from ..models import VoiceSettings
from ._tts._registry import TTSBackend

__all__ = ["ENGINE_LOCK", "SPOKEN", "ByteBoundedLRU", "SpokenReply", "speak_reply"]

V = TypeVar("V")

ENGINE_LOCK = threading.Lock()
"""Held while an offline engine synthesizes (one engine per voice and process is shared)."""


class ByteBoundedLRU(Generic[V]):
    """A thread-safe LRU whose entries' sizes (as given) sum to at most ``max_bytes``."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> V | None:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                self.misses += 1
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return entry[0]

    def put(self, key: Hashable, value: V, size: int) -> None:
        if size > self.max_bytes:
            return
        with self._lock:
            old = self._entries.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self.max_bytes:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
            self.hits = self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(frozen=True)
class SpokenReply:
    """A reply as 16-bit mono PCM, and where its voice starts and ends (seconds)."""

    pcm: bytes
    sample_rate: int
    voiced_start_s: float
    voiced_end_s: float


SPOKEN: ByteBoundedLRU[SpokenReply] = ByteBoundedLRU(96 * 1024 * 1024)
"""Replies said before, by (backend, resolved voice, rate, text)."""


def speak_reply(
    backend: TTSBackend,
    settings: VoiceSettings,
    sample_rate: int,
    text: str,
    *,
    remember: bool = True,
) -> SpokenReply:
    """``text`` spoken by ``backend`` at ``sample_rate``, from memory when said before (runs in
    a worker thread: synthesis blocks). ``remember=False`` synthesizes every time and keeps
    nothing (to measure a first hearing)."""
    from ._clip import resample, to_pcm16_bytes
    from ._stats import voiced_frames

    key = (backend.name, repr(settings), sample_rate, text)
    if remember and (known := SPOKEN.get(key)) is not None:
        return known
    with ENGINE_LOCK:
        clip = backend.synthesize(text, settings)
    clip = resample(clip, sample_rate)
    voiced, n = voiced_frames(clip)
    start = float(voiced[0] * n / clip.sample_rate) if voiced.size else 0.0
    end = float((voiced[-1] + 1) * n / clip.sample_rate) if voiced.size else clip.duration_s
    spoken = SpokenReply(to_pcm16_bytes(clip), sample_rate, start, end)
    if remember:
        SPOKEN.put(key, spoken, len(spoken.pcm) + 200)
    return spoken
