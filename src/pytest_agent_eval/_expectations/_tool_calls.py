"""``tool_calls_include``, ``tool_calls_exclude`` and ``tool_calls_ordered``: which tools were
called in the turn, and in what order."""

from __future__ import annotations

from typing import Any

from ..evaluators._tool_calls import ToolOrderEvaluator, _OrderOfNothing
from ..evaluators._tools import ToolCallEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed, string_list

__all__ = ["EXPECTATION", "ToolOrderEvaluator"]


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
            description="Every one of these tools is called in this turn. A call the "
            "framework refused (the tool was not offered at that moment, or is unknown) ran "
            "nothing and does not count.",
            example=["check_availability", "create_booking"],
        ),
        ExpectKey(
            name="tool_calls_exclude",
            schema=string_list(),
            description="None of these tools is called in this turn, nor attempted: a call "
            "the framework refused still fails it (the agent chose the tool).",
            example=["cancel_booking"],
        ),
        ExpectKey(
            name="tool_calls_ordered",
            schema={"type": "boolean"},
            description="If true, tool_calls_include is called in this order "
            "(other calls may come in between; refused calls do not count).",
            example=True,
        ),
    ),
    checks=_checks,
)
