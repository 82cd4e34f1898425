"""Moved to `pytest_agent_eval.voice._clip`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _clip
from ..voice._clip import (
    MAX_COMMENT_BYTES,
    PCM16_SCALE,
    AudioClip,
    clean_stale_temp_files,
    clip_from_pcm16,
    encode_wav,
    read_wav,
    read_wav_comment,
    resample,
    to_pcm16_bytes,
    write_wav_atomic,
)

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

sys.modules[__name__] = _clip
