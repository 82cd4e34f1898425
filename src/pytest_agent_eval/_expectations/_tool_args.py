"""``tool_calls_args``: the arguments of a tool call, compared exactly or as a subset, or judged
by an LLM against a rubric."""

from __future__ import annotations

from typing import Any

from ..evaluators._judge_settings import JudgeSettings
from ..evaluators._tools import ToolCallArgsEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION", "TOOL_CALL_ARGS_SCHEMA"]

TOOL_CALL_ARGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["tool"],
    "anyOf": [{"required": ["args"]}, {"required": ["judge"]}],
    "properties": {
        "tool": {"type": "string", "minLength": 1, "description": "Tool name to check."},
        "args": {"type": "object", "description": "Expected arguments (deterministic check)."},
        "mode": {
            "enum": ["subset", "exact"],
            "description": "subset (default): expected items must appear; exact: full equality.",
        },
        "judge": {"$ref": "#/$defs/judge"},
    },
}
"""``#/$defs/tool_call_args``: one entry of ``tool_calls_args``."""


def _checks(expect: Expect) -> list[Any]:
    return [
        keyed(
            ToolCallArgsEvaluator(entry.tool, entry.args, entry.mode),  # type: ignore[arg-type]
            f"tool_calls_args[{index}]",
        )
        for index, entry in enumerate(expect.tool_calls_args)
        if entry.args is not None
    ]


def _judges(expect: Expect, settings: JudgeSettings | None) -> list[Any]:
    judged = [
        (index, entry.tool, entry.judge)
        for index, entry in enumerate(expect.tool_calls_args)
        if entry.judge is not None
    ]
    if not judged:
        return []
    from ..evaluators.judge import ToolCallArgsJudgeEvaluator

    return [
        keyed(
            ToolCallArgsJudgeEvaluator(tool, judge.rubric, judge.model, settings=settings),
            f"tool_calls_args[{index}]",
        )
        for index, tool, judge in judged
    ]


EXPECTATION = Expectation(
    name="tool_args",
    keys=(
        ExpectKey(
            name="tool_calls_args",
            schema={"type": "array", "items": {"$ref": "#/$defs/tool_call_args"}},
            description="For each entry, some call to its tool has matching arguments: "
            "args with mode subset (the default; nested mappings match as subsets too) or "
            "exact, or a judge rubric the arguments must pass. A call the framework refused "
            "(the tool was not offered at that moment, or is unknown) ran nothing and does not "
            "count; the failure says it was refused and why.",
            example=[
                {"tool": "create_booking", "args": {"party_size": 2}},
                {"tool": "create_booking", "judge": {"rubric": "The time is in the evening."}},
            ],
        ),
    ),
    checks=_checks,
    judges=_judges,
    defs={"tool_call_args": TOOL_CALL_ARGS_SCHEMA},
)
