"""Checks over the whole call (``call_expect:``), run once the conversation is over.

The evaluators the expectation registry builds for ``call_expect``
(`pytest_agent_eval._expectations._call_expect`), kept here with every other evaluator class.
Each has ``evaluate(run: RunResult) -> EvalResult``. A check that could not see what it asserts
(an adapter that does not observe tool calls, a hook that cannot be imported or that raised)
errors, never passes: the run is then an ERROR, not a verdict on the agent.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..models import EvalResult, RunResult, ToolCall
from ._base import evaluate_safely, located, unobserved
from ._tools import _args_match, _call_differences, describe_calls, made_calls, refusals

__all__ = ["CallHookCheck", "ToolCalledCheck", "call_tool_calls", "evaluate_call"]


async def evaluate_call(checks: Sequence[Any], run: RunResult) -> list[EvalResult]:
    """The verdicts of ``call_expect``'s checks on a finished run, for the run's
    ``evaluations``; none for a run that broke off (an ERROR already: a check of the whole
    call would judge half of one)."""
    if not checks or run.error is not None or any(t.error is not None for t in run.turns):
        return []
    return list(await asyncio.gather(*(evaluate_safely(c, run) for c in checks)))


def call_tool_calls(run: RunResult) -> tuple[list[ToolCall], str | None]:
    """Every tool call of the run, before turn 1 and in each turn, in order; and why some
    could not be observed (the first turn's reason), or None."""
    calls = list(run.greeting.tool_calls) if run.greeting is not None else []
    unseen: str | None = None
    for turn in run.turns:
        calls += turn.tool_calls
        if unseen is None and turn.tool_calls_unobserved:
            unseen = f"turn {turn.index + 1}: {turn.tool_calls_unobserved}"
    return calls, unseen


@dataclass
class ToolCalledCheck:
    """Passes when ``tool`` was called at some point of the call, with matching ``args``
    when they are given.

    Args:
        tool: The tool's name.
        args: Expected arguments, or None (any call passes).
        mode: ``"subset"`` or ``"exact"``, as for ``tool_calls_args``.
        name: Display name in results.
    """

    tool: str
    args: Mapping[str, Any] | None = None
    mode: Literal["subset", "exact"] = "subset"
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            self.name = f"tool_called[{self.tool}]"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """The verdict on the whole run, naming the key it checks."""
        return located(self.check(run), self)

    def check(self, run: RunResult) -> EvalResult:
        """Look for a matching call among every tool call of the run."""
        calls, unseen = call_tool_calls(run)
        # A call the framework refused ran nothing: it is not the call this checks for.
        named = [c for c in made_calls(calls) if c.name == self.tool]
        if not named and unseen is not None:
            return unobserved(self.name, unseen)
        if not named:
            return EvalResult(
                False,
                f"{self.tool} was never called in the call{refusals(calls, [self.tool])} "
                f"(saw {describe_calls(calls)})",
                name=self.name,
            )
        if self.args is None:
            return EvalResult(True, f"{self.tool} called {len(named)} time(s)", name=self.name)
        want = json.dumps(dict(self.args), sort_keys=True, default=str)
        captured = [c for c in named if c.args is not None]
        if not captured:
            return unobserved(
                self.name,
                f"{self.tool} was called but its arguments were not captured; return "
                "ToolCall(name, args) from the agent or use an adapter that records them",
            )
        if any(_args_match(self.args, c.args or {}, self.mode) for c in captured):
            return EvalResult(
                True, f"{self.tool} called with {self.mode} of {want}", name=self.name
            )
        differences = "; ".join(
            f"call {number}: {_call_differences(self.args, c.args or {}, self.mode)}"
            for number, c in enumerate(captured[:3], start=1)
        )
        return EvalResult(
            False,
            f"no call to {self.tool} in the call has matching arguments ({self.mode} of "
            f"{want}): {differences}",
            name=self.name,
        )


@dataclass
class CallHookCheck:
    """Your own check of the whole call: ``target`` is ``"module:function"``, called with the
    run; it returns a bool, ``(passed, reason)`` or an `EvalResult`, and may be async.

    Args:
        target: Where the function is, importable from the rootdir (``checks.booking:booked``).
        name: Display name in results.
    """

    target: str
    name: str = "hook"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """Import the function, call it on the run and read its answer; what keeps it from
        answering (an import, an exception, an answer of another type) is an errored check."""
        return located(await self._verdict(run), self)

    async def _verdict(self, run: RunResult) -> EvalResult:
        module_name, _, attribute = self.target.partition(":")
        try:
            function = getattr(importlib.import_module(module_name), attribute)
        except (ImportError, AttributeError) as exc:
            return unobserved(
                self.name,
                f"cannot import {self.target!r} ({type(exc).__name__}: {exc}); name a function "
                "importable from the rootdir, as module:function",
            )
        try:
            answer = function(run)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as exc:  # the user's check failed to answer: not a verdict
            return unobserved(self.name, f"{self.target} raised {type(exc).__name__}: {exc}")
        if isinstance(answer, EvalResult):
            if not answer.name:
                answer.name = self.name
            return answer
        if isinstance(answer, bool):
            return EvalResult(answer, f"{self.target} returned {answer}", name=self.name)
        if (
            isinstance(answer, tuple)
            and len(answer) == 2
            and isinstance(answer[0], bool)
            and isinstance(answer[1], str)
        ):
            return EvalResult(answer[0], answer[1], name=self.name)
        return unobserved(
            self.name,
            f"{self.target} returned {type(answer).__name__} {answer!r:.80}; return a bool, "
            "(passed, reason) or an EvalResult",
        )
