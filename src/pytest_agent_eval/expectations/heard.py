"""``heard_contains_any/all``: voice turns, what the agent's speech recognizer heard."""

from __future__ import annotations

from typing import Any

from ..evaluators.reply import ContainsEvaluator
from ..models import Expect
from .base import Expectation, ExpectKey, string_list

__all__ = ["EXPECTATION"]


def _checks(expect: Expect) -> list[Any]:
    if not (expect.heard_contains_any or expect.heard_contains_all):
        return []
    return [
        ContainsEvaluator(
            any_of=list(expect.heard_contains_any),
            all_of=list(expect.heard_contains_all),
            target="heard",
        )
    ]


EXPECTATION = Expectation(
    name="heard",
    keys=(
        ExpectKey(
            name="heard_contains_any",
            schema=string_list(),
            description="Voice turns: what the agent's speech recognizer heard contains at "
            "least one of these strings (case-insensitive). Errors on a text turn or with an "
            "adapter that does not report it.",
            example=["table for two"],
        ),
        ExpectKey(
            name="heard_contains_all",
            schema=string_list(),
            description="Voice turns: what the agent's speech recognizer heard contains every "
            "one of these strings (case-insensitive). Errors on a text turn or with an adapter "
            "that does not report it.",
            example=["table", "two"],
        ),
    ),
    checks=_checks,
)
