"""The error a text adapter raises when the user's agent raised: a crash of the agent (the
run is CRASHED, `models.Verdict`), not a failure of ours (an ERROR)."""

from __future__ import annotations

from ..errors import AgentCrashError
from ..models import Crash

__all__ = ["agent_crashed"]


def agent_crashed(message: str, exc: BaseException) -> AgentCrashError:
    """``message`` (what failed, on which turn) as an `AgentCrashError` carrying ``exc``'s
    type, message and the place in the agent's code it came from."""
    crash = Crash.of(exc)
    return AgentCrashError(message, kind=crash.type, detail=crash.message, where=crash.where)
