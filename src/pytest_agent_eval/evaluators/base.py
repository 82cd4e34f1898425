"""The evaluator protocol: one method over one context.

An evaluator is any object with ``evaluate(ctx: TurnContext) -> EvalResult``, sync or async.
The runner awaits only what is awaitable, fills in the result's ``name`` when empty, and turns
an exception into an errored result (``errored=True``) so a crashing evaluator never sinks the
other runs.
"""

from __future__ import annotations

import inspect
from typing import Any, Protocol, runtime_checkable

from .. import _text
from ..models import EvalResult, TurnContext

__all__ = ["Evaluator", "evaluate_safely", "evaluator_name", "shorten"]


@runtime_checkable
class Evaluator(Protocol):
    """Anything that can judge one turn."""

    def evaluate(self, ctx: TurnContext) -> Any:
        """Return an `EvalResult` (or an awaitable of one)."""
        ...


def evaluator_name(evaluator: Any) -> str:
    """The display name: an explicit ``name`` attribute, else the class name."""
    name = getattr(evaluator, "name", None)
    return name if isinstance(name, str) and name else type(evaluator).__name__


async def evaluate_safely(evaluator: Any, ctx: TurnContext) -> EvalResult:
    """Run one evaluator; exceptions become an errored `EvalResult`, never escape."""
    name = evaluator_name(evaluator)
    try:
        outcome = evaluator.evaluate(ctx)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as exc:  # the run boundary: record, don't raise
        return EvalResult(
            passed=False,
            reasoning=f"evaluator raised {type(exc).__name__}: {exc}",
            name=name,
            errored=True,
        )
    if isinstance(outcome, bool):
        outcome = EvalResult(passed=outcome)
    if not isinstance(outcome, EvalResult):
        return EvalResult(
            passed=False,
            reasoning=f"evaluator returned {type(outcome).__name__}, expected EvalResult",
            name=name,
            errored=True,
        )
    if not outcome.name:
        outcome.name = name
    return outcome


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for failure reasons."""
    return _text.shorten(text, limit)
