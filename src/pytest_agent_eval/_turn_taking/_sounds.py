"""Procedural sounds for turn-taking stimuli: a cough, a click, a door, a laugh, typing, and
background babble, café and traffic, made offline from a seed.

Nothing is downloaded and no recording ships: each sound is seeded noise shaped in the
frequency domain (numpy's FFT) and given an envelope, which is enough for what a VAD and a turn
detector react to (energy, onset, spectrum), not to fool a listener. The same kind, seed and
sample rate give the same samples on the same numpy; `SOUNDS_VERSION` is recorded with every
stimulus so a change here shows in its provenance.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable
from typing import Any

from ..voice._clip import AudioClip, _numpy
from ..voice._speech import NOISE_KINDS

__all__ = ["BACKGROUND_KINDS", "SOUNDS_VERSION", "make_sound", "sound_seed"]

SOUNDS_VERSION = 1
"""Bumped whenever a sound's recipe changes."""

BACKGROUND_KINDS = frozenset({"babble", "cafe", "traffic", "keyboard"})
"""Sounds that last (seconds of ambience); the others are short events."""

_LEVEL_DBFS = {
    "babble": -32.0,
    "cafe": -34.0,
    "traffic": -30.0,
    "keyboard": -36.0,
    "cough": -20.0,
    "click": -24.0,
    "door": -22.0,
    "laugh": -24.0,
}
"""RMS level of each sound's active part: events about as loud as speech (-20 dBFS), the
ambience well under it."""


def sound_seed(seed: int, *labels: object) -> int:
    """A seed for one sound of a stimulus, from the stimulus seed and labels (kind, index):
    stable across processes and Python versions (crc32, not ``hash``)."""
    text = ":".join(str(x) for x in (seed, *labels))
    return zlib.crc32(text.encode("utf-8"))


def _band(np: Any, rng: Any, n: int, rate: int, lo: float, hi: float, tilt: float) -> Any:
    """``n`` samples of noise limited to ``lo``-``hi`` Hz with a spectral tilt (0 white, 1 pink,
    2 brown), unit RMS."""
    white = rng.standard_normal(n)
    spectrum = np.fft.rfft(white)
    freqs = np.fft.rfftfreq(n, 1.0 / rate)
    gain = np.where((freqs >= lo) & (freqs <= hi), 1.0, 0.0)
    gain[1:] /= freqs[1:] ** (tilt / 2)
    gain[0] = 0.0
    shaped = np.fft.irfft(spectrum * gain, n)
    rms = float(np.sqrt(np.mean(shaped**2))) or 1.0
    return shaped / rms


def _decay(np: Any, n: int, rate: int, tau_s: float, attack_s: float = 0.003) -> Any:
    t = np.arange(n) / rate
    attack = np.clip(t / max(attack_s, 1e-6), 0.0, 1.0)
    return attack * np.exp(-t / tau_s)


def _place(np: Any, out: Any, piece: Any, at: int) -> None:
    end = min(len(out), at + len(piece))
    if end > at:
        out[at:end] += piece[: end - at]


def _cough(np: Any, rng: Any, rate: int) -> Any:
    out = np.zeros(int(0.9 * rate))
    at = 0
    for _ in range(int(rng.integers(1, 3)) + 1):
        n = int(rng.uniform(0.14, 0.24) * rate)
        burst = _band(np, rng, n, rate, 250.0, 3500.0, 0.6) * _decay(np, n, rate, 0.06, 0.008)
        _place(np, out, burst, at)
        at += n + int(rng.uniform(0.05, 0.12) * rate)
    return out[: max(at, 1)]


def _click(np: Any, rng: Any, rate: int) -> Any:
    n = int(0.04 * rate)
    return _band(np, rng, n, rate, 1500.0, rate / 2, 0.0) * _decay(np, n, rate, 0.004, 0.0005)


def _door(np: Any, rng: Any, rate: int) -> Any:
    n = int(0.7 * rate)
    t = np.arange(n) / rate
    thud = sum(np.sin(2 * np.pi * f * t + rng.uniform(0, 6.28)) for f in (55.0, 82.0, 121.0))
    body = (thud + 0.5 * _band(np, rng, n, rate, 40.0, 600.0, 1.0)) * _decay(np, n, rate, 0.12)
    latch_at = int(rng.uniform(0.05, 0.1) * rate)
    _place(np, body, 0.6 * _click(np, rng, rate), latch_at)
    return body


def _laugh(np: Any, rng: Any, rate: int) -> Any:
    syllables = int(rng.integers(4, 7))
    out = np.zeros(int((0.2 * syllables + 0.1) * rate))
    f0 = rng.uniform(180.0, 260.0)
    at = 0
    for i in range(syllables):
        n = int(rng.uniform(0.09, 0.14) * rate)
        t = np.arange(n) / rate
        pitch = f0 * (1.0 - 0.03 * i)
        voiced = sum(np.sin(2 * np.pi * k * pitch * t) / k for k in range(1, 6))
        breath = 0.4 * _band(np, rng, n, rate, 800.0, 4000.0, 0.0)
        envelope = np.sin(np.pi * np.arange(n) / n) ** 2
        _place(np, out, (voiced + breath) * envelope, at)
        at += n + int(rng.uniform(0.05, 0.09) * rate)
    return out[:at]


def _keyboard(np: Any, rng: Any, rate: int) -> Any:
    out = np.zeros(int(2.5 * rate))
    at = int(rng.uniform(0.0, 0.1) * rate)
    while at < len(out):
        _place(np, out, rng.uniform(0.5, 1.0) * _click(np, rng, rate), at)
        at += int(rng.uniform(0.06, 0.25) * rate)
    return out


def _talkers(np: Any, rng: Any, rate: int, n: int, count: int) -> Any:
    """``count`` speech-like streams: speech-band noise with syllable-rate envelopes."""
    out = np.zeros(n)
    for _ in range(count):
        carrier = _band(np, rng, n, rate, 200.0, 4000.0, 1.0)
        syllable_hz = rng.uniform(3.0, 5.5)
        phase = rng.uniform(0, 6.28)
        t = np.arange(n) / rate
        envelope = np.clip(np.sin(2 * np.pi * syllable_hz * t + phase), 0.0, None) ** 1.5
        out += carrier * envelope * rng.uniform(0.5, 1.0)
    return out


def _babble(np: Any, rng: Any, rate: int) -> Any:
    return _talkers(np, rng, rate, int(3.0 * rate), 6)


def _cafe(np: Any, rng: Any, rate: int) -> Any:
    n = int(3.0 * rate)
    out = 0.7 * _talkers(np, rng, rate, n, 4) + 0.3 * _band(np, rng, n, rate, 60.0, 8000.0, 1.0)
    for _ in range(int(rng.integers(2, 5))):  # cups and cutlery
        m = int(0.15 * rate)
        t = np.arange(m) / rate
        clink = np.sin(2 * np.pi * rng.uniform(2500.0, 5000.0) * t) * _decay(np, m, rate, 0.03)
        _place(np, out, 2.0 * clink, int(rng.uniform(0.0, 2.8) * rate))
    return out


def _traffic(np: Any, rng: Any, rate: int) -> Any:
    n = int(3.0 * rate)
    rumble = _band(np, rng, n, rate, 30.0, 500.0, 2.0)
    t = np.arange(n) / rate
    swell = 0.6 + 0.4 * np.sin(2 * np.pi * rng.uniform(0.15, 0.35) * t + rng.uniform(0, 6.28))
    return rumble * swell


_RECIPES: dict[str, Callable[[Any, Any, int], Any]] = {
    "babble": _babble,
    "cafe": _cafe,
    "click": _click,
    "cough": _cough,
    "door": _door,
    "keyboard": _keyboard,
    "laugh": _laugh,
    "traffic": _traffic,
}
assert set(_RECIPES) == set(NOISE_KINDS), "every [noise KIND] marker needs a recipe"


def make_sound(
    kind: str, *, seed: int, sample_rate: int, level_dbfs: float | None = None
) -> AudioClip:
    """The sound ``kind`` (one of `NOISE_KINDS`), made from ``seed``, at ``sample_rate``.

    Args:
        kind: Which sound.
        seed: Same seed, same samples.
        sample_rate: Hz.
        level_dbfs: RMS of the sound's louder part; default the kind's own level.

    Raises:
        ValueError: An unknown kind (markers are checked before they get here).
    """
    np = _numpy()
    recipe = _RECIPES.get(kind)
    if recipe is None:
        raise ValueError(f"no sound {kind!r}; the sounds are {', '.join(NOISE_KINDS)}")
    rng = np.random.default_rng(seed)
    raw = np.asarray(recipe(np, rng, sample_rate), dtype=np.float64)
    frame = max(1, sample_rate // 100)
    usable = len(raw) // frame * frame
    if usable:
        energies = (raw[:usable].reshape(-1, frame) ** 2).mean(axis=1)
        active = energies[energies >= energies.max() * 0.01]
        rms = float(np.sqrt(active.mean())) if active.size else 1.0
    else:
        rms = float(np.sqrt(np.mean(raw**2))) if len(raw) else 1.0
    level = _LEVEL_DBFS[kind] if level_dbfs is None else level_dbfs
    scaled = raw * (10 ** (level / 20) / max(rms, 1e-12))
    fade = min(int(0.005 * sample_rate), len(scaled) // 2)
    if fade:
        ramp = np.linspace(0.0, 1.0, fade, endpoint=False)
        scaled[:fade] *= ramp
        scaled[-fade:] *= ramp[::-1]
    return AudioClip(np.clip(scaled, -0.99, 0.99).astype(np.float32), sample_rate)
