"""``greeting:`` (top level of a transcript): what the agent says on its own before turn 1.

The same text checks as a turn's reply, on the greeting's text: every utterance the agent
started before the user's first turn, space-joined. The adapter must observe the greeting
(``Conversation.greeting()``, see `pytest_agent_eval.adapters.base.GreetingConversation`):
against one that cannot, the check errors, naming why, and the run fails.
"""

from __future__ import annotations

from typing import Any

from ..evaluators._greeting import GreetingEvaluator
from ..models import Transcript
from ._base import Expectation, ExpectKey, Problem, keyed, string_list
from ._reply_text import REGEX_YAML_FIX, check_regexes

__all__ = ["EXPECTATION", "GREETING_SCHEMA", "GreetingEvaluator"]

GREETING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "minProperties": 1,
    "properties": {
        "contains_any": {
            **string_list(),
            "description": "At least one of these strings appears (case-insensitive).",
        },
        "contains_all": {
            **string_list(),
            "description": "Every one of these strings appears (case-insensitive).",
        },
        "contains_none": {
            **string_list(),
            "description": "None of these strings appears (case-insensitive).",
        },
        "matches_any": {
            **string_list(),
            "description": "At least one of these regexes matches (re.search, case-insensitive).",
        },
        "matches_all": {
            **string_list(),
            "description": "Every one of these regexes matches (re.search, case-insensitive).",
        },
    },
}
"""``#/$defs/greeting``: the reply's text checks, named without the ``reply_`` prefix."""


def _greeting_checks(transcript: Transcript) -> list[Any]:
    if transcript.greeting is None:
        return []
    return [keyed(GreetingEvaluator(transcript.greeting), "greeting", scope="transcript")]


def _check_greeting(value: Any) -> list[Problem]:
    problems: list[Problem] = []
    for key in ("matches_any", "matches_all"):
        problems += [((key, *inner), why) for inner, why in check_regexes(value.get(key, []))]
    return problems


EXPECTATION = Expectation(
    name="greeting",
    keys=(),
    transcript_keys=(
        ExpectKey(
            name="greeting",
            schema={"$ref": "#/$defs/greeting"},
            description="Top level of a transcript, next to turns: what the agent says on its "
            "own before turn 1 passes these text checks (contains_any, contains_all, "
            "contains_none, matches_any, matches_all; case-insensitive). Errors with "
            "adapters that cannot observe a greeting.",
            example={"contains_any": ["welcome"], "contains_none": ["sorry"]},
            check=_check_greeting,
            yaml_fix=REGEX_YAML_FIX,
        ),
    ),
    greeting_checks=_greeting_checks,
    defs={"greeting": GREETING_SCHEMA},
)
