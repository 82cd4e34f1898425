"""Evaluators: deterministic checks and LLM judges over one turn.

Every evaluator has ``async evaluate(ctx: TurnContext) -> EvalResult``. The modules the earlier
package had (``contains``, ``tool_call``, ``judge``, ``base``) import as before.

Which evaluators a turn gets is decided by the expectation registry
(`pytest_agent_eval._expectations`), which sits above this package and imports it, never the
reverse; the earlier ``build_evaluators`` here is served by `pytest_agent_eval.legacy`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import EvalResult, ToolCall
from ._base import Evaluator, evaluate_safely, evaluator_name
from ._reply import ContainsEvaluator, LatencyEvaluator
from ._tools import ToolCallArgsEvaluator, ToolCallEvaluator

if TYPE_CHECKING:
    from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

__all__ = [
    "ContainsEvaluator",
    "EvalResult",
    "Evaluator",
    "JudgeEvaluator",
    "LatencyEvaluator",
    "ToolCall",
    "ToolCallArgsEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "ToolCallEvaluator",
    "evaluate_safely",
    "evaluator_name",
]

_JUDGES = ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator")


def __getattr__(name: str) -> Any:
    # The judges pull in pydantic-ai; import them only when someone asks.
    if name in _JUDGES:
        from . import judge

        return getattr(judge, name)
    if name == "build_evaluators":  # the earlier package's; found by name, never imported here
        import importlib

        return importlib.import_module("pytest_agent_eval.legacy").moved_attr(__name__, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
