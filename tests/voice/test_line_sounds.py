"""The line's sounds a far end plays as audio (`voice._line_sounds`): each at its frequencies
and with its cadence, measured on the samples (the loudest bins of a spectrum, the frames with
tone in them), the same samples on every call, and still there after a phone line."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_agent_eval.models import AudioCondition
from pytest_agent_eval.voice._clip import AudioClip
from pytest_agent_eval.voice._degrade import apply
from pytest_agent_eval.voice._line_sounds import beep, busy_tone, hold_music, ringback


def peaks(clip: AudioClip, count: int) -> list[float]:
    """The ``count`` loudest frequencies of ``clip``, in Hz, each at least 20 Hz apart."""
    spectrum = np.abs(np.fft.rfft(clip.samples * np.hanning(len(clip.samples))))
    freqs = np.fft.rfftfreq(len(clip.samples), 1 / clip.sample_rate)
    found: list[float] = []
    for index in np.argsort(spectrum)[::-1]:
        if all(abs(freqs[index] - f) > 20 for f in found):
            found.append(float(freqs[index]))
        if len(found) == count:
            break
    return sorted(found)


def tone_on(clip: AudioClip, frame_s: float = 0.05) -> list[bool]:
    """Per frame of ``frame_s``: is there tone in it."""
    n = round(clip.sample_rate * frame_s)
    frames = clip.samples[: len(clip.samples) // n * n].reshape(-1, n)
    return [bool(rms > 0.01) for rms in np.sqrt((frames**2).mean(axis=1))]


def test_the_beep_is_one_khz_for_four_tenths_of_a_second() -> None:
    clip = beep()
    assert clip.duration_s == pytest.approx(0.4)
    assert peaks(clip, 1) == [pytest.approx(1000, abs=5)]
    assert float(np.abs(clip.samples).max()) == pytest.approx(10 ** (-10 / 20), rel=0.01)


@pytest.mark.parametrize(
    ("make", "freqs", "cadence"),
    [(ringback, (440, 480), (2.0, 4.0)), (busy_tone, (480, 620), (0.5, 0.5))],
)
def test_ringback_and_busy_have_their_frequencies_and_cadence(
    make: object, freqs: tuple[int, int], cadence: tuple[float, float]
) -> None:
    clip = make(cycles=2)  # type: ignore[operator]
    on, off = cadence
    assert clip.duration_s == pytest.approx(2 * (on + off))
    assert peaks(clip, 2) == [pytest.approx(f, abs=5) for f in freqs]
    frames = tone_on(clip)
    per_on, per_cycle = round(on / 0.05), round((on + off) / 0.05)
    expected = ([True] * per_on + [False] * (per_cycle - per_on)) * 2
    assert frames == expected


def test_hold_music_is_a_tune_the_same_every_time() -> None:
    clip = hold_music(seconds=3.0)
    assert clip.duration_s == pytest.approx(3.0)
    assert np.array_equal(clip.samples, hold_music(seconds=3.0).samples)
    # A tune, not one tone: the first and the third note are different pitches.
    quarter = round(clip.sample_rate * 0.25)
    first = AudioClip(clip.samples[:quarter], clip.sample_rate)
    third = AudioClip(clip.samples[2 * quarter : 3 * quarter], clip.sample_rate)
    assert peaks(first, 1) != peaks(third, 1)


def test_the_tones_survive_a_phone_line() -> None:
    line = [AudioCondition("telephone", {})]
    assert peaks(apply(beep(), line, seed=1), 1) == [pytest.approx(1000, abs=10)]
    assert peaks(apply(busy_tone(cycles=1), line, seed=1), 2) == [
        pytest.approx(480, abs=10),
        pytest.approx(620, abs=10),
    ]
