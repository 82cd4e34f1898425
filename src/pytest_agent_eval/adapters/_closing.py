"""Closing what a failed start opened, without losing why it failed.

A start that fails closes its conversation before the failure goes on; that close can fail
too (a pipeline thread whose loop is blocked does not stop: `PipelineThread.stopped_after`
raises `AdapterError`; a session that does not close). Raised from the ``except`` block, the
close's error would replace the start's own, and a start that timed out or crashed (the agent
evaluated, and failing) would become an ERROR (the agent not evaluated). `close_after_failure`
keeps the start's failure what is raised and notes the close's on it.
"""

from __future__ import annotations

from collections.abc import Awaitable

__all__ = ["close_after_failure"]


async def close_after_failure(close: Awaitable[object], failure: BaseException) -> None:
    """Await ``close`` after ``failure``; when the close fails too, that is noted on
    ``failure`` (`BaseException.add_note`), which the caller then re-raises."""
    try:
        await close
    except Exception as exc:
        failure.add_note(f"closing after that failure failed too: {type(exc).__name__}: {exc}")
