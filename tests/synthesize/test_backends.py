"""The built-in offline backends and third-party backends through the entry-point group."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval.errors import ConfigError, MissingExtraError
from pytest_agent_eval.models import VoiceSettings
from pytest_agent_eval.synthesize import TTSBackend, available_backends, get_backend
from pytest_agent_eval.synthesize._cli import main


@pytest.mark.parametrize(
    ("name", "rate", "voice"), [("piper", 22050, "joe"), ("espeak", 22050, "en-us")]
)
def test_offline_backend_is_deterministic(name: str, rate: int, voice: str) -> None:
    backend = get_backend(name)
    settings = backend.resolve(VoiceSettings())
    assert settings.voice == voice
    first = backend.synthesize("Can you email me the confirmation?", settings)
    second = backend.synthesize("Can you email me the confirmation?", settings)
    assert first.sample_rate == rate
    assert first.duration_s > 1.0
    assert np.array_equal(first.samples, second.samples)


def test_espeak_takes_a_language_as_voice() -> None:
    backend = get_backend("espeak")
    settings = backend.resolve(VoiceSettings(language="en-gb"))
    assert settings.voice == "en-gb"
    assert backend.synthesize("Hello.", settings).duration_s > 0.3


@pytest.mark.parametrize(
    ("name", "settings", "error", "message"),
    [
        ("hibari", VoiceSettings(voice="hart"), ConfigError, "Did you mean 'heart'?"),
        ("hibari", VoiceSettings(speed=3.0), ConfigError, "between 0.5 and 2.0"),
        ("hibari", VoiceSettings(language="fr"), ConfigError, "'espeak' speaks"),
        ("piper", VoiceSettings(voice="amy"), MissingExtraError, "set 'model' to the .onnx"),
        ("piper", VoiceSettings(model="x.onnx"), ConfigError, "Piper voice file"),
        ("openai", VoiceSettings(speed=9.0), ConfigError, "between 0.25 and 4.0"),
    ],
)
def test_settings_a_backend_cannot_use(
    name: str, settings: VoiceSettings, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message.replace("(", r"\(").replace("?", r"\?")):
        get_backend(name).resolve(settings)


def test_unknown_backend_lists_the_available_ones() -> None:
    with pytest.raises(ConfigError) as info:
        get_backend("pipr")
    assert "unknown TTS backend 'pipr' (Did you mean 'piper'?)" in str(info.value)
    assert "pytest_agent_eval.tts_backends" in str(info.value)


PLUGIN = '''
import numpy as np
from pytest_agent_eval.voice._fixtures import AudioClip
from pytest_agent_eval.models import VoiceSettings


class ToneBackend:
    """A third-party backend: a beep whose pitch is the voice name, in Hz."""

    name = "tone"
    execution = "thread"

    def version(self):
        return "tone 1.0"

    def resolve(self, settings):
        return VoiceSettings(**{**settings.to_dict(), "voice": settings.voice or "440"})

    def synthesize(self, text, settings):
        t = np.arange(8000 * len(text) // 10) / 8000
        return AudioClip(0.3 * np.sin(2 * np.pi * float(settings.voice) * t), 8000)
'''


def test_a_third_party_backend_plugs_in_through_its_entry_point(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "tone_tts.py").write_text(PLUGIN)
    dist = site / "tone_tts-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: tone-tts\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[pytest_agent_eval.tts_backends]\ntone = tone_tts:ToneBackend\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "tone_tts", raising=False)

    assert "tone" in available_backends()
    assert isinstance(get_backend("tone"), TTSBackend)
    (tmp_path / "beep.yaml").write_text(
        textwrap.dedent("""\
            id: beep
            voice: {backend: tone, voice: "880"}
            turns:
              - user: "Beep beep beep beep."
                audio: beep.wav
        """)
    )
    monkeypatch.chdir(tmp_path)
    assert main(["beep.yaml"]) == 0
    assert "synthesized   beep.wav" in capsys.readouterr().out
    assert (tmp_path / "beep.wav.hash").exists()
    assert main(["--check", "--voice", "660", "beep.yaml"]) == 1
    assert "voice changed: 880 -> 660" in capsys.readouterr().out


def test_importing_the_synthesizer_loads_no_engine() -> None:
    import subprocess

    code = (
        "import sys, pytest_agent_eval.synthesize._cli, pytest_agent_eval.voice._fixtures;"
        "heavy = ('numpy', 'soundfile', 'soxr', 'hibari', 'onnxruntime', 'piper',"
        " 'faster_whisper', 'ctranslate2', 'openai');"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
