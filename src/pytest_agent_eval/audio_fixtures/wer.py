"""Moved to `pytest_agent_eval.voice._wer`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _wer
from ..voice._wer import (
    normalize_for_wer,
    word_error_rate,
)

__all__ = ["normalize_for_wer", "word_error_rate"]

sys.modules[__name__] = _wer
