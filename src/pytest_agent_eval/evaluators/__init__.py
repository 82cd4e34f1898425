"""Evaluators: deterministic checks, LLM judges, and the builder turning `Expect` into them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..config import JudgeSettings
from ..models import Expect
from .base import Evaluator, evaluate_safely, evaluator_name
from .reply import ContainsEvaluator, LatencyEvaluator
from .tools import ToolCallArgsEvaluator, ToolCallEvaluator

if TYPE_CHECKING:
    from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

__all__ = [
    "ContainsEvaluator",
    "Evaluator",
    "JudgeEvaluator",
    "LatencyEvaluator",
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
    """The evaluators a turn's `Expect` asks for, in a stable order.

    Reply checks come first, then tool checks, then voice checks, then judges (the slow,
    paid ones), then the user's own ``expect.evaluators``.
    """
    evaluators: list[Any] = []
    if (
        expect.reply_contains_any
        or expect.reply_contains_all
        or expect.reply_matches_any
        or expect.reply_matches_all
    ):
        evaluators.append(
            ContainsEvaluator(
                any_of=list(expect.reply_contains_any),
                all_of=list(expect.reply_contains_all),
                matches_any=list(expect.reply_matches_any),
                matches_all=list(expect.reply_matches_all),
            )
        )
    if expect.tool_calls_include or expect.tool_calls_exclude:
        evaluators.append(
            ToolCallEvaluator(
                include=list(expect.tool_calls_include),
                exclude=list(expect.tool_calls_exclude),
                ordered=expect.tool_calls_ordered,
            )
        )
    for entry in expect.tool_calls_args:
        if entry.args is not None:
            evaluators.append(ToolCallArgsEvaluator(entry.tool, entry.args, entry.mode))  # type: ignore[arg-type]
    if expect.heard_contains_any or expect.heard_contains_all:
        evaluators.append(
            ContainsEvaluator(
                any_of=list(expect.heard_contains_any),
                all_of=list(expect.heard_contains_all),
                target="heard",
            )
        )
    if expect.max_latency_ms is not None:
        evaluators.append(LatencyEvaluator(expect.max_latency_ms))
    judged_args = [e for e in expect.tool_calls_args if e.judge is not None]
    if expect.judge is not None or judged_args:
        from .judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

        if expect.judge is not None:
            evaluators.append(
                JudgeEvaluator(expect.judge.rubric, expect.judge.model, settings=judge_settings)
            )
        for entry in judged_args:
            assert entry.judge is not None
            evaluators.append(
                ToolCallArgsJudgeEvaluator(
                    entry.tool, entry.judge.rubric, entry.judge.model, settings=judge_settings
                )
            )
    evaluators.extend(expect.evaluators)
    return evaluators
