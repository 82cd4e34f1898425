"""Moved to `pytest_agent_eval.voice._speech`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .voice import _speech
from .voice._speech import (
    MAX_PAUSE_S,
    Pause,
    PauseMarkupError,
    Phrase,
    has_pause_markup,
    phrases_of,
    split_speech,
    spoken_text,
)

__all__ = [
    "MAX_PAUSE_S",
    "Pause",
    "PauseMarkupError",
    "Phrase",
    "has_pause_markup",
    "phrases_of",
    "split_speech",
    "spoken_text",
]

sys.modules[__name__] = _speech
