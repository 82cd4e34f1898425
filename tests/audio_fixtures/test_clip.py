from __future__ import annotations

import wave
from pathlib import Path

import numpy as np
import pytest
import soundfile

from pytest_agent_eval.voice._fixtures import (
    AudioClip,
    read_wav,
    resample,
    to_pcm16_bytes,
    write_wav_atomic,
)

from .conftest import tone


def dominant_hz(clip: AudioClip) -> float:
    spectrum = np.abs(np.fft.rfft(clip.samples * np.hanning(len(clip.samples))))
    return float(np.fft.rfftfreq(len(clip.samples), 1 / clip.sample_rate)[spectrum.argmax()])


def test_resample_keeps_a_tone_at_its_frequency() -> None:
    out = resample(tone(1000.0, rate=24000), 16000)
    assert out.sample_rate == 16000
    assert len(out.samples) == 16000
    assert dominant_hz(out) == pytest.approx(1000.0, abs=2.0)
    # Amplitude survives too (0.5 peak -> 0.354 RMS).
    mid = out.samples[2000:-2000]
    assert float(np.sqrt(np.mean(mid**2))) == pytest.approx(0.5 / np.sqrt(2), rel=0.01)


def test_resample_removes_what_the_new_rate_cannot_carry() -> None:
    # 10 kHz is above the 8 kHz Nyquist limit of 16 kHz audio: a real resampler filters it out
    # instead of folding it down to 6 kHz.
    out = resample(tone(10000.0, rate=24000), 16000)
    assert float(np.sqrt(np.mean(out.samples[2000:-2000] ** 2))) < 1e-3


def test_resample_to_the_same_rate_is_the_same_clip() -> None:
    clip = tone(440.0, rate=16000)
    assert resample(clip, 16000) is clip


def test_write_then_read_round_trips_as_16_bit_mono(tmp_path: Path) -> None:
    clip = tone(440.0, rate=16000, seconds=0.5)
    path = tmp_path / "sub" / "tone.wav"
    size = write_wav_atomic(path, clip)
    assert size == path.stat().st_size == 44 + 2 * 8000
    with wave.open(str(path)) as w:
        assert (w.getnchannels(), w.getsampwidth(), w.getframerate()) == (1, 2, 16000)
        assert w.readframes(w.getnframes()) == to_pcm16_bytes(clip)
    back = read_wav(path)
    assert back.sample_rate == 16000
    assert np.max(np.abs(back.samples - clip.samples)) < 1 / 32767 + 1e-6
    assert [p.name for p in path.parent.iterdir()] == ["tone.wav"]  # no temp file left


def test_write_replaces_atomically_and_cleans_up_on_failure(tmp_path: Path) -> None:
    path = tmp_path / "a.wav"
    write_wav_atomic(path, tone(440.0, rate=16000, seconds=0.1))
    before = path.read_bytes()

    bad = AudioClip(np.zeros(10, np.float32), 16000)
    object.__setattr__(bad, "sample_rate", -1)  # wave refuses a negative rate mid-write
    with pytest.raises(Exception):  # noqa: B017 - whatever wave raises, the old file must survive
        write_wav_atomic(path, bad)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.wav"]


def test_read_wav_mixes_channels_down_to_mono(tmp_path: Path) -> None:
    left = tone(440.0, rate=16000, seconds=0.2).samples
    stereo = np.stack([left, np.zeros_like(left)], axis=1)
    soundfile.write(str(tmp_path / "st.wav"), stereo, 16000, subtype="PCM_16")
    clip = read_wav(tmp_path / "st.wav")
    assert clip.samples.ndim == 1
    assert np.allclose(clip.samples, left / 2, atol=2 / 32767)


def test_pcm16_clips_out_of_range_samples() -> None:
    data = to_pcm16_bytes(AudioClip(np.array([2.0, -2.0, 0.0], np.float32), 8000))
    assert np.frombuffer(data, "<i2").tolist() == [32767, -32767, 0]


def test_clip_refuses_multichannel_samples() -> None:
    with pytest.raises(ValueError, match="mono"):
        AudioClip(np.zeros((10, 2), np.float32), 16000)
