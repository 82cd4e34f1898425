"""``lines:`` and ``levels_db:`` of a turn-taking file: each stimulus heard over each line at
each caller level, on the pack's real rendered audio (no agent runs here)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_agent_eval._turn_gate._run import heard_over_lines, prepare_stimuli
from pytest_agent_eval._turn_taking._pack import build_pack
from pytest_agent_eval._turn_taking._stimulus import Category
from pytest_agent_eval.voice._clip import read_wav


def _band_share(samples: np.ndarray, rate: int, low: float) -> float:
    """The share of the signal's energy above ``low`` Hz."""
    power = np.abs(np.fft.rfft(samples)) ** 2
    freqs = np.fft.rfftfreq(len(samples), 1 / rate)
    return float(power[freqs > low].sum() / power.sum())


def test_each_stimulus_is_heard_over_each_line_at_each_level(tmp_path: Path) -> None:
    pause = next(s for s in build_pack(0) if s.category is Category.PAUSE)
    [clean] = prepare_stimuli(tmp_path, [(0, pause)])
    heard = heard_over_lines(tmp_path, [clean], ("clean", "phone"), (0.0, -12.0))
    assert [h.stimulus.id for h in heard] == [
        pause.id,
        f"{pause.id}@-12dB",
        f"{pause.id}@phone",
        f"{pause.id}@phone,-12dB",
    ]
    # The clean line at the pack's level is the clip itself; the others are what the agent
    # hears, written beside it for the report to play.
    assert heard[0] is clean
    for h in heard[1:]:
        assert h.wav == tmp_path / "seed-0" / "lines" / f"{h.stimulus.id}.wav"
        assert h.wav.is_file() and read_wav(h.wav).sample_rate == clean.clip.sample_rate
        # Same stimulus otherwise: its category, expectation and marks hold.
        assert h.stimulus.category is pause.category and h.events == clean.events
        assert abs(h.clip.duration_s - clean.clip.duration_s) < 0.01
    quieter = heard[1].clip.samples
    rms = float(np.sqrt(np.mean(quieter**2)) / np.sqrt(np.mean(clean.clip.samples**2)))
    assert abs(rms - 10 ** (-12 / 20)) < 0.01
    # A phone line keeps next to nothing above its band; the clean clip has plenty there.
    rate = clean.clip.sample_rate
    assert _band_share(clean.clip.samples, rate, 4000) > 0.003
    assert _band_share(heard[2].clip.samples, rate, 4000) < 0.1 * _band_share(
        clean.clip.samples, rate, 4000
    )


def test_a_lines_noise_is_the_same_every_run_and_its_own_per_level(tmp_path: Path) -> None:
    pause = next(s for s in build_pack(0) if s.category is Category.PAUSE)
    played = prepare_stimuli(tmp_path, [(0, pause)])
    first = heard_over_lines(tmp_path, played, ("noisy",), (0.0, -6.0))
    again = heard_over_lines(tmp_path, played, ("noisy",), (0.0, -6.0))
    assert all(
        np.array_equal(a.clip.samples, b.clip.samples) for a, b in zip(first, again, strict=True)
    )
    # The -6 dB play is not the 0 dB one scaled: its noise is drawn afresh.
    scaled = first[0].clip.samples * 10 ** (-6 / 20)
    assert not np.allclose(first[1].clip.samples, scaled, atol=1e-4)
