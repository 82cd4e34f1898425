"""Audio conditions applied to a clip: noise at a target SNR, a phone line, codecs, reverb...

`apply` is one pure function: the same clip, conditions and seed give the same samples, byte
for byte, and the fixture on disk is never touched. The DSP comes from libraries made for it:
pedalboard (the ``conditions`` extra) for filters, codecs, reverb, clipping and time
stretching, soxr for resampling and libsndfile (soundfile) for G.711 mu-law. Written here is
only what no library does: mixing noise at a signal-to-noise ratio measured on the speech,
white, pink and babble noise, packet-loss dropouts, silence, and gain.

The kinds and their parameters are defined in `pytest_agent_eval._conditions`.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

from .._conditions import resolve_condition
from ..errors import AudioFixtureError, require_extra
from ..models import AudioCondition
from ._clip import AudioClip, _numpy, resample
from ._stats import voiced_frames

if TYPE_CHECKING:
    import numpy as np

    _Array = np.ndarray

__all__ = ["ConditionLike", "apply", "babble_sources"]

_HEADROOM = 0.999
"""Peak a noisy mix is scaled down to when it would clip (scaling keeps the SNR)."""
_SPEECH_FLOOR_DBFS = -45.0
"""Frames louder than this count as speech when measuring the speech level for an SNR."""
_REVERB_TAIL_S = 0.5
"""Silence appended before reverberating, so the tail is heard rather than cut off."""


class ConditionLike(Protocol):
    """What `apply` needs of a condition: a kind and its parameters (`AudioCondition`)."""

    @property
    def kind(self) -> str: ...

    @property
    def params(self) -> Mapping[str, Any]: ...


def apply(
    clip: AudioClip,
    conditions: Sequence[ConditionLike],
    seed: int,
    *,
    babble: Sequence[AudioClip] = (),
) -> AudioClip:
    """``clip`` after every condition, in order, at the clip's own sample rate.

    Args:
        clip: The clean audio.
        conditions: What happens to it (missing parameters take their defaults).
        seed: Seed of the random parts (noise, which sources babble, dropouts). Each condition
            draws from its own stream, so adding one leaves the others' draws as they were.
        babble: Speech to build babble noise from (other fixtures of the suite, see
            `babble_sources`); without any, babble is the clip itself played backwards.

    Returns:
        A new clip; ``clip`` is not changed. No condition returns the same clip.

    Raises:
        ValueError: An unknown kind or a bad parameter.
        MissingExtraError: pedalboard is needed and not installed.
    """
    np = _numpy()
    if seed < 0:
        raise ValueError(f"the seed of audio conditions must be >= 0, got {seed}")
    out = AudioClip(clip.samples.copy(), clip.sample_rate)
    for index, condition in enumerate(conditions):
        resolved = resolve_condition(AudioCondition(condition.kind, dict(condition.params)))
        rng = np.random.default_rng([seed, index])
        out = _APPLY[resolved.kind](out, resolved.params, rng, babble)
        samples = np.clip(np.nan_to_num(out.samples), -1.0, 1.0).astype(np.float32)
        out = AudioClip(samples, out.sample_rate)
    return out


def babble_sources(fixture: str | os.PathLike[str], *, limit: int = 8) -> list[AudioClip]:
    """Speech to build babble from for ``fixture``: the other WAV fixtures in its folder, by
    name, at most ``limit`` (so the choice depends on the files, never on the order a folder
    lists them in). Files that cannot be read are left out."""
    from ._clip import read_wav

    path = Path(fixture)
    try:
        others = sorted(p for p in path.parent.glob("*.wav") if p.name != path.name)
    except OSError:
        return []
    clips: list[AudioClip] = []
    for other in others[:limit]:
        try:
            clips.append(read_wav(other))
        except AudioFixtureError:  # a broken neighbour is not this fixture's problem
            continue
    return clips


# -- the conditions ---------------------------------------------------------------------------


def _pedalboard() -> Any:
    require_extra("pedalboard", extra="conditions", feature="Audio conditions")
    import pedalboard

    return pedalboard


def _process(plugin: Any, clip: AudioClip) -> np.ndarray:
    np = _numpy()
    processed = plugin(clip.samples.reshape(1, -1), clip.sample_rate)
    return cast("_Array", np.asarray(processed, dtype=np.float32).reshape(-1))


def _speech_power(clip: AudioClip) -> float:
    np = _numpy()
    x = clip.samples.astype(np.float64)
    voiced, n = voiced_frames(clip, floor_dbfs=_SPEECH_FLOOR_DBFS)
    if voiced.size and len(x) >= n:
        frames = x[: len(x) // n * n].reshape(-1, n)[voiced]
        power = float(np.mean(frames**2))
    else:
        power = float(np.mean(x**2)) if len(x) else 0.0
    return power if power > 0 else 10 ** (-20 / 10)  # a silent clip: as if speech at -20 dBFS


def _unit(x: np.ndarray) -> np.ndarray:
    np = _numpy()
    rms = float(np.sqrt(np.mean(x.astype(np.float64) ** 2))) if len(x) else 0.0
    return x / rms if rms > 0 else x


def _pink(n: int, rng: np.random.Generator) -> np.ndarray:
    """1/f noise: white noise shaped in the frequency domain (power falls 3 dB per octave)."""
    np = _numpy()
    spectrum = np.fft.rfft(rng.standard_normal(n))
    freqs = np.arange(len(spectrum), dtype=np.float64)
    freqs[0] = 1.0
    return cast("_Array", np.fft.irfft(spectrum / np.sqrt(freqs), n))


def _babble(
    clip: AudioClip, talkers: int, rng: np.random.Generator, sources: Sequence[AudioClip]
) -> np.ndarray:
    """Several voices at once: sources (or the clip reversed) at random offsets, looped."""
    np = _numpy()
    n = len(clip.samples)
    pool = [resample(s, clip.sample_rate).samples for s in sources if len(s.samples)]
    if not pool:
        pool = [clip.samples[::-1].copy()]
    mix = np.zeros(n, dtype=np.float64)
    for _ in range(talkers):
        voice = pool[int(rng.integers(len(pool)))]
        reps = -(-(n + len(voice)) // len(voice))
        looped = np.tile(voice, reps)
        start = int(rng.integers(len(voice)))
        mix += _unit(looped[start : start + n].astype(np.float64))
    return cast("_Array", mix)


def _noise(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    np = _numpy()
    n = len(clip.samples)
    if p["color"] == "white":
        noise = rng.standard_normal(n)
    elif p["color"] == "pink":
        noise = _pink(n, rng)
    else:
        noise = _babble(clip, int(p["talkers"]), rng, sources)
    noise = _unit(noise.astype(np.float64))
    gain = np.sqrt(_speech_power(clip) / 10 ** (float(p["snr_db"]) / 10))
    mix = clip.samples.astype(np.float64) + gain * noise
    peak = float(np.max(np.abs(mix))) if n else 0.0
    if peak > _HEADROOM:
        mix *= _HEADROOM / peak
    return AudioClip(mix.astype(np.float32), clip.sample_rate)


def _gain(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    return AudioClip(clip.samples * 10 ** (float(p["db"]) / 20), clip.sample_rate)


def _tempo(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    pb = _pedalboard()
    stretched = pb.time_stretch(
        clip.samples.reshape(1, -1), float(clip.sample_rate), stretch_factor=float(p["factor"])
    )
    return AudioClip(stretched.reshape(-1), clip.sample_rate)


def _mulaw(clip: AudioClip) -> AudioClip:
    """Through G.711 mu-law and back (libsndfile's codec), at the clip's rate."""
    import soundfile

    np = _numpy()
    buffer = io.BytesIO()
    soundfile.write(buffer, clip.samples, clip.sample_rate, format="WAV", subtype="ULAW")
    buffer.seek(0)
    decoded, _ = soundfile.read(buffer, dtype="float32")
    return AudioClip(np.asarray(decoded, dtype=np.float32).reshape(-1), clip.sample_rate)


def _telephone(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    pb = _pedalboard()
    band = pb.Pedalboard(
        [
            pb.HighpassFilter(cutoff_frequency_hz=float(p["low_hz"])),
            pb.LowpassFilter(cutoff_frequency_hz=float(p["high_hz"])),
        ]
    )
    narrow = resample(AudioClip(_process(band, clip), clip.sample_rate), 8000)
    if p["codec"] == "mulaw":
        narrow = _mulaw(narrow)
    return resample(narrow, clip.sample_rate)


def _codec(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    pb = _pedalboard()
    if p["format"] == "gsm":
        plugin = pb.GSMFullRateCompressor()
    else:
        plugin = pb.MP3Compressor(vbr_quality=float(p["quality"]))
    return AudioClip(_process(plugin, clip), clip.sample_rate)


def _clipping(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    np = _numpy()
    pb = _pedalboard()
    peak = float(np.max(np.abs(clip.samples))) if len(clip.samples) else 0.0
    if peak <= 0.0:
        return AudioClip(clip.samples.copy(), clip.sample_rate)
    level_db = 20 * np.log10(peak) + float(p["threshold_db"])
    return AudioClip(_process(pb.Clipping(threshold_db=level_db), clip), clip.sample_rate)


def _reverb(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    np = _numpy()
    pb = _pedalboard()
    wet = float(p["wet"])
    plugin = pb.Reverb(
        room_size=float(p["room_size"]),
        damping=float(p["damping"]),
        wet_level=wet,
        dry_level=1.0 - wet,
    )
    tail = np.zeros(round(_REVERB_TAIL_S * clip.sample_rate), dtype=np.float32)
    padded = AudioClip(np.concatenate([clip.samples, tail]), clip.sample_rate)
    return AudioClip(_process(plugin, padded), clip.sample_rate)


def _silence(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    np = _numpy()
    rate = clip.sample_rate
    lead = np.zeros(round(float(p["lead_s"]) * rate), dtype=np.float32)
    trail = np.zeros(round(float(p["trail_s"]) * rate), dtype=np.float32)
    return AudioClip(np.concatenate([lead, clip.samples, trail]), rate)


def _dropouts(
    clip: AudioClip, p: Mapping[str, Any], rng: np.random.Generator, sources: Sequence[AudioClip]
) -> AudioClip:
    np = _numpy()
    x = clip.samples.copy()
    packet = max(1, round(float(p["packet_ms"]) * clip.sample_rate / 1000))
    packets = -(-len(x) // packet)
    lost = np.flatnonzero(rng.random(packets) < float(p["rate"]))
    for index in lost:
        x[index * packet : (index + 1) * packet] = 0.0
    return AudioClip(x, clip.sample_rate)


_Apply = Callable[
    [AudioClip, Mapping[str, Any], "np.random.Generator", Sequence[AudioClip]], AudioClip
]

_APPLY: dict[str, _Apply] = {
    "noise": _noise,
    "gain": _gain,
    "tempo": _tempo,
    "telephone": _telephone,
    "codec": _codec,
    "clipping": _clipping,
    "reverb": _reverb,
    "silence": _silence,
    "dropouts": _dropouts,
}
