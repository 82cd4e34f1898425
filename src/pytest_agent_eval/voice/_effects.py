"""Post-processing that makes fixtures from different engines alike: silence trim and level.

Engines differ a lot (the lab measured hibari at -27 dBFS RMS with 0.3-0.5 s of silence around
speech, piper at -20 dBFS peak-normalized with 0.05-0.2 s). VAD and STT behave differently on
those, so every fixture gets the same fixed pad and the same loudness.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from ._clip import AudioClip, _numpy
from ._stats import dbfs, voiced_frames

__all__ = ["PostProcess", "normalize_level", "postprocess", "render_phrases", "trim_silence"]


@dataclass(frozen=True, slots=True, kw_only=True)
class PostProcess:
    """Parameters of `postprocess`; they are part of every fixture's key."""

    pad_s: float = 0.25
    """Silence kept (added, if needed) before and after speech. Long enough for a VAD to see an
    onset and an offset, short enough not to slow tests."""
    trim_below_peak_db: float = -45.0
    """10 ms frames this many dB under the loudest frame (or under -60 dBFS) are silence."""
    target_rms_dbfs: float = -20.0
    """Loudness of the speech part, about where telephone and meeting audio sits."""
    peak_ceiling_dbfs: float = -1.0
    """Gain is reduced so no sample exceeds this, so normalization never clips."""
    fade_ms: float = 5.0
    """Fade at the trimmed edges, so a cut never clicks."""
    sentence_pause_s: float = 0.75
    """Silence between two sentences of one turn (each sentence is spoken on its own, so the
    synthesizer knows where each one is). hibari's own pause between sentences measures about
    0.75 s, above the 0.55 s after which LiveKit's Silero VAD ends a speech segment."""

    def to_dict(self) -> dict[str, Any]:
        """The parameters, for a sidecar."""
        return asdict(self)


def trim_silence(
    clip: AudioClip, *, pad_s: float, floor_db_below_peak: float = -45.0, fade_ms: float = 5.0
) -> AudioClip:
    """Cut leading and trailing silence, then pad both ends with exactly ``pad_s`` of zeros.

    Silence is a 10 ms frame more than ``-floor_db_below_peak`` dB under the loudest frame (and
    under -60 dBFS in any case). A clip with no sound at all is returned unchanged.
    """
    np = _numpy()
    x = clip.samples
    if len(x) == 0:
        return clip
    frame_n = max(1, int(clip.sample_rate * 0.010))
    usable = len(x) // frame_n * frame_n
    if usable == 0:
        return clip
    frames = x[:usable].reshape(-1, frame_n).astype(np.float64)
    loudest = dbfs(float(np.sqrt((frames**2).mean(axis=1)).max()))
    voiced, n = voiced_frames(
        clip, floor_dbfs=max(loudest + floor_db_below_peak, -60.0), frame_ms=10.0
    )
    if voiced.size == 0:
        return clip
    start = int(voiced[0]) * n
    end = min(len(x), (int(voiced[-1]) + 1) * n)
    speech = x[start:end].copy()
    fade = min(int(clip.sample_rate * fade_ms / 1000), len(speech) // 2)
    if fade > 0:
        ramp = np.linspace(0.0, 1.0, fade, endpoint=False, dtype=np.float32)
        speech[:fade] *= ramp
        speech[-fade:] *= ramp[::-1]
    pad = np.zeros(round(pad_s * clip.sample_rate), dtype=np.float32)
    return AudioClip(np.concatenate([pad, speech, pad]), clip.sample_rate)


def normalize_level(
    clip: AudioClip, *, target_rms_dbfs: float, peak_ceiling_dbfs: float = -1.0
) -> AudioClip:
    """Scale the voiced part to RMS ``target_rms_dbfs``; the peak never passes the ceiling."""
    np = _numpy()
    x = clip.samples.astype(np.float64)
    voiced, n = voiced_frames(clip, floor_dbfs=-60.0)
    if voiced.size == 0:
        return clip
    frames = x[: len(x) // n * n].reshape(-1, n)[voiced] if len(x) >= n else x.reshape(1, -1)
    rms = float(np.sqrt(np.mean(frames**2)))
    peak = float(np.max(np.abs(x)))
    gain = 10 ** (target_rms_dbfs / 20) / max(rms, 1e-9)
    ceiling = 10 ** (peak_ceiling_dbfs / 20)
    if peak * gain > ceiling:
        gain = ceiling / peak
    return AudioClip((x * gain).astype(np.float32), clip.sample_rate)


def postprocess(clip: AudioClip, params: PostProcess | None = None) -> AudioClip:
    """Trim silence to the pad, then normalize the level (see `PostProcess`)."""
    p = params or PostProcess()
    trimmed = trim_silence(
        clip, pad_s=p.pad_s, floor_db_below_peak=p.trim_below_peak_db, fade_ms=p.fade_ms
    )
    return normalize_level(
        trimmed, target_rms_dbfs=p.target_rms_dbfs, peak_ceiling_dbfs=p.peak_ceiling_dbfs
    )


def render_phrases(
    pieces: Sequence[AudioClip | float], params: PostProcess | None = None
) -> tuple[AudioClip, list[tuple[float, float]]]:
    """Join spoken phrases and silences into one fixture, and say where each phrase landed.

    Each phrase is trimmed of its own silence, the pieces are joined in order (a float is that
    many seconds of silence), the whole gets the fixed pad at both ends and one level
    normalization. A single phrase comes out exactly as `postprocess` makes it.

    Args:
        pieces: Phrase clips, all at one sample rate, and silences in seconds.
        params: Post-processing parameters.

    Returns:
        The clip, and the (start, end) in seconds of every phrase, in order.
    """
    np = _numpy()
    p = params or PostProcess()
    clips = [c for c in pieces if isinstance(c, AudioClip)]
    if not clips:
        raise ValueError("render_phrases needs at least one phrase")
    rate = clips[0].sample_rate
    if any(c.sample_rate != rate for c in clips):
        raise ValueError("render_phrases needs every phrase at one sample rate")
    pad = np.zeros(round(p.pad_s * rate), dtype=np.float32)
    parts = [pad]
    at = len(pad)
    times: list[tuple[float, float]] = []
    for piece in pieces:
        if isinstance(piece, AudioClip):
            speech = trim_silence(
                piece, pad_s=0.0, floor_db_below_peak=p.trim_below_peak_db, fade_ms=p.fade_ms
            ).samples
            times.append((round(at / rate, 4), round((at + len(speech)) / rate, 4)))
        else:
            speech = np.zeros(round(float(piece) * rate), dtype=np.float32)
        parts.append(speech)
        at += len(speech)
    parts.append(pad)
    joined = AudioClip(np.concatenate(parts), rate)
    out = normalize_level(
        joined, target_rms_dbfs=p.target_rms_dbfs, peak_ceiling_dbfs=p.peak_ceiling_dbfs
    )
    return out, times
