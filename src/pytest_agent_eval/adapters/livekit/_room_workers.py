"""Moved to `pytest_agent_eval.adapters.livekit.room._workers`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .room import _workers
from .room._workers import (
    WorkerFile,
    find_worker_files,
    no_worker_advice,
)

__all__ = ["WorkerFile", "find_worker_files", "no_worker_advice"]

sys.modules[__name__] = _workers
