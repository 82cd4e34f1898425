"""Moved to `pytest_agent_eval.voice._tts._espeak`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice._tts import _espeak
from ...voice._tts._espeak import (
    EspeakBackend,
)

__all__ = ["EspeakBackend"]

sys.modules[__name__] = _espeak
