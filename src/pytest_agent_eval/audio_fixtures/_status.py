"""Moved to `pytest_agent_eval.voice._status`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _status
from ..voice._status import (
    INTERRUPTED,
    LEGACY_NOTE,
    MARKUP_FIX,
    RECORDING_NOTE,
    FixtureState,
    Verdict,
    judge_fixture,
    prove_fixture_text,
)

__all__ = [
    "INTERRUPTED",
    "LEGACY_NOTE",
    "MARKUP_FIX",
    "RECORDING_NOTE",
    "FixtureState",
    "Verdict",
    "judge_fixture",
    "prove_fixture_text",
]

sys.modules[__name__] = _status
