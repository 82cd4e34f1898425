"""``judge``: an LLM judge grades the reply, and the tool calls behind it, against a rubric."""

from __future__ import annotations

from typing import Any

from ..evaluators._judge_settings import JudgeSettings
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION", "JUDGE_SCHEMA"]

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["rubric"],
    "properties": {
        "rubric": {
            "type": "string",
            "minLength": 1,
            "description": "Natural-language rubric sent to the judge model.",
        },
        "model": {
            "type": ["string", "null"],
            "description": "pydantic-ai model id; falls back to judge_model, then model, "
            "in [tool.agent_eval].",
        },
    },
}
"""``#/$defs/judge``: a rubric and an optional model (also used by ``tool_calls_args``)."""


def _judges(expect: Expect, settings: JudgeSettings | None) -> list[Any]:
    if expect.judge is None:
        return []
    # The judges module pulls in the verdict machinery; load it only when a turn has a judge.
    from ..evaluators.judge import JudgeEvaluator

    return [
        keyed(JudgeEvaluator(expect.judge.rubric, expect.judge.model, settings=settings), "judge")
    ]


EXPECTATION = Expectation(
    name="judge",
    keys=(
        ExpectKey(
            name="judge",
            schema={"$ref": "#/$defs/judge"},
            description="An LLM judge passes the reply, seen with the conversation and the "
            "turn's tool calls, against the rubric (see judges.md).",
            example={"rubric": "The reply confirms the booking with a date and a time."},
        ),
    ),
    judges=_judges,
    defs={"judge": JUDGE_SCHEMA},
)
