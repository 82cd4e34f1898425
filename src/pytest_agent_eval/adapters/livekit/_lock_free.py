"""`LockFree`: an awaitable that returns once an ``asyncio.Lock`` is free.

`ActivityProbe.busy` names what the session still does together with awaitables to wait on,
and callers often only look at the name. A coroutine made for such a look and never awaited
is a "coroutine was never awaited" RuntimeWarning (an error under ``-W error``); this object
makes its coroutine only when it is awaited (or wrapped in a task by ``asyncio.ensure_future``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any

__all__ = ["LockFree"]


class LockFree:
    """Awaiting it returns once ``lock`` is free (it takes and releases the lock)."""

    def __init__(self, lock: asyncio.Lock) -> None:
        self._lock = lock

    def __await__(self) -> Generator[Any, None, None]:
        return self._wait().__await__()

    async def _wait(self) -> None:
        async with self._lock:
            pass
