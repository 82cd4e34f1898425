"""``tool_calls_outcome``: how a tool call ended (returned or failed) and what it gave back.

A call's outcome is what the adapter observed (`ToolCall.outcome`): ``ok``, ``error``, or
``pending`` (still running when the turn ended). An adapter that records only tool names
observes none, and then the check errors rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._text import compact_json, shorten
from ..evaluators.base import DeterministicEvaluator
from ..evaluators.tools import describe_calls
from ..models import EvalResult, Expect, ToolCall, TurnContext
from .base import Expectation, ExpectKey, Problem, keyed, string_list, text_problems, unobserved
from .reply_text import REGEX_YAML_FIX, check_regexes

__all__ = ["EXPECTATION", "TOOL_CALL_OUTCOME_SCHEMA", "ToolOutcomeEvaluator", "given_back"]

TOOL_CALL_OUTCOME_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tool"],
    "anyOf": [
        {"required": ["status"]},
        {"required": ["output_contains"]},
        {"required": ["output_matches"]},
    ],
    "properties": {
        "tool": {"type": "string", "minLength": 1, "description": "Tool name to check."},
        "status": {
            "enum": ["ok", "error"],
            "description": "ok: the call returned; error: it failed (raised, bad arguments, "
            "unknown tool).",
        },
        "output_contains": {
            **string_list(),
            "description": "Strings that all appear in what the call gave back: its output, and "
            "for a failed call its error text too (case-insensitive).",
        },
        "output_matches": {
            **string_list(),
            "description": "Regexes that all match what the call gave back (re.search, "
            "case-insensitive).",
        },
    },
}
"""``#/$defs/tool_call_outcome``: one entry of ``tool_calls_outcome``."""


def given_back(call: ToolCall) -> str:
    """What a call gave back, as text: its output, and for a failed call its error text first
    (a framework may hide the exception from the model behind a generic output)."""
    output = call.output
    parts = [call.error] if call.is_error and call.error else []
    if output is not None and output != "":
        text = output if isinstance(output, str) else compact_json(output)
        if text not in parts:
            parts.append(text)
    return "\n".join(parts)


def _how_it_ended(call: ToolCall) -> str:
    outcome = call.outcome
    if outcome == "pending":
        return "was still running when the turn ended"
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
        status: ``"ok"``, ``"error"``, or None for either.
        output_contains: Strings that must all appear (case-insensitive).
        output_matches: Regexes that must all match (case-insensitive).
        name: Display name in results.
    """

    tool: str
    status: Literal["ok", "error"] | None = None
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
            wanted = "return" if self.status == "ok" else "fail"
            problems.append(f"expected it to {wanted}")
        if self.output_contains or self.output_matches:
            if outcome == "pending":
                problems.append("it gave nothing back yet")
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


def _checks(expect: Expect) -> list[Any]:
    return [
        keyed(
            ToolOutcomeEvaluator(
                entry.tool, entry.status, list(entry.output_contains), list(entry.output_matches)
            ),
            f"tool_calls_outcome[{index}]",
        )
        for index, entry in enumerate(expect.tool_calls_outcome)
    ]


def _check_entries(entries: Any) -> list[Problem]:
    problems: list[Problem] = []
    for index, entry in enumerate(entries):
        if isinstance(entry, dict):
            for inner, why in check_regexes(entry.get("output_matches", [])):
                problems.append(((index, "output_matches", *inner), why))
    return problems


EXPECTATION = Expectation(
    name="tool_outcome",
    keys=(
        ExpectKey(
            name="tool_calls_outcome",
            schema={"type": "array", "items": {"$ref": "#/$defs/tool_call_outcome"}},
            description="For each entry, some call to its tool ended as status says (ok: "
            "returned; error: failed) and what it gave back (its output, and for a failed call "
            "its error text) contains every output_contains string and matches every "
            "output_matches regex (case-insensitive). Errors when the adapter did not record "
            "how the call ended.",
            example=[
                {"tool": "lookup_order", "status": "ok", "output_contains": ["ships"]},
                {"tool": "dessert_menu", "status": "error", "output_matches": ["service .*down"]},
            ],
            check=_check_entries,
            yaml_fix=REGEX_YAML_FIX,
        ),
    ),
    checks=_checks,
    defs={"tool_call_outcome": TOOL_CALL_OUTCOME_SCHEMA},
)
