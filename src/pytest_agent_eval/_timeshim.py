"""Moved to `pytest_agent_eval.voice._timeshim`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .voice import _timeshim
from .voice._timeshim import (
    ThreadClock,
    bind,
    install_time_shim,
    is_time_shim,
    real_monotonic,
    real_time,
    unbind,
)

__all__ = [
    "ThreadClock",
    "bind",
    "install_time_shim",
    "is_time_shim",
    "real_monotonic",
    "real_time",
    "unbind",
]

sys.modules[__name__] = _timeshim
