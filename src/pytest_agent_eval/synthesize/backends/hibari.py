"""Moved to `pytest_agent_eval.voice._tts._hibari`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice._tts import _hibari
from ...voice._tts._hibari import (
    HibariBackend,
)

__all__ = ["HibariBackend"]

sys.modules[__name__] = _hibari
