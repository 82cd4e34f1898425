"""``time.time`` and ``time.monotonic`` that a thread can be given a clock of its own for.

The Pipecat adapter runs each pipeline on a clock of its own (`voice._clock`), and
Pipecat reads ``time.time``/``time.monotonic`` directly as well as through its event loop. The
dispatchers here answer from the clock bound to the calling thread, or from the real clock
for every other thread, at the cost of one dict lookup. Pipecat keeps a reference to
``time.time`` when it is imported (its VAD frames' ``default_factory``), so they must be in
place first: the plugin installs them when it loads, where pipecat or livekit is installed.

``time.perf_counter`` (and ``_ns``) answers from a thread's clock (its ``perf_counter()``)
only when that clock says ``perf = True`` (the LiveKit adapter's virtual clock, where the
adapter and LiveKit time latencies with it); every other thread, and every clock without it,
reads the real one.

A leaf module: it imports nothing of the package, so the plugin can load it for free.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Protocol

__all__ = [
    "ThreadClock",
    "bind",
    "install_time_shim",
    "is_time_shim",
    "real_monotonic",
    "real_perf_counter",
    "real_time",
    "unbind",
]

_REAL_TIME = time.time
_REAL_TIME_NS = time.time_ns
_REAL_MONOTONIC = time.monotonic
_REAL_MONOTONIC_NS = time.monotonic_ns
_REAL_PERF = time.perf_counter
_REAL_PERF_NS = time.perf_counter_ns


class ThreadClock(Protocol):
    """What a thread's clock answers."""

    def wall(self) -> float:
        """Its ``time.time()``."""
        ...

    def monotonic(self) -> float:
        """Its ``time.monotonic()``."""
        ...


_clocks: dict[int, ThreadClock] = {}
"""Thread ident -> the clock that thread reads."""
_perf_clocks: dict[int, Any] = {}
"""Thread ident -> the clock that thread's ``time.perf_counter`` reads (clocks with ``perf``)."""


def bind(clock: ThreadClock, ident: int | None = None, *, perf: bool = True) -> int:
    """Make thread ``ident`` (default: the calling one) read ``clock``; returns the ident.
    Its ``time.perf_counter`` reads the clock too when the clock says ``perf`` and ``perf`` is
    True (an executor's worker computes: it times its compute with the real one)."""
    ident = threading.get_ident() if ident is None else ident
    _clocks[ident] = clock
    if perf and getattr(clock, "perf", False):
        _perf_clocks[ident] = clock
    else:
        _perf_clocks.pop(ident, None)
    return ident


def unbind(ident: int, clock: ThreadClock) -> None:
    """Thread ``ident`` reads the real clock again (if it still reads ``clock``)."""
    if _clocks.get(ident) is clock:
        del _clocks[ident]
    if _perf_clocks.get(ident) is clock:
        del _perf_clocks[ident]


_get_ident = threading.get_ident
_find = _clocks.get
_find_perf = _perf_clocks.get
# The dispatchers below are called tens of thousands of times per conversation (every frame
# Pipecat stamps), so each looks its clock up inline rather than through a helper.


def _clock_here() -> ThreadClock | None:
    return _find(_get_ident()) if _clocks else None


def _time() -> float:
    clock = _find(_get_ident()) if _clocks else None
    return _REAL_TIME() if clock is None else clock.wall()


def _time_ns() -> int:
    clock = _find(_get_ident()) if _clocks else None
    return _REAL_TIME_NS() if clock is None else int(clock.wall() * 1e9)


def _monotonic() -> float:
    clock = _find(_get_ident()) if _clocks else None
    return _REAL_MONOTONIC() if clock is None else clock.monotonic()


def _monotonic_ns() -> int:
    clock = _find(_get_ident()) if _clocks else None
    return _REAL_MONOTONIC_NS() if clock is None else int(clock.monotonic() * 1e9)


def _perf_counter() -> float:
    clock = _find_perf(_get_ident()) if _perf_clocks else None
    return _REAL_PERF() if clock is None else float(clock.perf_counter())


def _perf_counter_ns() -> int:
    clock = _find_perf(_get_ident()) if _perf_clocks else None
    return _REAL_PERF_NS() if clock is None else int(clock.perf_counter() * 1e9)


_SHIMS = {
    "time": _time,
    "time_ns": _time_ns,
    "monotonic": _monotonic,
    "monotonic_ns": _monotonic_ns,
    "perf_counter": _perf_counter,
    "perf_counter_ns": _perf_counter_ns,
}


def install_time_shim() -> None:
    """Put the dispatchers in place of ``time.time``/``time.monotonic``/``time.perf_counter``
    (and ``_ns``). Idempotent."""
    for name, shim in _SHIMS.items():
        if getattr(time, name) is not shim:
            setattr(time, name, shim)


def is_time_shim(fn: Any) -> bool:
    """True when ``fn`` is one of the dispatchers."""
    return any(fn is shim for shim in _SHIMS.values())


def real_monotonic() -> float:
    """The real ``time.monotonic()``, whichever clock the thread reads."""
    return _REAL_MONOTONIC()


def real_time() -> float:
    """The real ``time.time()``."""
    return _REAL_TIME()


def real_perf_counter() -> float:
    """The real ``time.perf_counter()``, whichever clock the thread reads."""
    return _REAL_PERF()
