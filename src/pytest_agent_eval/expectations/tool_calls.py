"""``tool_calls_include``, ``tool_calls_exclude`` and ``tool_calls_ordered``: which tools were
called in the turn, and in what order."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..evaluators.base import DeterministicEvaluator
from ..evaluators.tools import ToolCallEvaluator, describe_calls, is_subsequence
from ..models import EvalResult, Expect, TurnContext
from .base import Expectation, ExpectKey, keyed, string_list, unobserved

__all__ = ["EXPECTATION", "ToolOrderEvaluator"]


@dataclass
class ToolOrderEvaluator(DeterministicEvaluator):
    """``tool_calls_ordered``: the tools of ``tool_calls_include`` were called in that order,
    other calls allowed in between. A tool that was not called at all fails it too (the order
    cannot hold); ``tool_calls_include`` says which.

    Args:
        order: The tool names, in the order they must be called.
        name: Display name in results.
    """

    order: Sequence[str]
    name: str = "tool_calls"

    def _check(self, ctx: TurnContext) -> EvalResult:
        if ctx.tool_calls_unobserved:
            return unobserved(self.name, ctx.tool_calls_unobserved)
        names = [str(c) for c in ctx.tool_calls]
        wanted = list(self.order)
        seen = describe_calls(ctx.tool_calls)
        missing = [n for n in wanted if n not in names]
        if missing:
            return EvalResult(
                False,
                f"the order {wanted!r} cannot hold: {missing!r} not called (saw {seen})",
                self.name,
            )
        if not is_subsequence(wanted, names):
            return EvalResult(
                False, f"tool calls not in the order {wanted!r} (saw {seen})", self.name
            )
        return EvalResult(True, f"tool calls in the order {wanted!r} ({seen})", self.name)


@dataclass
class _OrderOfNothing(DeterministicEvaluator):
    """``tool_calls_ordered: true`` with no ``tool_calls_include``: an order of no tools.
    It errors instead of passing, since it asserts something it has nothing to check against."""

    name: str = "tool_calls_ordered"

    def _check(self, ctx: TurnContext) -> EvalResult:
        return unobserved(
            self.name,
            "tool_calls_ordered: true names no tools to order; list them, in their order, "
            "in tool_calls_include (or drop tool_calls_ordered)",
        )


def _checks(expect: Expect) -> list[Any]:
    # One check per key, so a failure names the key (and line) that failed.
    checks: list[Any] = []
    if expect.tool_calls_include:
        include = list(expect.tool_calls_include)
        checks.append(keyed(ToolCallEvaluator(include=include), "tool_calls_include"))
        if expect.tool_calls_ordered:
            checks.append(keyed(ToolOrderEvaluator(include), "tool_calls_ordered"))
    elif expect.tool_calls_ordered:
        checks.append(keyed(_OrderOfNothing(), "tool_calls_ordered"))
    if expect.tool_calls_exclude:
        exclude = list(expect.tool_calls_exclude)
        checks.append(keyed(ToolCallEvaluator(exclude=exclude), "tool_calls_exclude"))
    return checks


EXPECTATION = Expectation(
    name="tool_calls",
    keys=(
        ExpectKey(
            name="tool_calls_include",
            schema=string_list(),
            description="Every one of these tools is called in this turn.",
            example=["check_availability", "create_booking"],
        ),
        ExpectKey(
            name="tool_calls_exclude",
            schema=string_list(),
            description="None of these tools is called in this turn.",
            example=["cancel_booking"],
        ),
        ExpectKey(
            name="tool_calls_ordered",
            schema={"type": "boolean"},
            description="If true, tool_calls_include is called in this order "
            "(other calls may come in between).",
            example=True,
        ),
    ),
    checks=_checks,
)
