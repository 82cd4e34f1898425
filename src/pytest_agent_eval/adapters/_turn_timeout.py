"""What a turn past its ``turn_timeout_s`` says, in one place: the runner's own deadline (wall
time) and an adapter whose agent runs on a clock of its own (LiveKit's virtual clock, a Pipecat
pipeline's clock at any speed, where the turn's time is the pipeline's) give the same FAIL with
the same words."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from ..errors import AgentTimeoutError

__all__ = ["TurnDeadlineError", "turn_timeout_message", "within_turn_timeout"]

T = TypeVar("T")


def turn_timeout_message(timeout_s: float) -> str:
    """The FAIL of a turn that got no reply within ``timeout_s``, and the fix."""
    return (
        f"no reply within turn_timeout_s={timeout_s:g}s: the agent hung or is too slow "
        "(raise turn_timeout_s in the transcript, the agent_eval marker or "
        "[tool.agent_eval] if it is just slow)"
    )


class TurnDeadlineError(AgentTimeoutError):
    """A turn past its ``turn_timeout_s`` in its agent's own time: says what the runner's
    deadline says (`turn_timeout_message`), with no label of the adapter's in front."""


async def within_turn_timeout(work: Awaitable[T], timeout_s: float | None) -> T:
    """``work`` bounded by ``timeout_s`` in the running loop's time (the agent's clock, when
    the loop runs on one): a turn's verdict must not depend on how fast that clock runs
    against the wall. None: no bound.

    Raises:
        TurnDeadlineError: ``timeout_s`` ran out first.
    """
    if timeout_s is None:
        return await work
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            return await work
    except TimeoutError:
        if deadline.expired():
            raise TurnDeadlineError(turn_timeout_message(timeout_s)) from None
        raise
