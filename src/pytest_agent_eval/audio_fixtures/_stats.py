"""Moved to `pytest_agent_eval.voice._stats`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _stats
from ..voice._stats import (
    SILENCE_FLOOR_DBFS,
    AudioStats,
    audio_stats,
    dbfs,
    voiced_frames,
)

__all__ = ["SILENCE_FLOOR_DBFS", "AudioStats", "audio_stats", "dbfs", "voiced_frames"]

sys.modules[__name__] = _stats
