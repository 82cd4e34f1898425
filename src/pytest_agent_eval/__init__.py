"""pytest-agent-eval: evaluate voice and text AI agents with pytest.

Transcripts (YAML or Python) run N times against your agent; a test passes when the share of
passing runs reaches its threshold. This module is the public surface and holds only
re-exports: the names of the seed documentation, the error classes, the per-run and per-turn
results, and `AgentEval` (the class of the ``agent_eval`` fixture).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# onnxruntime (under the Silero VAD, the offline voice and Whisper) otherwise tries to send usage
# telemetry from every process that loads a model; nothing may leave the machine at run time.
# Set before any of them is loaded: pytest imports this plugin before any conftest.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from .errors import (
    AdapterError,
    AgentEvalError,
    AgentTimeoutError,
    AudioFixtureError,
    ConfigError,
    JudgeError,
    MissingExtraError,
    TranscriptError,
)
from .evaluators import (
    ContainsEvaluator,
    Evaluator,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
)
from .models import (
    AgentReply,
    EvalResult,
    Expect,
    JudgeConfig,
    RunResult,
    ToolCall,
    ToolCallArgsConfig,
    Transcript,
    TranscriptResult,
    Turn,
    TurnContext,
    TurnResult,
)

if TYPE_CHECKING:
    from .evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator
    from .fixture import AgentEval

# The one place the version is written (pyproject.toml reads it from here).
__version__ = "0.4.0"

__all__ = [
    "AdapterError",
    "AgentEval",
    "AgentEvalError",
    "AgentReply",
    "AgentTimeoutError",
    "AudioFixtureError",
    "ConfigError",
    "ContainsEvaluator",
    "EvalResult",
    "Evaluator",
    "Expect",
    "JudgeConfig",
    "JudgeError",
    "JudgeEvaluator",
    "MissingExtraError",
    "RunResult",
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
    "TurnResult",
    "__version__",
]


def __getattr__(name: str) -> Any:
    # Loaded on first use, not with the package: the judges' verdict machinery, and the
    # pytest-side AgentEval (which pulls in the runner and pytest).
    if name in ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator"):
        from .evaluators import judge

        return getattr(judge, name)
    if name == "AgentEval":
        from .fixture import AgentEval

        return AgentEval
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
