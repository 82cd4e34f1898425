"""The order of a turn's tool calls (``tool_calls_ordered``).

The evaluators the expectation registry builds for these keys
(`pytest_agent_eval._expectations._tool_calls`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..models import EvalResult, TurnContext
from ._base import DeterministicEvaluator, unobserved
from ._tools import describe_calls, is_subsequence, made_calls, refusals

__all__ = ["ToolOrderEvaluator"]


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
        names = [str(c) for c in made_calls(ctx.tool_calls)]
        wanted = list(self.order)
        seen = describe_calls(ctx.tool_calls)
        missing = [n for n in wanted if n not in names]
        if missing:
            refused = refusals(ctx.tool_calls, missing)
            return EvalResult(
                False,
                f"the order {wanted!r} cannot hold: {missing!r} not called{refused} (saw {seen})",
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
