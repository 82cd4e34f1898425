"""``call_expect`` (top level of a transcript or simulation): checks over the whole call.

A turn's ``expect:`` sees one turn; some things only the whole call shows: the booking tool
was called at some point (the caller may have given the date on turn 2 or turn 5), or the
agent's final state is right. ``tool_called`` looks at every tool call of the run (before
turn 1 and in each turn); ``hook`` names a function of yours that gets the run and says pass
or fail, with a reason. They run once the conversation is over, on a run that did not break
off (a run cut short by an error is an ERROR already, and says nothing of the whole call),
and their verdicts sit beside a simulation's criteria.
"""

from __future__ import annotations

import re
from typing import Any

from ..evaluators._call import CallHookCheck, ToolCalledCheck
from ..models import Transcript
from ._base import Expectation, ExpectKey, Problem, keyed

__all__ = ["CALL_EXPECT_SCHEMA", "EXPECTATION"]

CALL_EXPECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "tool_called": {
            "type": "array",
            "minItems": 1,
            "description": "Tools the agent called at some point of the call, each with its "
            "arguments when args is given (subset by default, or mode: exact).",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["tool"],
                "properties": {
                    "tool": {"type": "string", "minLength": 1, "description": "Tool name."},
                    "args": {"type": "object", "description": "Expected arguments."},
                    "mode": {
                        "enum": ["subset", "exact"],
                        "description": "subset (default): expected items must appear; exact: "
                        "full equality.",
                    },
                },
            },
        },
        "hook": {
            "type": "string",
            "minLength": 3,
            "description": "module:function, importable from the rootdir, called with the run "
            "(every turn, tool call, reply and metadata); returns a bool, (passed, reason) or "
            "an EvalResult, and may be async.",
        },
    },
}
"""``#/$defs/call_expect``."""

_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def _call_checks(transcript: Transcript) -> list[Any]:
    call = transcript.call_expect
    if call is None:
        return []
    checks: list[Any] = [
        keyed(
            ToolCalledCheck(entry.tool, entry.args, entry.mode),  # type: ignore[arg-type]
            f"call_expect.tool_called[{index}]",
            scope="transcript",
        )
        for index, entry in enumerate(call.tool_called)
    ]
    if call.hook is not None:
        checks.append(keyed(CallHookCheck(call.hook), "call_expect.hook", scope="transcript"))
    return checks


def _check_call_expect(value: Any) -> list[Problem]:
    hook = value.get("hook") if isinstance(value, dict) else None
    if isinstance(hook, str) and not _TARGET.match(hook):
        return [
            (
                ("hook",),
                f"{hook!r} is not module:function; name a function importable from the "
                "rootdir, such as checks.booking:booked",
            )
        ]
    return []


EXPECTATION = Expectation(
    name="call_expect",
    keys=(),
    transcript_keys=(
        ExpectKey(
            name="call_expect",
            schema={"$ref": "#/$defs/call_expect"},
            description="Top level of a transcript or simulation: checks over the whole call, "
            "once it is over. tool_called: each tool was called at some point, with its args "
            "when given; hook: module:function, your check of the run, returning pass or fail "
            "with a reason. Errors when tool calls were not observed or the hook cannot answer.",
            example={
                "tool_called": [{"tool": "create_booking", "args": {"party_size": 2}}],
                "hook": "checks.booking:booked_for_two",
            },
            check=_check_call_expect,
        ),
    ),
    call_checks=_call_checks,
    defs={"call_expect": CALL_EXPECT_SCHEMA},
)
