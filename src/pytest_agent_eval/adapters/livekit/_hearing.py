"""Moved to `pytest_agent_eval.voice._hearing`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice import _hearing
from ...voice._hearing import (
    Hearing,
)

__all__ = ["Hearing"]

sys.modules[__name__] = _hearing
