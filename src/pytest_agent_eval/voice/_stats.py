"""Level and silence measurements of a clip: RMS and peak in dBFS, voiced frames."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._clip import AudioClip, _numpy

if TYPE_CHECKING:
    import numpy as np

__all__ = ["SILENCE_FLOOR_DBFS", "AudioStats", "audio_stats", "dbfs", "voiced_frames"]

SILENCE_FLOOR_DBFS = -50.0
"""A 20 ms frame quieter than this is silence. Speech from every engine the lab measured sits
between -30 and -10 dBFS RMS; 16-bit dither and room tone sit below -60."""

_EPS = 1e-12  # keeps log10 finite on digital silence


def dbfs(value: float) -> float:
    """An amplitude (RMS or peak, full scale 1.0) in dBFS."""
    np = _numpy()
    return float(20.0 * np.log10(value + _EPS))


def voiced_frames(
    clip: AudioClip, *, floor_dbfs: float = SILENCE_FLOOR_DBFS, frame_ms: float = 20.0
) -> tuple[np.ndarray, int]:
    """Indices of frames louder than ``floor_dbfs``, and the frame length in samples."""
    np = _numpy()
    n = max(1, int(clip.sample_rate * frame_ms / 1000))
    usable = len(clip.samples) // n * n
    if usable == 0:
        # Shorter than one frame: judge the whole clip as one frame.
        rms = float(np.sqrt(np.mean(clip.samples**2))) if len(clip.samples) else 0.0
        return (np.arange(1) if dbfs(rms) > floor_dbfs else np.arange(0)), max(1, len(clip.samples))
    frames = clip.samples[:usable].reshape(-1, n).astype(np.float64)
    frame_db = 20.0 * np.log10(np.sqrt((frames**2).mean(axis=1)) + _EPS)
    return np.flatnonzero(frame_db > floor_dbfs), n


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioStats:
    """What a clip measures: length, loudness and how much of it is silence."""

    duration_s: float
    rms_dbfs: float
    peak_dbfs: float
    lead_silence_s: float
    trail_silence_s: float
    silence_ratio: float
    """Fraction of 20 ms frames below the silence floor."""


def audio_stats(clip: AudioClip, *, floor_dbfs: float = SILENCE_FLOOR_DBFS) -> AudioStats:
    """Measure ``clip`` (20 ms frames against ``floor_dbfs``)."""
    np = _numpy()
    x = clip.samples
    if len(x) == 0:
        return AudioStats(
            duration_s=0.0,
            rms_dbfs=dbfs(0.0),
            peak_dbfs=dbfs(0.0),
            lead_silence_s=0.0,
            trail_silence_s=0.0,
            silence_ratio=1.0,
        )
    voiced, n = voiced_frames(clip, floor_dbfs=floor_dbfs)
    total_frames = max(1, len(x) // n)
    if voiced.size:
        lead = voiced[0] * n / clip.sample_rate
        trail = (len(x) - (voiced[-1] + 1) * n) / clip.sample_rate
    else:
        lead = trail = clip.duration_s
    return AudioStats(
        duration_s=clip.duration_s,
        rms_dbfs=dbfs(float(np.sqrt(np.mean(x.astype(np.float64) ** 2)))),
        peak_dbfs=dbfs(float(np.max(np.abs(x)))),
        lead_silence_s=float(lead),
        trail_silence_s=float(max(0.0, trail)),
        silence_ratio=float(1.0 - voiced.size / total_frames),
    )
