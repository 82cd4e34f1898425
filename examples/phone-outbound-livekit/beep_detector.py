"""A voicemail beep detector for the agent's audio path, the way outbound agents hear the beep
in practice: no model, no words (the STT hears nothing in a beep), only a tone test on the
audio frames the agent receives. A beep is one steady tone: for at least ``min_s`` seconds,
nearly all the energy of each frame sits in one frequency between 300 Hz and 3 kHz (voicemail
beeps are pure tones in that band; speech spreads its energy over many harmonics). It fires
once per tone.

Limits, as for any tone test: a sustained pure note in hold music looks like a beep too; a
beep under loud noise may be missed."""

from __future__ import annotations

import numpy as np

BAND_HZ = (300.0, 3000.0)
"""Where voicemail beeps are."""
TONE_SHARE = 0.6
"""Share of a frame's energy that must sit in its strongest frequency (and its neighbours)."""
QUIET = 1e-4
"""Mean square energy (of samples in -1..1) below which a frame is silence."""


class BeepDetector:
    """Feed it the frames the agent hears (`push`); it answers True on the frame at which a
    beep has lasted ``min_s``."""

    def __init__(self, min_s: float = 0.25) -> None:
        self.min_s = min_s
        self._tone_s = 0.0
        self._tone_hz: float | None = None
        self._fired = False

    def push(self, samples: np.ndarray, sample_rate: int) -> bool:
        """One frame's samples (int16 or float); True when a beep is heard now."""
        x = samples.astype(np.float32)
        if samples.dtype == np.int16:
            x /= 32768.0
        hz = _tone(x, sample_rate)
        if hz is None or (self._tone_hz is not None and abs(hz - self._tone_hz) > 60.0):
            self._tone_s, self._tone_hz, self._fired = 0.0, hz, False
            if hz is None:
                return False
        self._tone_hz = hz
        self._tone_s += len(x) / sample_rate
        if self._tone_s >= self.min_s and not self._fired:
            self._fired = True
            return True
        return False


def _tone(x: np.ndarray, sample_rate: int) -> float | None:
    """The frequency of the steady tone ``x`` is, or None (silence, speech, noise)."""
    if len(x) < 64 or float(np.mean(x * x)) < QUIET:
        return None
    power = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    peak = int(np.argmax(power))
    share = float(power[max(0, peak - 2) : peak + 3].sum() / power.sum())
    hz = peak * sample_rate / len(x)
    if share < TONE_SHARE or not BAND_HZ[0] <= hz <= BAND_HZ[1]:
        return None
    return hz
