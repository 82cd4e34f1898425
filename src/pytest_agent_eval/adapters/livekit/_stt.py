"""Moved to `pytest_agent_eval.adapters.livekit.offline._stt`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .offline import _stt
from .offline._stt import (
    FixtureTextSTT,
    Recognition,
    SegmentListener,
    SegmentSTT,
    WhisperSTT,
    assign_phrases,
)

__all__ = [
    "FixtureTextSTT",
    "Recognition",
    "SegmentListener",
    "SegmentSTT",
    "WhisperSTT",
    "assign_phrases",
]

sys.modules[__name__] = _stt
