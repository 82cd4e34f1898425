"""Moved to `pytest_agent_eval.adapters.livekit.offline._scripted`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from .offline import _scripted
from .offline._scripted import (
    Rule,
    ScriptContext,
    ScriptedLLM,
    parse_number,
)

__all__ = ["Rule", "ScriptContext", "ScriptedLLM", "parse_number"]

sys.modules[__name__] = _scripted
