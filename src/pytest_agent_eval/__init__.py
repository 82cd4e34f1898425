"""pytest-agent-eval: evaluate voice and text AI agents with pytest.

Transcripts (YAML or Python) run N times against your agent; a test passes when the share of
passing runs reaches its threshold. This module is the public surface; everything users need
is importable from here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import TranscriptError
from .evaluators import (
    ContainsEvaluator,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
)
from .models import (
    AgentReply,
    EvalResult,
    Expect,
    JudgeConfig,
    ToolCall,
    ToolCallArgsConfig,
    Transcript,
    TranscriptResult,
    Turn,
    TurnContext,
)

if TYPE_CHECKING:
    from .evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

__version__ = "0.1.0"

__all__ = [
    "AgentReply",
    "ContainsEvaluator",
    "EvalResult",
    "Expect",
    "JudgeConfig",
    "JudgeEvaluator",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "Transcript",
    "TranscriptError",
    "TranscriptResult",
    "Turn",
    "TurnContext",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Judges import pydantic-ai; load them on first use, not with the plugin.
    if name in ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator"):
        from .evaluators import judge

        return getattr(judge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
