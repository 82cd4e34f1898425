from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.voice._fixtures import (
    RECORDING_FIX,
    AudioClip,
    Sidecar,
    validate_fixture,
    write_sidecar,
    write_wav_atomic,
)

from .conftest import tone

FIX = "python -m pytest_agent_eval.synthesize_audio"
RECORDING = f"It is a recording (no sidecar, no provenance): {RECORDING_FIX}"
"""What a broken recording's message ends with: re-record it (the synthesizer never will)."""


def test_a_good_fixture_comes_back_as_a_clip(tmp_path: Path) -> None:
    write_wav_atomic(tmp_path / "ok.wav", tone(300.0, rate=16000, seconds=0.3, amp=0.1))
    clip = validate_fixture(tmp_path / "ok.wav")
    assert clip.sample_rate == 16000
    assert clip.duration_s == pytest.approx(0.3)


def test_missing_fixture_names_file_and_exact_command(tmp_path: Path) -> None:
    wav = tmp_path / "booking_t1.wav"
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav, yaml_path="tests/evals/booking.yaml")
    assert str(info.value) == (
        f"audio fixture {wav} does not exist. Create it with: {FIX} tests/evals/booking.yaml"
    )


def test_unreadable_recording_says_it_is_not_audio_and_to_re_record_it(tmp_path: Path) -> None:
    wav = tmp_path / "notes.wav"
    wav.write_text("these are not samples\n")
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav)
    message = str(info.value)
    assert message.startswith(f"audio fixture {wav} is not readable audio (")
    assert message.endswith(RECORDING)
    assert "--force" not in message  # --force never touches a recording
    assert info.value.__cause__ is None and info.value.__suppress_context__  # one message


def test_a_broken_synthesized_fixture_gets_the_synthesize_command(tmp_path: Path) -> None:
    wav = tmp_path / "ours.wav"
    wav.write_text("these are not samples\n")
    write_sidecar(wav, Sidecar(text="Hello.", inputs={"backend": "hibari"}))
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav, yaml_path="a.yaml")
    assert str(info.value).endswith(f"Re-create it with: {FIX} --force a.yaml")


def test_truncated_header_is_unreadable(tmp_path: Path) -> None:
    wav = tmp_path / "cut.wav"
    write_wav_atomic(wav, tone(300.0, rate=16000, seconds=0.3))
    wav.write_bytes(wav.read_bytes()[:20])
    with pytest.raises(AudioFixtureError, match="is not readable audio"):
        validate_fixture(wav)


def test_empty_fixture(tmp_path: Path) -> None:
    wav = tmp_path / "empty.wav"
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav, yaml_path="a.yaml")
    assert str(info.value) == (
        f"audio fixture {wav} is empty (a valid WAV header but no samples). {RECORDING}"
    )


def test_silent_fixture(tmp_path: Path) -> None:
    wav = tmp_path / "silent.wav"
    # Faint hiss at about -66 dBFS: samples, but nothing a recognizer could hear.
    rng = np.random.default_rng(0)
    write_wav_atomic(wav, AudioClip(rng.normal(0, 0.0005, 16000).astype(np.float32), 16000))
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav)
    assert str(info.value) == (
        f"audio fixture {wav} is silent: no 20 ms frame is louder than -50 dBFS "
        f"(1.00 s of silence). {RECORDING}"
    )


def test_a_folder_is_not_a_fixture(tmp_path: Path) -> None:
    with pytest.raises(AudioFixtureError, match="is not a file"):
        validate_fixture(tmp_path)


def test_a_fixture_over_the_cap_is_refused_from_its_header(tmp_path: Path) -> None:
    """An hour-long WAV is refused before a sample is decoded (the header says how long)."""
    wav = tmp_path / "hour.wav"
    rate, seconds = 8000, 3600
    with wave.open(str(wav), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        chunk = (np.sin(np.arange(rate) / 3) * 8000).astype("<i2").tobytes()
        for _ in range(seconds):
            w.writeframes(chunk)
    with pytest.raises(AudioFixtureError) as info:
        validate_fixture(wav)
    assert str(info.value) == (
        f"audio fixture {wav} is 3600.0 s long, over the 120 s limit for a fixture: use a "
        "shorter clip, or raise max_fixture_s in [tool.agent_eval]"
    )
    assert validate_fixture(wav, max_duration_s=4000).duration_s == pytest.approx(3600)
