"""Moved to `pytest_agent_eval.adapters.livekit.room._logs`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .room import _logs
from .room._logs import (
    RoomShutdownLogs,
    quiet_room_shutdown,
)

__all__ = ["RoomShutdownLogs", "quiet_room_shutdown"]

sys.modules[__name__] = _logs
