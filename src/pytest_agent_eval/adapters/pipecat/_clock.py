"""Moved to `pytest_agent_eval.voice._clock` (it imports no Pipecat: a framework-neutral clock).

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ...voice import _clock
from ...voice._clock import (
    NetworkRefusedError,
    PipelineClock,
    PipelineLoop,
    PipelineThread,
)

__all__ = ["NetworkRefusedError", "PipelineClock", "PipelineLoop", "PipelineThread"]

sys.modules[__name__] = _clock
