"""Moved to `pytest_agent_eval.voice._tts._espeak_worker`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice._tts import _espeak_worker
from ...voice._tts._espeak_worker import (
    main,
)

__all__ = ["main"]

sys.modules[__name__] = _espeak_worker
