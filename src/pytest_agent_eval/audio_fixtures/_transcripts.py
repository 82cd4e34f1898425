"""Moved to `pytest_agent_eval.voice._transcripts`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _transcripts
from ..voice._transcripts import (
    ENTRY_FORMAT,
    CachedRecognition,
    CacheStats,
    TranscriptCache,
    TranscriptKey,
    default_transcript_cache_dir,
    entry_path,
    set_default_transcript_cache_dir,
    transcript_cache,
)

__all__ = [
    "ENTRY_FORMAT",
    "CacheStats",
    "CachedRecognition",
    "TranscriptCache",
    "TranscriptKey",
    "default_transcript_cache_dir",
    "entry_path",
    "set_default_transcript_cache_dir",
    "transcript_cache",
]

sys.modules[__name__] = _transcripts
