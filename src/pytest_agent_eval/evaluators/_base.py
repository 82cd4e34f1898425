"""The evaluator protocol: one method over one context.

An evaluator is any object with ``async evaluate(ctx: TurnContext) -> EvalResult`` (as in the
earlier package); a plain ``def evaluate`` works too, because the runner awaits only what is
awaitable. The runner fills in the result's ``name`` when empty, and turns an exception into an
errored result (``errored=True``) so a crashing evaluator never sinks the other runs.

Our deterministic evaluators derive from `DeterministicEvaluator`: their public ``evaluate`` is
a coroutine, and the runner calls their synchronous ``_check`` directly (no coroutine per check)
unless a subclass overrides ``evaluate``.
"""

from __future__ import annotations

import inspect
import re
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

from .. import _text
from .._text import patterns_as_written
from ..models import EvalResult, Greeting, RunResult, TurnContext

__all__ = [
    "CheckSource",
    "DeterministicEvaluator",
    "Evaluator",
    "evaluate_safely",
    "evaluator_name",
    "located",
    "shorten",
    "source_of",
    "text_problems",
    "traceback_of",
    "unobserved",
    "with_source",
]


@runtime_checkable
class Evaluator(Protocol):
    """Anything that can judge one turn.

    Example:
        ```python
        from dataclasses import dataclass

        from pytest_agent_eval import EvalResult, TurnContext


        @dataclass
        class PolitenessEvaluator:
            word: str = "please"

            async def evaluate(self, ctx: TurnContext) -> EvalResult:
                if self.word in ctx.reply.lower():
                    return EvalResult(passed=True)
                return EvalResult(passed=False, reasoning=f"{self.word!r} not in the reply")
        ```
    """

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        """Judge one turn (a synchronous ``evaluate`` returning `EvalResult` is accepted too)."""
        ...


class DeterministicEvaluator:
    """Base of the evaluators that need no I/O: ``_check`` decides, ``evaluate`` awaits it.

    ``await evaluator.evaluate(ctx)`` is the public call, as for every evaluator; the runner
    calls ``_check`` itself when ``evaluate`` is not overridden.
    """

    def _check(self, ctx: TurnContext) -> EvalResult:
        raise NotImplementedError

    async def evaluate(self, ctx: TurnContext) -> EvalResult:
        """The verdict on one turn."""
        return self._check(ctx)


def _sync_check(evaluator: Any) -> Any:
    """The synchronous ``_check`` of a `DeterministicEvaluator` whose ``evaluate`` is ours."""
    if (
        isinstance(evaluator, DeterministicEvaluator)
        and type(evaluator).evaluate is DeterministicEvaluator.evaluate
    ):
        return evaluator._check
    return None


@dataclass(frozen=True, slots=True)
class CheckSource:
    """The transcript key a check was built from, and where that key is written, so its
    verdict can name it: ``turns[0].expect.reply_contains_all (weather.yaml:11)``."""

    key: str
    """The key's path: inside its turn (``expect.reply_contains_all``, ``interrupt``) or, with
    ``in_turn`` False, from the top of the transcript (``greeting``)."""
    location: str | None = None
    """``file:line`` of the key, for a transcript loaded from YAML."""
    in_turn: bool = True

    def path(self, ctx: Any) -> str:
        """The key's full path, with the turn of ``ctx`` (``turns[0].expect....``)."""
        if self.in_turn and isinstance(ctx, TurnContext):
            return f"turns[{ctx.turn_index}].{self.key}"
        return self.key

    def at(self, locations: dict[str, str]) -> CheckSource:
        """This source with its location looked up in ``locations`` (`Turn.locations`)."""
        return replace(self, location=locations.get(self.key, self.location))


_SOURCE = "_agent_eval_source"


def with_source(evaluator: Any, source: CheckSource) -> Any:
    """``evaluator``, noted as the check of ``source`` (an attribute of the instance: our
    expectations build a fresh evaluator per turn). Returns the same object."""
    object.__setattr__(evaluator, _SOURCE, source)
    return evaluator


def source_of(evaluator: Any) -> CheckSource | None:
    """The key an evaluator was built from (`with_source`), or None (the user's own)."""
    source = getattr(evaluator, _SOURCE, None)
    return source if isinstance(source, CheckSource) else None


def located(result: EvalResult, evaluator: Any, ctx: Any = None) -> EvalResult:
    """``result`` naming the key and location of ``evaluator``'s check, when it has them and
    the result does not name its own."""
    source = source_of(evaluator)
    if source is not None and result.key is None:
        result.key = source.path(ctx)
        result.location = source.location
    return result


def unobserved(name: str, why: str) -> EvalResult:
    """The verdict of a check that could not see what it asserts: errored, never passed."""
    return EvalResult(False, f"cannot be checked: {why}", name=name, errored=True)


def evaluator_name(evaluator: Any) -> str:
    """The display name: an explicit ``name`` attribute, else the class name."""
    name = getattr(evaluator, "name", None)
    return name if isinstance(name, str) and name else type(evaluator).__name__


async def evaluate_safely(
    evaluator: Any, ctx: TurnContext | Greeting | RunResult | None
) -> EvalResult:
    """Run one evaluator; exceptions become an errored `EvalResult`, never escape.

    ``ctx`` is the turn, for a greeting check the run's greeting (None: none was heard), for a
    check of the whole call (``call_expect``) the finished run.
    """
    name = evaluator_name(evaluator)
    try:
        check = _sync_check(evaluator)
        outcome = check(ctx) if check is not None else evaluator.evaluate(ctx)
        if inspect.isawaitable(outcome):
            outcome = await outcome
    except Exception as exc:  # the run boundary: record, don't raise
        failed = EvalResult(
            passed=False,
            reasoning=f"evaluator raised {type(exc).__name__}: {exc}",
            name=name,
            errored=True,
            traceback=traceback_of(exc),
        )
        return located(failed, evaluator, ctx)
    if isinstance(outcome, bool):
        outcome = EvalResult(passed=outcome)
    if not isinstance(outcome, EvalResult):
        wrong = EvalResult(
            passed=False,
            reasoning=f"evaluator returned {type(outcome).__name__}, expected EvalResult",
            name=name,
            errored=True,
        )
        return located(wrong, evaluator, ctx)
    if not outcome.name:
        outcome.name = name
    return located(outcome, evaluator, ctx)


TRACEBACK_FRAMES = 20
"""Frames kept of an evaluator's traceback (the innermost: where it broke)."""


def traceback_of(exc: BaseException) -> str:
    """``exc``'s traceback as Python prints it, its innermost `TRACEBACK_FRAMES` frames."""
    return "".join(traceback.format_exception(exc, limit=-TRACEBACK_FRAMES)).rstrip()


def shorten(text: str, limit: int = 200) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis, for failure reasons."""
    return _text.shorten(text, limit)


def text_problems(
    text: str,
    label: str,
    *,
    contains_any: Sequence[str] = (),
    contains_all: Sequence[str] = (),
    contains_none: Sequence[str] = (),
    matches_any: Sequence[str] = (),
    matches_all: Sequence[str] = (),
) -> list[str]:
    """What is wrong with ``text`` against the usual text checks (all case-insensitive; regexes
    with ``re.search``), one phrase per failed check naming ``label``; empty when all pass."""
    lowered = text.lower()
    problems: list[str] = []
    if contains_any and not any(s.lower() in lowered for s in contains_any):
        problems.append(f"{label} contains none of {list(contains_any)!r}")
    missing = [s for s in contains_all if s.lower() not in lowered]
    if missing:
        problems.append(f"{label} is missing {missing!r}")
    found = [s for s in contains_none if s.lower() in lowered]
    if found:
        problems.append(f"{label} contains {found!r}, which must not appear")
    if matches_any and not any(re.search(p, text, re.IGNORECASE) for p in matches_any):
        problems.append(f"{label} matches none of the patterns {patterns_as_written(matches_any)}")
    unmatched = [p for p in matches_all if not re.search(p, text, re.IGNORECASE)]
    if unmatched:
        problems.append(f"{label} does not match {patterns_as_written(unmatched)}")
    return problems
