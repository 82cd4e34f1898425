"""Evaluators: deterministic checks and LLM judges over one turn.

Every evaluator has ``async evaluate(ctx: TurnContext) -> EvalResult``. The modules the earlier
package had (``contains``, ``tool_call``, ``judge``, ``base``) import as before.

Which evaluators a turn gets is decided by the expectation registry
(`pytest_agent_eval.expectations`); `build_evaluators` here is that registry's builder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models import EvalResult, Expect, ToolCall
from ._judge_settings import JudgeSettings
from .base import Evaluator, evaluate_safely, evaluator_name
from .reply import ContainsEvaluator, LatencyEvaluator
from .tools import ToolCallArgsEvaluator, ToolCallEvaluator

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
    "build_evaluators",
    "evaluate_safely",
    "evaluator_name",
]

_JUDGES = ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator")


def __getattr__(name: str) -> Any:
    # The judges pull in pydantic-ai; import them only when someone asks.
    if name in _JUDGES:
        from . import judge

        return getattr(judge, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_evaluators(expect: Expect, judge_settings: JudgeSettings | None = None) -> list[Any]:
    """The evaluators a turn's `Expect` asks for; see `pytest_agent_eval.expectations`."""
    # The registry names these evaluator classes, so it is imported here on use, not at the top.
    from ..expectations import build_evaluators as build

    return build(expect, judge_settings)
