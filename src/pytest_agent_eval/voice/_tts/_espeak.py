"""espeak-ng through the ``espeakng-loader`` wheel: robotic but tiny, fast and multilingual.

Each utterance runs in a fresh process (`._espeak_worker`) because libespeak-ng's output depends
on earlier calls in the same process; a fresh process makes it reproducible.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

from ...errors import AudioFixtureError, ConfigError, install_command
from ...models import VoiceSettings
from .._fixtures import AudioClip, clip_from_pcm16
from ._registry import Execution, package_version

__all__ = ["EspeakBackend"]

_EXTRA = "espeak"
_NORMAL_RATE_WPM = 175  # espeak-ng's own default speaking rate
_TIMEOUT_S = 60.0


class EspeakBackend:
    """The ``espeak`` backend: voice ``en-us`` by default; any espeak-ng voice (``en-gb``,
    ``en-gb-scotland``, ``fr``, ``en-us+f3``...). ``language`` is used when ``voice`` is unset."""

    name = "espeak"
    execution: Execution = "thread"  # the work happens in a subprocess; a thread just waits
    default_voice = "en-us"

    def version(self) -> str:
        return "espeakng-loader " + package_version(
            "espeakng-loader", install=install_command(_EXTRA)
        )

    def resolve(self, settings: VoiceSettings) -> VoiceSettings:
        self.version()
        speed = 1.0 if settings.speed is None else float(settings.speed)
        if not 0.3 <= speed <= 3.0:
            raise ConfigError(f"espeak speed must be between 0.3 and 3.0, got {speed}")
        if settings.model is not None:
            raise ConfigError(f"espeak takes no 'model' (got {settings.model!r})")
        return VoiceSettings(
            backend=self.name,
            voice=settings.voice or settings.language or self.default_voice,
            model=None,
            speed=speed,
            sample_rate=settings.sample_rate,
            seed=None,
            language=settings.language,
        )

    def synthesize(self, text: str, settings: VoiceSettings) -> AudioClip:
        request = {
            "text": text,
            "voice": settings.voice or self.default_voice,
            "rate_wpm": round(_NORMAL_RATE_WPM * (settings.speed or 1.0)),
        }
        env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_agent_eval.voice._tts._espeak_worker"],
            input=json.dumps(request).encode("utf-8"),
            capture_output=True,
            timeout=_TIMEOUT_S,
            env=env,
            check=False,
        )
        if proc.returncode != 0 or len(proc.stdout) < 4:
            detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
            raise AudioFixtureError(
                f"espeak-ng failed: {detail[-1] if detail else f'exit code {proc.returncode}'}"
            )
        (rate,) = struct.unpack("<I", proc.stdout[:4])
        return clip_from_pcm16(proc.stdout[4:], rate)
