"""Moved to `pytest_agent_eval.adapters.livekit.session._barge_in`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .session import _barge_in
from .session._barge_in import (
    BargeInTurns,
    interrupting_turn,
    played_words,
    word_offset_s,
)

__all__ = ["BargeInTurns", "interrupting_turn", "played_words", "word_offset_s"]

sys.modules[__name__] = _barge_in
