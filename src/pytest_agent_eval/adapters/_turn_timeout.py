"""What a turn past its ``turn_timeout_s`` says, in one place: the runner's own deadline (wall
time) and an adapter whose agent runs on a clock of its own (LiveKit's virtual clock, where
the turn's time is the session's) give the same FAIL with the same words."""

from __future__ import annotations

__all__ = ["turn_timeout_message"]


def turn_timeout_message(timeout_s: float) -> str:
    """The FAIL of a turn that got no reply within ``timeout_s``, and the fix."""
    return (
        f"no reply within turn_timeout_s={timeout_s:g}s: the agent hung or is too slow "
        "(raise turn_timeout_s in the transcript, the agent_eval marker or "
        "[tool.agent_eval] if it is just slow)"
    )
