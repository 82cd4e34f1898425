"""``heard_contains_any/all``: voice turns, what the agent's speech recognizer heard."""

from __future__ import annotations

from typing import Any

from ..evaluators._reply import ContainsEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed, string_list

__all__ = ["EXPECTATION"]


def _argument(name: str, values: list[str]) -> dict[str, Any]:
    return {name: values}


def _checks(expect: Expect) -> list[Any]:
    # One check per key, so a failure names the key (and line) that failed.
    return [
        keyed(ContainsEvaluator(**_argument(argument, list(values)), target="heard"), key)
        for key, argument, values in (
            ("heard_contains_any", "any_of", expect.heard_contains_any),
            ("heard_contains_all", "all_of", expect.heard_contains_all),
        )
        if values
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
