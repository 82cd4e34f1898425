"""Moved to `pytest_agent_eval.voice._effects`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _effects
from ..voice._effects import (
    PostProcess,
    normalize_level,
    postprocess,
    render_phrases,
    trim_silence,
)

__all__ = ["PostProcess", "normalize_level", "postprocess", "render_phrases", "trim_silence"]

sys.modules[__name__] = _effects
