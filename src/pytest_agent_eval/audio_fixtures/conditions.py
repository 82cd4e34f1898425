"""Moved to `pytest_agent_eval.voice._degrade`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _degrade
from ..voice._degrade import (
    ConditionLike,
    apply,
    babble_sources,
)

__all__ = ["ConditionLike", "apply", "babble_sources"]

sys.modules[__name__] = _degrade
