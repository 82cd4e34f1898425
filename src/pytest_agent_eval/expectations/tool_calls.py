"""``tool_calls_include``, ``tool_calls_exclude`` and ``tool_calls_ordered``: which tools were
called in the turn, and in what order."""

from __future__ import annotations

from typing import Any

from ..evaluators.tools import ToolCallEvaluator
from ..models import Expect
from .base import Expectation, ExpectKey, string_list

__all__ = ["EXPECTATION"]


def _checks(expect: Expect) -> list[Any]:
    if not (expect.tool_calls_include or expect.tool_calls_exclude):
        return []
    return [
        ToolCallEvaluator(
            include=list(expect.tool_calls_include),
            exclude=list(expect.tool_calls_exclude),
            ordered=expect.tool_calls_ordered,
        )
    ]


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
