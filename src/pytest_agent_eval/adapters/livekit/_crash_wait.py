"""A turn's wait that the agent's crash ends: the crash is what the turn reports, whatever the
agent does after it, and a crash in ``on_user_turn_completed`` leaves the turn unanswered, so
the wait would otherwise last until the turn's deadline (both LiveKit paths: in process and
the room helper)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import TYPE_CHECKING, TypeVar

from ...errors import AdapterError

if TYPE_CHECKING:
    from ._turn import TurnRecorder

__all__ = ["CrashedWhileWaiting", "unless_crashed"]

T = TypeVar("T")


class CrashedWhileWaiting(AdapterError):
    """A wait ended by the agent's crash; the caller reports the crash itself
    (`TurnRecorder.take_crash`), not this."""


async def unless_crashed(recorder: TurnRecorder, work: Awaitable[T]) -> T:
    """``work``'s result, unless ``recorder`` records a crash first (`TurnRecorder.crashed`):
    then ``work`` is cancelled and `CrashedWhileWaiting` raised."""
    task = asyncio.ensure_future(work)
    crashed = asyncio.ensure_future(recorder.crashed.wait())
    try:
        await asyncio.wait({task, crashed}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        crashed.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
    if task.done() and not task.cancelled():
        return task.result()
    raise CrashedWhileWaiting("the agent crashed")
