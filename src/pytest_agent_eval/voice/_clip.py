"""Audio clips in memory, and WAV files on disk: read, resample, write atomically.

numpy, soundfile and soxr come with the ``voice`` extra; each is imported where it is used, so
importing this module costs nothing.
"""

from __future__ import annotations

import io
import os
import struct
import wave
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._atomic import clean_stale_temp_files, write_atomic
from ..errors import AudioFixtureError, require_extra

if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "MAX_COMMENT_BYTES",
    "PCM16_SCALE",
    "AudioClip",
    "clean_stale_temp_files",
    "clip_from_pcm16",
    "encode_wav",
    "read_wav",
    "read_wav_comment",
    "resample",
    "to_pcm16_bytes",
    "write_wav_atomic",
]

PCM16_SCALE = 32767
"""Full scale of 16-bit PCM. Scaling by 32767 (not 32768) maps +1.0 and -1.0 symmetrically."""


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
        # The library's text is in the message: no chained copy of it.
        raise AudioFixtureError(f"{p}: not a readable audio file ({exc})") from None
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
    return bytes(pcm.tobytes())


MAX_COMMENT_BYTES = 2000
"""Longest comment `encode_wav` writes: libsndfile (1.2) reads an INFO string only up to about
2 KB and silently drops a longer one, so anything longer would not come back."""


def _info_chunk(comment: str) -> bytes:
    """A RIFF ``LIST`` chunk of type ``INFO`` holding ``comment`` as ``ICMT`` (NUL-terminated,
    padded to an even length, as RIFF wants)."""
    text = comment.encode("utf-8") + b"\0"
    if len(text) % 2:
        text += b"\0"
    sub = b"ICMT" + struct.pack("<I", len(text)) + text
    return b"LIST" + struct.pack("<I", 4 + len(sub)) + b"INFO" + sub


def encode_wav(clip: AudioClip, *, comment: str | None = None) -> bytes:
    """The bytes of a 16-bit mono PCM WAV file holding ``clip``.

    Args:
        clip: The audio.
        comment: Text stored in a ``LIST/INFO`` chunk (``ICMT``, the field libsndfile and
            soundfile expose as ``comment``), placed after the samples: the 44-byte header and
            the sample bytes are exactly those of a WAV without it, so readers that stop at
            the ``data`` chunk see the same file.

    Raises:
        ValueError: ``comment`` is longer than `MAX_COMMENT_BYTES` in UTF-8.
    """
    buffer = io.BytesIO()
    # stdlib wave writes the canonical 44-byte header; the lab found it byte-identical to
    # soundfile's PCM_16 output, with no native dependency.
    with wave.open(buffer, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(clip.sample_rate)
        w.writeframes(to_pcm16_bytes(clip))
    data = buffer.getvalue()
    if comment is None:
        return data
    if len(comment.encode("utf-8")) > MAX_COMMENT_BYTES:
        raise ValueError(f"a WAV comment holds at most {MAX_COMMENT_BYTES} bytes")
    out = bytearray(data + _info_chunk(comment))
    struct.pack_into("<I", out, 4, len(out) - 8)  # the RIFF size covers the new chunk
    return bytes(out)


def read_wav_comment(path: str | os.PathLike[str]) -> str | None:
    """The ``comment`` string of an audio file (a WAV's ``ICMT``), read with soundfile from the
    header and chunks only, no samples decoded. None when there is none or the file is not
    audio libsndfile can open."""
    require_extra("soundfile", extra="voice", feature="Reading WAV fixtures")
    import soundfile

    try:
        with soundfile.SoundFile(os.fspath(path)) as handle:
            return handle.comment or None
    except (soundfile.LibsndfileError, RuntimeError, TypeError, ValueError, OSError):
        return None


def write_wav_atomic(
    path: str | os.PathLike[str], clip: AudioClip, *, comment: str | None = None
) -> int:
    """Write a 16-bit mono PCM WAV so that ``path`` is either the old file or the whole new one.

    See `write_atomic` (the temp file is named so that `clean_stale_temp_files` knows it) and
    `encode_wav` for ``comment``.

    Returns:
        The size of the written file in bytes.
    """
    return write_atomic(path, encode_wav(clip, comment=comment)).size_bytes
