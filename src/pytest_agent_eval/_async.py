"""The one bridge from synchronous pytest code into the async runner."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["run_sync"]

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion from synchronous code and return its result.

    With no event loop running in this thread, a fresh loop runs it (and is closed after, so
    nothing leaks from one test into the next). Inside a running loop (a sync helper called
    from async code), it runs on a fresh loop in a worker thread instead, because a loop
    cannot be re-entered. Ctrl-C cancels the coroutine, so adapters close their sessions.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    if not running:
        # Outside the except block, so a failure is not chained to "no running event loop".
        return asyncio.run(coro)

    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coro)
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="agent-eval-run", daemon=True)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
