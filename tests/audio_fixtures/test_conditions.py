"""Audio conditions on real speech: the same seed gives the same bytes, and each condition does
what it says (measured: SNR, band, tempo, packet loss...)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from pytest_agent_eval._conditions import (
    BUILTIN_PRESETS,
    CONDITION_KINDS,
    parse_conditions,
    resolve_condition,
)
from pytest_agent_eval.models import AudioCondition
from pytest_agent_eval.voice._degrade import apply, babble_sources
from pytest_agent_eval.voice._fixtures import AudioClip, resample

from .conftest import tone

pytest.importorskip("pedalboard", reason="needs the conditions extra")


def _sha(clip: AudioClip) -> str:
    return hashlib.sha256(clip.samples.tobytes()).hexdigest()


def _at16k(speech_clip: AudioClip) -> AudioClip:
    return resample(speech_clip, 16000)


def _db(x: float) -> float:
    return 10 * np.log10(x)


def _speech_power(clip: AudioClip) -> float:
    from pytest_agent_eval.voice._fixtures import voiced_frames

    voiced, n = voiced_frames(clip, floor_dbfs=-45.0)
    frames = clip.samples[: len(clip.samples) // n * n].reshape(-1, n)[voiced].astype(np.float64)
    return float(np.mean(frames**2))


EVERY_KIND = [
    [{"noise": {"color": "white", "snr_db": 10}}],
    [{"noise": {"color": "pink", "snr_db": 10}}],
    [{"noise": {"color": "babble", "snr_db": 10}}],
    [{"gain": {"db": -6}}],
    [{"tempo": {"factor": 1.25}}],
    ["telephone"],
    [{"codec": {"format": "mp3"}}],
    [{"codec": {"format": "gsm"}}],
    ["clipping"],
    ["reverb"],
    [{"silence": {"lead_s": 0.5, "trail_s": 0.25}}],
    [{"dropouts": {"rate": 0.1}}],
]


def test_every_kind_is_covered_here() -> None:
    kinds = {next(iter(c)) if isinstance(c, dict) else c for chain in EVERY_KIND for c in chain}
    assert kinds == set(CONDITION_KINDS)


@pytest.mark.parametrize(
    "chain", EVERY_KIND, ids=lambda c: str(c[0]).split("'")[1] if isinstance(c[0], dict) else c[0]
)
def test_the_same_seed_gives_the_same_bytes_and_the_fixture_is_untouched(
    speech_clip: AudioClip, chain: list[object]
) -> None:
    clip = _at16k(speech_clip)
    before = _sha(clip)
    conditions = parse_conditions(chain)
    first = apply(clip, conditions, seed=7)
    second = apply(clip, conditions, seed=7)
    assert _sha(first) == _sha(second)
    assert _sha(first) != before, "a condition that changes nothing would test nothing"
    assert _sha(clip) == before, "apply must not change its input"
    assert first.sample_rate == clip.sample_rate
    assert first.samples.dtype == np.float32 and np.abs(first.samples).max() <= 1.0


@pytest.mark.parametrize("preset", sorted(BUILTIN_PRESETS))
def test_every_preset_is_reproducible(speech_clip: AudioClip, preset: str) -> None:
    clip = _at16k(speech_clip)
    chain = list(BUILTIN_PRESETS[preset])
    assert _sha(apply(clip, chain, 3)) == _sha(apply(clip, chain, 3))


def test_random_conditions_draw_differently_for_another_seed(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    for chain in (["noisy"], ["cafe"], [{"dropouts": {"rate": 0.2}}]):
        conditions = parse_conditions(chain)
        assert _sha(apply(clip, conditions, 1)) != _sha(apply(clip, conditions, 2)), chain
    telephone = parse_conditions(["phone"])
    assert _sha(apply(clip, telephone, 1)) == _sha(apply(clip, telephone, 2))


def test_adding_a_condition_leaves_the_others_draws_alone(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    noise = parse_conditions([{"noise": {"snr_db": 10}}])
    alone = apply(clip, noise, 5)
    with_gain_after = apply(clip, [*noise, *parse_conditions([{"gain": {"db": 0}}])], 5)
    assert _sha(alone) == _sha(with_gain_after)


@pytest.mark.parametrize("color", ["white", "pink", "babble"])
@pytest.mark.parametrize("snr_db", [20.0, 10.0, 5.0])
def test_noise_lands_at_the_asked_snr_against_the_speech(
    speech_clip: AudioClip, color: str, snr_db: float
) -> None:
    clip = _at16k(speech_clip)
    noisy = apply(clip, parse_conditions([{"noise": {"color": color, "snr_db": snr_db}}]), 11)
    # A mix that would clip is scaled down as a whole: undo that, then the rest is noise.
    scale = float(np.dot(noisy.samples, clip.samples) / np.dot(clip.samples, clip.samples))
    noise = noisy.samples / scale - clip.samples
    measured = _db(_speech_power(clip) / float(np.mean(noise.astype(np.float64) ** 2)))
    assert measured == pytest.approx(snr_db, abs=0.5)


def test_pink_noise_falls_about_3_db_per_octave() -> None:
    silence = AudioClip(np.zeros(16000 * 4, dtype=np.float32), 16000)
    pink = apply(silence, parse_conditions([{"noise": {"color": "pink"}}]), 2).samples
    spectrum = np.abs(np.fft.rfft(pink.astype(np.float64))) ** 2
    freqs = np.fft.rfftfreq(len(pink), 1 / 16000)

    def band(low: float, high: float) -> float:
        return float(spectrum[(freqs >= low) & (freqs < high)].sum())

    # 100-200 Hz and 1600-3200 Hz hold the same number of octaves, four octaves apart:
    # equal power per octave would be 0 dB, white noise -12 dB.
    assert _db(band(1600, 3200) / band(100, 200)) == pytest.approx(0.0, abs=2.0)


def test_the_telephone_line_cuts_everything_above_the_voice_band() -> None:
    low, high = tone(1000, rate=16000, amp=0.3), tone(6000, rate=16000, amp=0.3)
    mixed = AudioClip(low.samples + high.samples, 16000)
    phone = apply(mixed, parse_conditions(["telephone"]), 0)
    spectrum = np.abs(np.fft.rfft(phone.samples.astype(np.float64)))
    freqs = np.fft.rfftfreq(len(phone.samples), 1 / 16000)
    at = {f: float(spectrum[np.argmin(np.abs(freqs - f))]) for f in (1000, 6000)}
    assert _db(at[6000] ** 2 / at[1000] ** 2) < -60
    assert len(phone.samples) == len(mixed.samples)


def test_mu_law_is_audible_as_quantization_noise_on_a_quiet_tone() -> None:
    quiet = tone(1000, rate=16000, amp=0.01)
    band_only = apply(quiet, parse_conditions([{"telephone": {"codec": "none"}}]), 0)
    mulaw = apply(quiet, parse_conditions(["telephone"]), 0)
    assert not np.allclose(band_only.samples, mulaw.samples, atol=1e-5)


def test_tempo_changes_the_length_not_the_rate(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    fast = apply(clip, parse_conditions([{"tempo": {"factor": 1.25}}]), 0)
    slow = apply(clip, parse_conditions([{"tempo": {"factor": 0.8}}]), 0)
    assert fast.duration_s == pytest.approx(clip.duration_s / 1.25, rel=0.02)
    assert slow.duration_s == pytest.approx(clip.duration_s / 0.8, rel=0.02)


def test_silence_adds_exact_zeros_around_the_audio(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    padded = apply(clip, parse_conditions([{"silence": {"lead_s": 1.0, "trail_s": 0.5}}]), 0)
    assert len(padded.samples) == len(clip.samples) + 16000 + 8000
    assert not padded.samples[:16000].any() and not padded.samples[-8000:].any()
    assert np.array_equal(padded.samples[16000:-8000], clip.samples)


def test_dropouts_silence_whole_packets_at_about_the_asked_rate() -> None:
    loud = tone(440, rate=16000, seconds=20.0, amp=0.5)
    lost = apply(loud, parse_conditions([{"dropouts": {"rate": 0.2, "packet_ms": 20}}]), 9)
    packets = lost.samples[: len(lost.samples) // 320 * 320].reshape(-1, 320)
    silent = ~packets.any(axis=1)
    assert silent.mean() == pytest.approx(0.2, abs=0.04)
    # Every other packet is untouched: the loss is whole packets, nothing in between.
    original = loud.samples[: len(lost.samples) // 320 * 320].reshape(-1, 320)
    assert np.array_equal(packets[~silent], original[~silent])


def test_gain_and_clipping_change_the_level() -> None:
    quiet = tone(440, rate=16000, amp=0.1)
    louder = apply(quiet, parse_conditions([{"gain": {"db": 6.0206}}]), 0)
    assert np.abs(louder.samples).max() == pytest.approx(0.2, rel=1e-3)
    for amp in (0.9, 0.1):  # under the clip's own peak, whatever its level
        loud = tone(440, rate=16000, amp=amp)
        clipped = apply(loud, parse_conditions([{"clipping": {"threshold_db": -12}}]), 0)
        assert np.abs(clipped.samples).max() == pytest.approx(amp * 10 ** (-12 / 20), rel=0.01)


def test_codecs_keep_the_length_and_gsm_narrows_the_band(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    for fmt in ("mp3", "gsm"):
        coded = apply(clip, parse_conditions([{"codec": {"format": fmt}}]), 0)
        assert len(coded.samples) == len(clip.samples)
    high = tone(6000, rate=16000, amp=0.3)
    gsm = apply(high, parse_conditions([{"codec": {"format": "gsm"}}]), 0)
    # GSM works at 8 kHz: a 6 kHz tone comes out more than 20 dB down.
    assert _db(float(np.mean(gsm.samples**2)) / float(np.mean(high.samples**2))) < -20


def test_reverb_leaves_a_tail_after_the_speech(speech_clip: AudioClip) -> None:
    clip = _at16k(speech_clip)
    wet = apply(clip, parse_conditions([{"reverb": {"room_size": 0.9, "wet": 0.6}}]), 0)
    assert wet.duration_s == pytest.approx(clip.duration_s + 0.5, abs=0.01)
    tail = wet.samples[len(clip.samples) :]
    assert float(np.sqrt(np.mean(tail**2))) > 1e-4


def test_babble_is_built_from_other_fixtures_or_the_clip_reversed(
    speech_clip: AudioClip, tmp_path
) -> None:
    import soundfile

    clip = _at16k(speech_clip)
    chain = parse_conditions([{"noise": {"color": "babble", "snr_db": 0, "talkers": 2}}])
    alone = apply(clip, chain, 4)
    others = [tone(300, rate=22050), tone(500, rate=8000)]
    with_others = apply(clip, chain, 4, babble=others)
    assert _sha(alone) != _sha(with_others)
    # The fixture's neighbours, by name, the fixture itself left out.
    for name, source in (("b.wav", others[0]), ("c.wav", others[1]), ("a.wav", clip)):
        soundfile.write(str(tmp_path / name), source.samples, source.sample_rate)
    (tmp_path / "notes.txt").write_text("not audio")
    (tmp_path / "broken.wav").write_bytes(b"RIFF nonsense")
    sources = babble_sources(tmp_path / "a.wav")
    assert [s.sample_rate for s in sources] == [22050, 8000]


def test_bad_conditions_are_refused_with_the_fix() -> None:
    clip = tone(440, rate=16000)
    with pytest.raises(ValueError, match="unknown audio condition 'nois'.*Did you mean 'noise'"):
        apply(clip, [AudioCondition("nois")], 0)
    with pytest.raises(ValueError, match=r"noise.snr_db must be at least -20"):
        apply(clip, [AudioCondition("noise", {"snr_db": -90})], 0)
    with pytest.raises(ValueError, match="seed"):
        apply(clip, [AudioCondition("gain", {"db": 1})], -1)
    assert resolve_condition(AudioCondition("noise")).params == {
        "snr_db": 20,
        "color": "white",
        "talkers": 4,
    }
