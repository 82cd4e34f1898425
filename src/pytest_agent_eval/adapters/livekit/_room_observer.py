"""Moved to `pytest_agent_eval.adapters.livekit.room._observer`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .room import _observer
from .room._observer import (
    ReplyStream,
    RoomObserver,
    TurnLog,
)

__all__ = ["ReplyStream", "RoomObserver", "TurnLog"]

sys.modules[__name__] = _observer
