"""The one bridge from synchronous code into async code: the runner from a pytest test, network
TTS backends from the synthesizer."""

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

    async def main() -> T:
        outcome["loop"] = asyncio.get_running_loop()
        outcome["task"] = asyncio.current_task()
        return await coro

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(main())
        except BaseException as exc:  # re-raised in the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=target, name="agent-eval-run", daemon=True)
    thread.start()
    try:
        thread.join()
    except BaseException:
        # Ctrl-C lands here, in the caller's thread: cancel the coroutine on its own loop so
        # adapters close their sessions, wait for that, then let the interrupt through.
        loop, task = outcome.get("loop"), outcome.get("task")
        if loop is not None and task is not None:
            loop.call_soon_threadsafe(task.cancel)
        thread.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]  # type: ignore[no-any-return]
