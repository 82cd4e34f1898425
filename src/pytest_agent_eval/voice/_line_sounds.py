"""The sounds of a phone line that are not words: a voicemail box's beep, the ringback of a
line nobody answers, a busy tone, a hold queue's music.

The far end of an outbound call (a transcript's ``far_end:``) plays these when it is heard as
audio: the agent must hear the beep in its audio, as on a real call, not read ``(beep)``. Each
is made with numpy, deterministically (the same call gives the same samples, byte for byte),
at the levels a line carries them:

- the beep: one tone, 1 kHz for 0.4 s by default, the usual answering-machine beep;
- ringback: 440 + 480 Hz, 2 s on, 4 s off (North America, ITU-T E.180 Supplement 2);
- busy: 480 + 620 Hz, 0.5 s on, 0.5 s off (North America, E.180 Supplement 2);
- hold music: a short tune of plain notes (a tone and two overtones, each note shaped by an
  attack and a decay), looped to the length asked for.

Every tone starts and ends on a 5 ms raised-cosine edge: a hard start splatters energy over
every frequency, which no line's tone generator does.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ._clip import AudioClip, _numpy

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "BEEP_HZ",
    "BUSY_CADENCE_S",
    "BUSY_HZ",
    "RINGBACK_CADENCE_S",
    "RINGBACK_HZ",
    "beep",
    "busy_tone",
    "hold_music",
    "ringback",
]

BEEP_HZ = 1000.0
"""A voicemail box's beep."""
RINGBACK_HZ = (440.0, 480.0)
"""The two frequencies of North American ringback."""
RINGBACK_CADENCE_S = (2.0, 4.0)
"""Ringback's seconds on, seconds off."""
BUSY_HZ = (480.0, 620.0)
"""The two frequencies of a North American busy tone."""
BUSY_CADENCE_S = (0.5, 0.5)
"""A busy tone's seconds on, seconds off."""

_EDGE_S = 0.005
_TUNE_HZ = (523.25, 659.25, 783.99, 659.25, 587.33, 698.46, 880.0, 698.46)
"""Hold music: C5 E5 G5 E5, D5 F5 A5 F5, a quarter second each."""
_NOTE_S = 0.25


def _edged(samples: np.ndarray, sample_rate: int) -> np.ndarray:
    np = _numpy()
    edge_n = min(len(samples) // 2, round(sample_rate * _EDGE_S))
    if edge_n:
        ramp = 0.5 - 0.5 * np.cos(np.linspace(0.0, math.pi, edge_n))
        samples = samples.copy()
        samples[:edge_n] *= ramp
        samples[-edge_n:] *= ramp[::-1]
    return samples


def _tone(
    freqs: tuple[float, ...], seconds: float, sample_rate: int, level_dbfs: float
) -> np.ndarray:
    """``freqs`` together for ``seconds``, each at ``level_dbfs``."""
    np = _numpy()
    t = np.arange(round(sample_rate * seconds)) / sample_rate
    amplitude = 10 ** (level_dbfs / 20)
    tone = sum((amplitude * np.sin(2 * math.pi * f * t) for f in freqs), np.zeros(len(t)))
    return _edged(tone, sample_rate)


def _cadence(
    freqs: tuple[float, ...],
    cadence: tuple[float, float],
    cycles: int,
    sample_rate: int,
    level_dbfs: float,
) -> AudioClip:
    np = _numpy()
    if cycles < 1:
        raise ValueError(f"a line tone needs at least one cycle, got {cycles}")
    on, off = cadence
    cycle = np.concatenate(
        [_tone(freqs, on, sample_rate, level_dbfs), np.zeros(round(sample_rate * off))]
    )
    return AudioClip(np.tile(cycle, cycles).astype(np.float32), sample_rate)


def beep(
    *,
    sample_rate: int = 16000,
    hz: float = BEEP_HZ,
    seconds: float = 0.4,
    level_dbfs: float = -10.0,
) -> AudioClip:
    """A voicemail box's beep: one tone of ``hz`` for ``seconds``."""
    np = _numpy()
    if seconds <= 0:
        raise ValueError(f"a beep lasts more than 0 s, got {seconds}")
    return AudioClip(_tone((hz,), seconds, sample_rate, level_dbfs).astype(np.float32), sample_rate)


def ringback(*, cycles: int = 1, sample_rate: int = 16000, level_dbfs: float = -16.0) -> AudioClip:
    """A line that rings and nobody answers: ``cycles`` rings of 2 s, each followed by 4 s of
    silence."""
    return _cadence(RINGBACK_HZ, RINGBACK_CADENCE_S, cycles, sample_rate, level_dbfs)


def busy_tone(*, cycles: int = 4, sample_rate: int = 16000, level_dbfs: float = -16.0) -> AudioClip:
    """A busy line: ``cycles`` of 0.5 s of tone and 0.5 s of silence."""
    return _cadence(BUSY_HZ, BUSY_CADENCE_S, cycles, sample_rate, level_dbfs)


def hold_music(
    *, seconds: float = 4.0, sample_rate: int = 16000, level_dbfs: float = -14.0
) -> AudioClip:
    """A hold queue's music: a tune of eight quarter-second notes, looped for ``seconds``."""
    np = _numpy()
    if seconds <= 0:
        raise ValueError(f"hold music lasts more than 0 s, got {seconds}")
    note_n = round(sample_rate * _NOTE_S)
    t = np.arange(note_n) / sample_rate
    # Each note: a quick attack, then an exponential decay, like a plucked or struck string.
    shape = np.minimum(1.0, t / 0.02) * np.exp(-t / 0.12)
    amplitude = 10 ** (level_dbfs / 20)
    notes = [
        amplitude
        * shape
        * sum(
            (
                weight * np.sin(2 * math.pi * hz * k * t)
                for k, weight in ((1, 1.0), (2, 0.4), (3, 0.15))
            ),
            np.zeros(note_n),
        )
        for hz in _TUNE_HZ
    ]
    tune = np.concatenate(notes)
    total = round(sample_rate * seconds)
    looped = np.tile(tune, math.ceil(total / len(tune)))[:total]
    return AudioClip(_edged(looped, sample_rate).astype(np.float32), sample_rate)
