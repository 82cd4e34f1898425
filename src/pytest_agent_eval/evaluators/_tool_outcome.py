"""How a turn's tool calls ended (``tool_calls_outcome``).

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._tool_outcome`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .._text import compact_json, shorten
from ..models import EvalResult, ToolCall, TurnContext
from ._base import DeterministicEvaluator, text_problems, unobserved
from ._tools import describe_calls

__all__ = ["ToolOutcomeEvaluator", "given_back"]


def given_back(call: ToolCall) -> str:
    """What a call gave back, as text: its output, and for a failed or refused call its error
    text first (a framework may hide the exception from the model behind a generic output)."""
    output = call.output
    failed = call.is_error or call.refused
    parts = [call.error] if failed and call.error else []
    if output is not None and output != "":
        text = output if isinstance(output, str) else compact_json(output)
        if text not in parts:
            parts.append(text)
    return "\n".join(parts)


def _how_it_ended(call: ToolCall) -> str:
    outcome = call.outcome
    if outcome == "pending":
        return "was still running when the turn ended"
    if outcome == "cancelled":
        return "was cancelled before it returned (an interruption stopped it)"
    if outcome == "refused":
        why = shorten(call.error or given_back(call) or "no reason given", 160)
        return f"was refused by the framework before it ran ({why!r})"
    if outcome == "error":
        return f"failed ({shorten(given_back(call) or 'no error text', 160)!r})"
    text = given_back(call)
    return f"returned {shorten(text, 160)!r}" if text else "returned nothing"


@dataclass
class ToolOutcomeEvaluator(DeterministicEvaluator):
    """Passes when some call to ``tool`` in the turn ended as ``status`` and gave back text
    containing and matching what is asked.

    Args:
        tool: The tool whose calls to check.
        status: ``"ok"``, ``"error"``, ``"cancelled"``, ``"refused"``, or None for any.
        output_contains: Strings that must all appear (case-insensitive).
        output_matches: Regexes that must all match (case-insensitive).
        name: Display name in results.
    """

    tool: str
    status: Literal["ok", "error", "cancelled", "refused"] | None = None
    output_contains: Sequence[str] = field(default_factory=list)
    output_matches: Sequence[str] = field(default_factory=list)
    name: str = "tool_calls_outcome"

    def __post_init__(self) -> None:
        for pattern in self.output_matches:
            re.compile(pattern, re.IGNORECASE)

    def _problems(self, call: ToolCall) -> list[str]:
        outcome = call.outcome
        problems: list[str] = []
        if self.status is not None and outcome != self.status:
            wanted = {
                "ok": "return",
                "error": "fail",
                "cancelled": "be cancelled",
                "refused": "be refused",
            }[self.status]
            problems.append(f"expected it to {wanted}")
        if self.output_contains or self.output_matches:
            if outcome == "pending":
                problems.append("it gave nothing back yet")
            elif outcome == "cancelled":
                problems.append("it gave nothing back (it was cancelled)")
            else:
                problems += text_problems(
                    given_back(call),
                    "what it gave back",
                    contains_all=self.output_contains,
                    matches_all=self.output_matches,
                )
        return problems

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Look for a call to ``tool`` that satisfies every condition; name each that did not."""
        if ctx.tool_calls_unobserved:
            return unobserved(self.name, ctx.tool_calls_unobserved)
        calls = [c for c in ctx.tool_calls if c.name == self.tool]
        if not calls:
            return EvalResult(
                False,
                f"{self.tool} was not called in this turn (saw {describe_calls(ctx.tool_calls)})",
                name=self.name,
            )
        failures: list[str] = []
        unknown = 0
        for number, call in enumerate(calls, start=1):
            if call.outcome is None:
                unknown += 1
                continue
            problems = self._problems(call)
            which = f"call {number} of {self.tool}" if len(calls) > 1 else self.tool
            if not problems:
                return EvalResult(True, f"{which} {_how_it_ended(call)}", name=self.name)
            failures.append(f"{which} {_how_it_ended(call)}: " + "; ".join(problems))
        if unknown:
            seen = f"; of the others: {' | '.join(failures)}" if failures else ""
            return unobserved(
                self.name,
                f"the adapter did not record how {unknown} call(s) to {self.tool} ended (no "
                "output, error or completion on the ToolCall); use an adapter that captures "
                f"tool results, or set ToolCall(output=..., is_error=..., done=...){seen}",
            )
        return EvalResult(False, " | ".join(failures), name=self.name)
