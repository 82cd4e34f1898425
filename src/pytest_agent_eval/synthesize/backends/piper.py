"""Moved to `pytest_agent_eval.voice._tts._piper`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice._tts import _piper
from ...voice._tts._piper import (
    PiperBackend,
)

__all__ = ["PiperBackend"]

sys.modules[__name__] = _piper
