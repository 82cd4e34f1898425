"""Moved to `pytest_agent_eval.voice._tts._openai`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice._tts import _openai
from ...voice._tts._openai import (
    OPENAI_MODELS,
    OPENAI_VOICES,
    OpenAIBackend,
    SpeechAPIError,
)

__all__ = ["OPENAI_MODELS", "OPENAI_VOICES", "OpenAIBackend", "SpeechAPIError"]

sys.modules[__name__] = _openai
