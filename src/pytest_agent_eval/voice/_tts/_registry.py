"""The text-to-speech backend protocol, and the registry that finds backends by name.

A backend turns text into an `AudioClip` at its own sample rate; everything after that
(resampling, trimming, level, WAV, sidecar) is the same for all backends. Built-in backends:
``hibari`` (offline default), ``piper``, ``espeak`` and ``openai``. Others plug in through the
``pytest_agent_eval.tts_backends`` entry-point group, each entry naming a class (or factory)
that takes no arguments and satisfies `TTSBackend`::

    [project.entry-points."pytest_agent_eval.tts_backends"]
    mytts = "my_package.tts:MyBackend"
"""

from __future__ import annotations

import importlib
import importlib.metadata
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from ..._text import did_you_mean
from ...errors import ConfigError, MissingExtraError
from ...models import VoiceSettings

if TYPE_CHECKING:
    from .._fixtures import AudioClip

__all__ = [
    "BUILTIN_BACKENDS",
    "DEFAULT_BACKEND",
    "ENTRY_POINT_GROUP",
    "Execution",
    "TTSBackend",
    "available_backends",
    "get_backend",
    "package_version",
]

Execution = Literal["process", "thread", "async"]
"""How a run spreads a backend's work: ``process`` for CPU-bound engines that hold the GIL in
Python code (hibari measured 1.6x on 2 cores with processes, 1.4x with threads), ``thread`` for
backends that wait on something else (a subprocess), ``async`` for network backends."""

DEFAULT_BACKEND = "hibari"
ENTRY_POINT_GROUP = "pytest_agent_eval.tts_backends"

BUILTIN_BACKENDS: dict[str, str] = {
    "hibari": "pytest_agent_eval.voice._tts._hibari:HibariBackend",
    "piper": "pytest_agent_eval.voice._tts._piper:PiperBackend",
    "espeak": "pytest_agent_eval.voice._tts._espeak:EspeakBackend",
    "openai": "pytest_agent_eval.voice._tts._openai:OpenAIBackend",
}


@runtime_checkable
class TTSBackend(Protocol):
    """What the synthesizer needs from a text-to-speech engine.

    Construction must be cheap (no model loading): backends are built to compute fixture keys
    in ``--check`` and in pytest. Load engines lazily in `synthesize`, and cache them on the
    instance; each worker process or thread gets its own instance.
    """

    name: str
    """The name used in ``backend:`` settings."""
    execution: Execution
    """How a run parallelizes this backend (see `Execution`)."""

    def version(self) -> str:
        """The version of whatever shapes the audio (engine and voice packages); it is part of
        every fixture's key, so upgrading the engine marks its fixtures stale.

        Raises:
            MissingExtraError: The engine is not installed (name what to install).
        """
        ...

    def resolve(self, settings: VoiceSettings) -> VoiceSettings:
        """Fill this backend's defaults into ``settings`` (voice, model, seed, ...) and check
        them without loading the engine.

        Raises:
            ConfigError: A value this backend cannot use (unknown voice, speed out of range).
            MissingExtraError: The engine or voice is not installed, or needs a download.
        """
        ...

    def synthesize(self, text: str, settings: VoiceSettings) -> AudioClip:
        """Speak ``text`` with resolved ``settings``; mono audio at the engine's own rate."""
        ...


def package_version(distribution: str, *, install: str) -> str:
    """The installed version of ``distribution``, or `MissingExtraError` saying ``install``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError as exc:
        raise MissingExtraError(f"{distribution} is not installed: {install}") from exc


def _entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def available_backends() -> list[str]:
    """Names of the built-in backends and of those registered through entry points."""
    return sorted(set(BUILTIN_BACKENDS) | set(_entry_points()))


def _load_target(target: str) -> Callable[[], Any]:
    module, _, attr = target.partition(":")
    loaded: Callable[[], Any] = getattr(importlib.import_module(module), attr)
    return loaded


def get_backend(name: str) -> TTSBackend:
    """A fresh instance of the backend called ``name``.

    Raises:
        ConfigError: No such backend, or the registered object is not a `TTSBackend`.
    """
    if name in BUILTIN_BACKENDS:
        factory = _load_target(BUILTIN_BACKENDS[name])
    else:
        entry = _entry_points().get(name)
        if entry is None:
            names = available_backends()
            raise ConfigError(
                f"unknown TTS backend {name!r}{did_you_mean(name, names)}; available: "
                f"{', '.join(names)}. A third-party backend registers itself under the "
                f"{ENTRY_POINT_GROUP!r} entry-point group"
            )
        try:
            factory = entry.load()
        except Exception as exc:  # a plugin's import can fail in any way
            raise ConfigError(
                f"TTS backend {name!r} ({entry.value}) failed to load: {type(exc).__name__}: {exc}"
            ) from exc
    backend = factory()
    if not isinstance(backend, TTSBackend):
        raise ConfigError(
            f"TTS backend {name!r} does not implement the backend protocol "
            "(name, execution, version(), resolve(), synthesize())"
        )
    return backend
