"""Moved to `pytest_agent_eval.adapters.livekit.offline._tts`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .offline import _tts
from .offline._tts import (
    SynthesizerTTS,
)

__all__ = ["SynthesizerTTS"]

sys.modules[__name__] = _tts
