"""Moved to `pytest_agent_eval.adapters.livekit.session._io`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .session import _io
from .session._io import (
    CaptureAudioOutput,
    CaptureTextOutput,
    FrameQueueInput,
)

__all__ = ["CaptureAudioOutput", "CaptureTextOutput", "FrameQueueInput"]

sys.modules[__name__] = _io
