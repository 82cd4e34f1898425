"""pytest-agent-eval: evaluate voice and text AI agents with pytest.

Transcripts (YAML or Python) run N times against your agent; a test passes when the share of
passing runs reaches its threshold. This module is the public surface and holds only
re-exports: every name the documentation teaches (the seed's names, the error classes, the
records a transcript and its results are made of, the adapter protocol, the settings and the
loaders), and `AgentEval` (the class of the ``agent_eval`` fixture). Old import paths keep
working through `pytest_agent_eval.legacy`, with a warning naming the new one.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# onnxruntime (under the Silero VAD, the offline voice and Whisper) otherwise tries to send usage
# telemetry from every process that loads a model; nothing may leave the machine at run time.
# Set before any of them is loaded: pytest imports this plugin before any conftest.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

# Imported first, for its effect: pytest would rewrite the asserts of every module below this
# one (it marks a plugin's whole distribution); importing it takes the package out of that.
from ._compat import pytest_rewrite as _pytest_rewrite  # noqa: F401

# isort: split
from . import legacy
from .adapters import AgentAdapter, CallableAdapter, Conversation, ConversationInfo, TurnInput
from .errors import (
    AdapterError,
    AgentCrashError,
    AgentEvalError,
    AgentFailedError,
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
    AgentSpeech,
    AgentTurn,
    AudioCondition,
    BargeIn,
    Case,
    EvalResult,
    Expect,
    Greeting,
    GreetingExpect,
    Handoff,
    InterruptConfig,
    JudgeConfig,
    Message,
    RunResult,
    ToolCall,
    ToolCallArgsConfig,
    ToolCallOutcomeConfig,
    Transcript,
    TranscriptResult,
    Turn,
    TurnContext,
    TurnResult,
    Usage,
    Variant,
    VoiceSettings,
)

if TYPE_CHECKING:
    from ._config import Settings, load_settings
    from ._expansion import expand
    from ._fixture import AgentEval
    from ._loader import load_transcript_file, load_transcripts
    from ._runner import RunSettings
    from .evaluators._judge_settings import JudgeSettings
    from .evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

legacy.install()

# The one place the version is written (pyproject.toml reads it from here).
__version__ = "0.4.0"

__all__ = [
    "AdapterError",
    "AgentAdapter",
    "AgentCrashError",
    "AgentEval",
    "AgentEvalError",
    "AgentFailedError",
    "AgentReply",
    "AgentSpeech",
    "AgentTimeoutError",
    "AgentTurn",
    "AudioCondition",
    "AudioFixtureError",
    "BargeIn",
    "CallableAdapter",
    "Case",
    "ConfigError",
    "ContainsEvaluator",
    "Conversation",
    "ConversationInfo",
    "EvalResult",
    "Evaluator",
    "Expect",
    "Greeting",
    "GreetingExpect",
    "Handoff",
    "InterruptConfig",
    "JudgeConfig",
    "JudgeError",
    "JudgeEvaluator",
    "JudgeSettings",
    "Message",
    "MissingExtraError",
    "RunResult",
    "RunSettings",
    "Settings",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "ToolCallOutcomeConfig",
    "Transcript",
    "TranscriptError",
    "TranscriptResult",
    "Turn",
    "TurnContext",
    "TurnInput",
    "TurnResult",
    "Usage",
    "Variant",
    "VoiceSettings",
    "__version__",
    "expand",
    "load_settings",
    "load_transcript_file",
    "load_transcripts",
]

# Loaded on first use, not with the package: the judges' verdict machinery, the pytest-side
# AgentEval (which pulls in the runner and pytest), the runner's settings, the settings reader
# and the YAML loader.
_LAZY = {
    "JudgeEvaluator": "evaluators.judge",
    "ToolCallArgsJudgeEvaluator": "evaluators.judge",
    "AgentEval": "_fixture",
    "JudgeSettings": "evaluators._judge_settings",
    "RunSettings": "_runner",
    "Settings": "_config",
    "load_settings": "_config",
    "expand": "_expansion",
    "load_transcript_file": "_loader",
    "load_transcripts": "_loader",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f".{module}", __name__), name)
