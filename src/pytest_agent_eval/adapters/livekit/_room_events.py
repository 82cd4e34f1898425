"""Moved to `pytest_agent_eval.adapters.livekit.room._events`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .room import _events
from .room._events import (
    EVAL_EVENTS_TOPIC,
    EVAL_EVENTS_VERSION,
    EVAL_LISTENER_ATTRIBUTE,
    EVAL_RPC_METHOD,
    EvalEventPublisher,
    capture_metadata,
    parse_eval_event,
    publish_eval_events,
    still_to_hear,
)

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_EVENTS_VERSION",
    "EVAL_LISTENER_ATTRIBUTE",
    "EVAL_RPC_METHOD",
    "EvalEventPublisher",
    "capture_metadata",
    "parse_eval_event",
    "publish_eval_events",
    "still_to_hear",
]

sys.modules[__name__] = _events
