"""``tool_calls_outcome``: how a tool call ended (returned or failed) and what it gave back.

A call's outcome is what the adapter observed (`ToolCall.outcome`): ``ok``, ``error``,
``cancelled`` (stopped before it returned: a barge-in's interruption cut it), ``refused`` (the
framework refused it before running anything: not offered at that moment, or unknown), or
``pending`` (still running when the turn ended). An adapter that records only tool names
observes none, and then the check errors rather than guess.
"""

from __future__ import annotations

from typing import Any

from ..evaluators._tool_outcome import ToolOutcomeEvaluator, given_back
from ..models import Expect
from ._base import Expectation, ExpectKey, Problem, keyed, string_list
from ._reply_text import REGEX_YAML_FIX, check_regexes

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
            "enum": ["ok", "error", "cancelled", "refused"],
            "description": "ok: the call returned; error: it failed (raised, bad arguments, "
            "or returned the framework's error result, such as Pipecat Flows' "
            "{status: error}); cancelled: it was stopped before it returned (an interruption "
            "cut the reply that ran it); refused: the framework refused it before running "
            "anything (the function was not offered at that moment, or the agent has none of "
            "that name).",
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
            "returned; error: failed; cancelled: stopped by an interruption before it "
            "returned; refused: the framework refused it, not offered or unknown) and what it "
            "gave back (its output, and for a failed call "
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
