"""Moved to `pytest_agent_eval.adapters.livekit.session._adapter`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .session import _adapter
from .session._adapter import (
    LiveKitAdapter,
    LiveKitConversation,
    SessionFactory,
    SessionInfo,
)

__all__ = ["LiveKitAdapter", "LiveKitConversation", "SessionFactory", "SessionInfo"]

sys.modules[__name__] = _adapter
