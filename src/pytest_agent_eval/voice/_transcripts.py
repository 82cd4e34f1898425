"""Speech-to-text results kept by the exact audio they came from, in memory and on disk.

Recognition here is deterministic: Whisper decodes with beam search at temperature 0 and no
sampling fallback, so the same PCM, model and decoding options always give the same text
(tests/livekit/test_transcript_cache.py checks it across fresh processes). Recognizing the
same bytes again is pure cost: a transcript run 5 times, or rerun unchanged, hears the same
fixtures. `TranscriptCache` keeps each result under a SHA-256 of everything it depends on:

- the exact PCM bytes handed to the recognizer, with their sample rate and channel count;
- the recognizer's identity (for Whisper: the model files' content, the decoding options,
  the compute type and thread count, the faster-whisper, CTranslate2 and soxr versions).

So a result is never returned for other audio, and changing any byte of the audio, the model
or an option is a miss. The in-memory layer lives as long as the process (bounded); the
on-disk layer (``[tool.agent_eval] stt_cache = true``, or ``WhisperSTT(cache_dir=...)``)
survives reruns. Each entry is one JSON file written atomically that repeats the full key
material; an entry that does not parse or whose material differs from what is asked is a
miss and is overwritten.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._atomic import write_atomic

__all__ = [
    "ENTRY_FORMAT",
    "CacheStats",
    "CachedRecognition",
    "TranscriptCache",
    "TranscriptKey",
    "default_transcript_cache_dir",
    "entry_path",
    "set_default_transcript_cache_dir",
    "transcript_cache",
]

ENTRY_FORMAT = 1
"""Version of the on-disk entry layout; part of every key, so a new layout never reads an old
entry."""

_MEMORY_ENTRIES = 4096
"""Results kept in memory (a few hundred bytes each)."""


@dataclass(frozen=True, slots=True)
class TranscriptKey:
    """What one recognition depends on, and its digest."""

    digest: str
    """SHA-256 (hex) of the material below, canonically encoded."""
    material: Mapping[str, Any]
    """The audio's hash, rate and channels, and the recognizer's identity (JSON types)."""


@dataclass(frozen=True, slots=True)
class CachedRecognition:
    """A result the cache kept: the text, and how long recognizing it took."""

    text: str
    decode_s: float | None
    """Seconds the recognizer spent decoding the audio when it was recognized (loading the
    model and waiting for it excluded); None for an entry that did not record it."""


@dataclass
class CacheStats:
    """How often a cache answered, since the process started (or `TranscriptCache.reset_stats`)."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    """Lookups the cache could not answer: each one was a recognition."""

    @property
    def lookups(self) -> int:
        return self.memory_hits + self.disk_hits + self.misses

    @property
    def hit_rate(self) -> float:
        """Share of lookups answered without recognizing (0.0 with no lookups)."""
        return (self.memory_hits + self.disk_hits) / self.lookups if self.lookups else 0.0


class TranscriptCache:
    """Recognition results by `TranscriptKey`: in memory, and in ``folder`` when one is given.

    Thread-safe: recognitions run in worker threads.
    """

    def __init__(self, *, max_entries: int = _MEMORY_ENTRIES) -> None:
        self._memory: OrderedDict[str, CachedRecognition] = OrderedDict()
        self._max = max_entries
        self._lock = threading.Lock()
        self.stats = CacheStats()

    @staticmethod
    def key(
        pcm: bytes, *, sample_rate: int, channels: int, recognizer: Mapping[str, Any]
    ) -> TranscriptKey:
        """The key of recognizing ``pcm`` (16-bit PCM as handed over) with ``recognizer``."""
        material = {
            "format": ENTRY_FORMAT,
            "pcm_sha256": hashlib.sha256(pcm).hexdigest(),
            "pcm_bytes": len(pcm),
            "sample_rate": int(sample_rate),
            "channels": int(channels),
            "recognizer": dict(recognizer),
        }
        encoded = json.dumps(material, sort_keys=True, separators=(",", ":"))
        return TranscriptKey(hashlib.sha256(encoded.encode()).hexdigest(), material)

    def get(
        self, key: TranscriptKey, folder: Path | None = None, *, stats: CacheStats | None = None
    ) -> str | None:
        """The text recognized for ``key`` before, or None (counted as a miss).

        ``stats``, when given, counts the lookup too (besides the cache's own counts).
        """
        found = self.lookup(key, folder, stats=stats)
        return found.text if found is not None else None

    def lookup(
        self,
        key: TranscriptKey,
        folder: Path | None = None,
        *,
        stats: CacheStats | None = None,
        timed: bool = False,
    ) -> CachedRecognition | None:
        """What was recognized for ``key`` before, with its decode time; None is a miss.

        With ``timed``, an entry that did not record its decode time is a miss too: the
        recognition is run again (and the entry replaced) so that its time is known.
        """
        counters = [self.stats] if stats is None else [self.stats, stats]
        with self._lock:
            found = self._memory.get(key.digest)
            if found is not None and not (timed and found.decode_s is None):
                self._memory.move_to_end(key.digest)
                for c in counters:
                    c.memory_hits += 1
                return found
        if folder is not None:
            found = _read_entry(entry_path(folder, key), key)
            if found is not None and not (timed and found.decode_s is None):
                with self._lock:
                    self._remember(key, found)
                    for c in counters:
                        c.disk_hits += 1
                return found
        with self._lock:
            for c in counters:
                c.misses += 1
        return None

    def put(
        self,
        key: TranscriptKey,
        text: str,
        folder: Path | None = None,
        *,
        decode_s: float | None = None,
    ) -> None:
        """Keep ``text`` as the result for ``key`` (and write it to ``folder``), with the
        seconds ``decode_s`` recognizing it took."""
        found = CachedRecognition(text, decode_s)
        with self._lock:
            self._remember(key, found)
        if folder is not None:
            entry: dict[str, Any] = {"key": key.digest, "material": key.material, "text": text}
            if decode_s is not None:
                entry["decode_s"] = decode_s
            write_atomic(entry_path(folder, key), json.dumps(entry, indent=1, sort_keys=True))

    def clear_memory(self) -> None:
        """Forget the in-memory results (the disk entries stay)."""
        with self._lock:
            self._memory.clear()

    def reset_stats(self) -> CacheStats:
        """Start counting afresh; returns the counts so far."""
        with self._lock:
            old, self.stats = self.stats, CacheStats()
        return old

    def _remember(self, key: TranscriptKey, found: CachedRecognition) -> None:
        self._memory[key.digest] = found
        self._memory.move_to_end(key.digest)
        while len(self._memory) > self._max:
            self._memory.popitem(last=False)


def entry_path(folder: Path, key: TranscriptKey) -> Path:
    """Where the entry for ``key`` lives under ``folder``."""
    return Path(folder) / key.digest[:2] / f"{key.digest}.json"


def _read_entry(path: Path, key: TranscriptKey) -> CachedRecognition | None:
    try:
        entry = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # absent, or a torn or foreign file: recognize and overwrite it
    if not isinstance(entry, dict) or entry.get("key") != key.digest:
        return None
    # The full material, not only its digest: the entry must be for exactly this audio.
    if entry.get("material") != json.loads(json.dumps(key.material)):
        return None
    text = entry.get("text")
    if not isinstance(text, str):
        return None
    decode_s = entry.get("decode_s")
    if isinstance(decode_s, bool) or not isinstance(decode_s, int | float) or decode_s < 0:
        return CachedRecognition(text, None)
    return CachedRecognition(text, float(decode_s))


_cache = TranscriptCache()
_default_dir: Path | None = None


def transcript_cache() -> TranscriptCache:
    """The process's transcript cache (its in-memory layer is shared by every recognizer)."""
    return _cache


def set_default_transcript_cache_dir(folder: str | os.PathLike[str] | None) -> None:
    """The on-disk cache folder recognizers use when not given one (None: memory only).

    The pytest plugin sets it from ``[tool.agent_eval] stt_cache`` / ``stt_cache_dir``.
    """
    global _default_dir
    _default_dir = Path(folder) if folder is not None else None


def default_transcript_cache_dir() -> Path | None:
    """The folder set by `set_default_transcript_cache_dir` (None: memory only)."""
    return _default_dir
