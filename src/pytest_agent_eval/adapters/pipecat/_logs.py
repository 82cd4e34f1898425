"""Pipecat's log output while conversations are open: quieter, unless you set up loguru yourself.

Pipecat logs through loguru, whose default handler (id 0) prints everything from DEBUG up to
stderr: a frame-by-frame story of every conversation, which would bury a failing test's report
and cost time. While at least one conversation holds the scope, that untouched default handler
is swapped for one at the level asked for; when the last one leaves, a default handler comes
back. A loguru you configured (handler 0 removed) is left exactly as it is.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from collections.abc import Iterator

__all__ = ["hold_pipecat_logs", "resolve_level"]

_LEVELS = ("TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR", "CRITICAL")

_lock = threading.Lock()
_holders = 0
_default_id: int | None = 0
"""The id of loguru's default handler while it is untouched (None: the user configured loguru,
or we replaced it)."""
_ours: int | None = None


def resolve_level(level: str | None) -> str | None:
    """``level`` as a loguru level name (None stays None).

    Raises:
        ValueError: An unknown level.
    """
    if level is None:
        return None
    name = str(level).upper()
    if name not in _LEVELS:
        raise ValueError(
            f"PipecatAdapter(log_level={level!r}): use one of {', '.join(_LEVELS)} or None"
        )
    return name


@contextlib.contextmanager
def hold_pipecat_logs(level: str | None) -> Iterator[None]:
    """Quiet loguru's default handler to ``level`` while held (None: leave logging alone)."""
    if level is None:
        yield
        return
    _acquire(level)
    try:
        yield
    finally:
        _release()


def _acquire(level: str) -> None:
    global _holders, _default_id, _ours
    from loguru import logger

    with _lock:
        _holders += 1
        if _holders > 1 or _default_id is None:
            return
        try:
            logger.remove(_default_id)
        except ValueError:
            _default_id = None  # removed by the user: their configuration stands
            return
        _default_id = None
        _ours = logger.add(sys.stderr, level=level)


def _release() -> None:
    global _holders, _default_id, _ours
    from loguru import logger

    with _lock:
        _holders = max(0, _holders - 1)
        if _holders or _ours is None:
            return
        with contextlib.suppress(ValueError):
            logger.remove(_ours)
        _ours = None
        _default_id = logger.add(sys.stderr)
