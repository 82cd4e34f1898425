from __future__ import annotations

import numpy as np
import pytest

from pytest_agent_eval.voice._fixtures import (
    AudioClip,
    PostProcess,
    audio_stats,
    postprocess,
    resample,
)

from .conftest import tone


def padded_tone(lead_s: float, trail_s: float, amp: float) -> AudioClip:
    body = tone(500.0, rate=16000, seconds=1.0, amp=amp).samples
    return AudioClip(
        np.concatenate(
            [np.zeros(int(lead_s * 16000)), body, np.zeros(int(trail_s * 16000))]
        ).astype(np.float32),
        16000,
    )


@pytest.mark.parametrize(("lead", "trail", "amp"), [(0.8, 0.05, 0.02), (0.0, 1.5, 0.9)])
def test_silence_is_trimmed_to_the_pad_and_level_normalized(
    lead: float, trail: float, amp: float
) -> None:
    params = PostProcess()
    out = postprocess(padded_tone(lead, trail, amp), params)
    stats = audio_stats(out)
    # Speech (1 s) plus exactly one pad on each side, whatever the engine left there.
    assert out.duration_s == pytest.approx(1.0 + 2 * params.pad_s, abs=0.011)
    assert stats.lead_silence_s == pytest.approx(params.pad_s, abs=0.021)
    assert stats.trail_silence_s == pytest.approx(params.pad_s, abs=0.021)
    voiced = out.samples[int(params.pad_s * 16000) + 200 : -int(params.pad_s * 16000) - 200]
    rms_db = 20 * np.log10(np.sqrt(np.mean(voiced.astype(np.float64) ** 2)))
    assert rms_db == pytest.approx(params.target_rms_dbfs, abs=0.2)


def test_normalization_never_pushes_peaks_past_the_ceiling() -> None:
    # A click train: loud peaks, little energy. Reaching -20 dBFS RMS would clip.
    x = np.zeros(16000, np.float32)
    x[::800] = 0.5
    out = postprocess(AudioClip(x, 16000), PostProcess(pad_s=0.0))
    assert audio_stats(out).peak_dbfs == pytest.approx(-1.0, abs=0.01)


def test_hibari_speech_ends_up_alike(speech_clip: AudioClip) -> None:
    out = postprocess(resample(speech_clip, 16000))
    stats = audio_stats(out)
    assert stats.lead_silence_s <= 0.3
    assert stats.trail_silence_s <= 0.3
    assert stats.peak_dbfs <= -1.0 + 1e-3
    assert out.duration_s < speech_clip.duration_s


def test_silence_stays_silence() -> None:
    clip = AudioClip(np.zeros(1600, np.float32), 16000)
    assert postprocess(clip).samples.tolist() == clip.samples.tolist()
