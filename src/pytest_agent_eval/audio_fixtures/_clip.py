"""Audio clips in memory, and WAV files on disk: read, resample, write atomically.

numpy, soundfile and soxr come with the ``voice`` extra; each is imported where it is used, so
importing this module costs nothing.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import AudioFixtureError, require_extra

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "PCM16_SCALE",
    "AudioClip",
    "clean_stale_temp_files",
    "clip_from_pcm16",
    "read_wav",
    "resample",
    "temp_prefix",
    "to_pcm16_bytes",
    "write_wav_atomic",
]

PCM16_SCALE = 32767
"""Full scale of 16-bit PCM. Scaling by 32767 (not 32768) maps +1.0 and -1.0 symmetrically."""


FILE_MODE = 0o644
"""Mode of written fixtures: mkstemp's 0600 would hide them from CI users and containers."""


def temp_prefix(path: Path) -> str:
    """Prefix of the temporary files written next to ``path``; it carries the writer's pid."""
    return f".{path.name}.{os.getpid()}."


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def clean_stale_temp_files(folder: str | os.PathLike[str]) -> list[Path]:
    """Delete temp files in ``folder`` left by a writer that died (SIGKILL, power loss).

    Temp files of live processes are kept, so two runs over one folder do not break each other.

    Returns:
        The files removed.
    """
    removed: list[Path] = []
    base = Path(folder)
    if not base.is_dir():
        return removed
    for tmp in base.glob(".*.tmp"):
        parts = tmp.name.split(".")
        # ".<name>.<ext>.<pid>.<random>.tmp" -> the pid is the third field from the end.
        if len(parts) < 5 or not parts[-3].isdigit() or _pid_alive(int(parts[-3])):
            continue
        with contextlib.suppress(OSError):
            tmp.unlink()
            removed.append(tmp)
    return removed


def _numpy() -> Any:
    require_extra("numpy", extra="voice", feature="Voice fixtures")
    import numpy

    return numpy


@dataclass(frozen=True, slots=True)
class AudioClip:
    """Mono audio: float32 samples in [-1, 1] at ``sample_rate`` Hz."""

    samples: np.ndarray
    """One-dimensional float32 array."""
    sample_rate: int
    """Samples per second."""

    def __post_init__(self) -> None:
        np = _numpy()
        samples = np.asarray(self.samples, dtype=np.float32)
        if samples.ndim != 1:
            raise ValueError(f"AudioClip needs mono (1-D) samples, got shape {samples.shape}")
        if self.sample_rate <= 0:
            raise ValueError(f"AudioClip sample_rate must be > 0, got {self.sample_rate}")
        object.__setattr__(self, "samples", samples)

    @property
    def duration_s(self) -> float:
        """Length in seconds."""
        return len(self.samples) / self.sample_rate


def clip_from_pcm16(data: bytes, sample_rate: int) -> AudioClip:
    """An `AudioClip` from headerless 16-bit little-endian mono PCM."""
    np = _numpy()
    if len(data) % 2:
        data = data[:-1]  # a torn last sample carries no audio worth keeping
    pcm = np.frombuffer(data, dtype="<i2")
    return AudioClip(pcm.astype(np.float32) / PCM16_SCALE, sample_rate)


def read_wav(path: str | os.PathLike[str]) -> AudioClip:
    """Read a WAV (or any format libsndfile reads) as mono float32; channels are averaged.

    Raises:
        AudioFixtureError: When the file is missing or is not audio libsndfile can decode.
    """
    np = _numpy()
    require_extra("soundfile", extra="voice", feature="Reading WAV fixtures")
    import soundfile

    p = Path(path)
    if not p.is_file():
        raise AudioFixtureError(f"{p}: audio file not found")
    try:
        data, rate = soundfile.read(str(p), dtype="float32", always_2d=True)
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError) as exc:
        raise AudioFixtureError(f"{p}: not a readable audio file ({exc})") from exc
    mono = data.mean(axis=1) if data.shape[1] > 1 else data[:, 0]
    return AudioClip(np.ascontiguousarray(mono, dtype=np.float32), int(rate))


def resample(clip: AudioClip, target_rate: int) -> AudioClip:
    """``clip`` at ``target_rate`` Hz (soxr, high quality); the same clip when the rate matches."""
    if target_rate <= 0:
        raise ValueError(f"target_rate must be > 0, got {target_rate}")
    if clip.sample_rate == target_rate:
        return clip
    require_extra("soxr", extra="voice", feature="Resampling audio")
    import soxr

    out = soxr.resample(clip.samples, clip.sample_rate, target_rate, quality="HQ")
    return AudioClip(out, target_rate)


def to_pcm16_bytes(clip: AudioClip) -> bytes:
    """16-bit little-endian PCM of the clip, clipped to full scale and rounded."""
    np = _numpy()
    pcm = np.round(np.clip(clip.samples, -1.0, 1.0) * PCM16_SCALE).astype("<i2")
    return pcm.tobytes()


def write_wav_atomic(path: str | os.PathLike[str], clip: AudioClip) -> int:
    """Write a 16-bit mono PCM WAV so that ``path`` is either the old file or the whole new one.

    The data goes to a temporary file in the same folder (``.<name>.<pid>.*.tmp``, see
    `clean_stale_temp_files`), is flushed to disk, then renamed over ``path``.

    Returns:
        The size of the written file in bytes.
    """
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    frames = to_pcm16_bytes(clip)
    fd, tmp = tempfile.mkstemp(prefix=temp_prefix(p), suffix=".tmp", dir=p.parent)
    try:
        os.fchmod(fd, FILE_MODE)
        with os.fdopen(fd, "wb") as raw:
            # stdlib wave writes the canonical 44-byte header; the lab found it byte-identical
            # to soundfile's PCM_16 output, with no native dependency.
            with wave.open(raw, "wb") as w:
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(clip.sample_rate)
                w.writeframes(frames)
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, p)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return p.stat().st_size
