"""``greeting:`` (top level of a transcript): what the agent says on its own before turn 1.

The same text checks as a turn's reply, on the greeting's text: every utterance the agent
started before the user's first turn, space-joined. The adapter must observe the greeting
(``Conversation.greeting()``, see `pytest_agent_eval.adapters.base.GreetingConversation`):
against one that cannot, the check errors, naming why, and the run fails.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .._text import shorten
from ..models import EvalResult, Greeting, GreetingExpect, Transcript
from .base import Expectation, ExpectKey, Problem, keyed, string_list, text_problems, unobserved
from .reply_text import REGEX_YAML_FIX, check_regexes

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

NOT_OBSERVED = (
    "this adapter does not report what the agent says before turn 1 (its conversations have "
    "no greeting() method); run the transcript with an adapter that observes greetings "
    "(LiveKitAdapter does), or remove 'greeting:'"
)


@dataclass
class GreetingEvaluator:
    """Checks the run's `Greeting` against a transcript's ``greeting:``.

    Args:
        expect: The checks.
        name: Display name in results.
    """

    expect: GreetingExpect
    name: str = "greeting"

    def __post_init__(self) -> None:
        # A bad pattern is the author's error: surface it before any run, not in every run.
        for pattern in (*self.expect.matches_any, *self.expect.matches_all):
            re.compile(pattern, re.IGNORECASE)

    async def evaluate(self, greeting: Greeting | None) -> EvalResult:
        """Pass when the greeting's text passes every check; errored when it was not observed."""
        return self._check(greeting)

    def _check(self, greeting: Greeting | None) -> EvalResult:
        if greeting is None:
            return unobserved(self.name, NOT_OBSERVED)
        expect = self.expect
        text = greeting.text
        problems = text_problems(
            text,
            "greeting",
            contains_any=expect.contains_any,
            contains_all=expect.contains_all,
            contains_none=expect.contains_none,
            matches_any=expect.matches_any,
            matches_all=expect.matches_all,
        )
        if problems:
            seen = (
                f"greeting was {shorten(text, 200)!r}"
                if text
                else "the agent said nothing before turn 1"
            )
            return EvalResult(False, "; ".join(problems) + f" ({seen})", name=self.name)
        return EvalResult(True, "greeting text checks passed", name=self.name)


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
