"""Moved to `pytest_agent_eval.adapters.livekit.room._adapter`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .room import _adapter
from .room._adapter import (
    AGENTS_HINT,
    HEARING_HINT,
    HELPER_HINT,
    LiveKitRoomAdapter,
    LiveKitRoomConversation,
)

__all__ = [
    "AGENTS_HINT",
    "HEARING_HINT",
    "HELPER_HINT",
    "LiveKitRoomAdapter",
    "LiveKitRoomConversation",
]

sys.modules[__name__] = _adapter
