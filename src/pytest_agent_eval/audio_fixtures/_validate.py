"""Moved to `pytest_agent_eval.voice._validate`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _validate
from ..voice._validate import (
    DEFAULT_MAX_FIXTURE_S,
    RECORDING_FIX,
    SYNTHESIZE_COMMAND,
    TOO_LONG_FIX,
    audio_problem,
    decoded_audio_mime,
    max_fixture_s,
    set_max_fixture_s,
    synthesize_command,
    validate_fixture,
)

__all__ = [
    "DEFAULT_MAX_FIXTURE_S",
    "RECORDING_FIX",
    "SYNTHESIZE_COMMAND",
    "TOO_LONG_FIX",
    "audio_problem",
    "decoded_audio_mime",
    "max_fixture_s",
    "set_max_fixture_s",
    "synthesize_command",
    "validate_fixture",
]

sys.modules[__name__] = _validate
