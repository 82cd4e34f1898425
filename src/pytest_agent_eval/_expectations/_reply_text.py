"""``reply_contains_any/all`` and ``reply_matches_any/all``: substrings and regexes in the reply."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ..evaluators._reply import ContainsEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, Problem, keyed, string_list

__all__ = ["EXPECTATION", "REGEX_YAML_FIX", "check_regexes"]


def check_regexes(patterns: Any) -> Iterable[Problem]:
    """Each pattern must compile (case-insensitive, as the evaluator uses it)."""
    for index, pattern in enumerate(patterns):
        try:
            re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            yield (
                (index,),
                f"invalid regex '{pattern}': {exc}",
            )


REGEX_YAML_FIX = (
    'In YAML, double-quote patterns and double the backslashes ("\\\\d+"), or single-quote '
    "them ('\\d+')"
)
"""The fix of an invalid regex in a YAML file (the keys whose check is `check_regexes`)."""


_KEYS = (
    ("reply_contains_any", "any_of"),
    ("reply_contains_all", "all_of"),
    ("reply_matches_any", "matches_any"),
    ("reply_matches_all", "matches_all"),
)
"""Each key and the `ContainsEvaluator` argument it fills."""


def _argument(name: str, values: list[str]) -> dict[str, Any]:
    return {name: values}


def _checks(expect: Expect) -> list[Any]:
    # One check per key, so a failure names the key (and line) that failed.
    return [
        keyed(ContainsEvaluator(**_argument(argument, list(getattr(expect, key)))), key)
        for key, argument in _KEYS
        if getattr(expect, key)
    ]


EXPECTATION = Expectation(
    name="reply_text",
    keys=(
        ExpectKey(
            name="reply_contains_any",
            schema=string_list(),
            description="At least one of these strings appears in the reply (case-insensitive).",
            example=["confirmed", "booked"],
        ),
        ExpectKey(
            name="reply_contains_all",
            schema=string_list(),
            description="Every one of these strings appears in the reply (case-insensitive).",
            example=["tomorrow", "10"],
        ),
        ExpectKey(
            name="reply_matches_any",
            schema=string_list(),
            description="At least one of these regexes matches the reply "
            "(re.search, case-insensitive).",
            example=["BK-\\d+"],
            check=check_regexes,
            yaml_fix=REGEX_YAML_FIX,
        ),
        ExpectKey(
            name="reply_matches_all",
            schema=string_list(),
            description="Every one of these regexes matches the reply "
            "(re.search, case-insensitive).",
            example=["\\d+ (people|guests)"],
            check=check_regexes,
            yaml_fix=REGEX_YAML_FIX,
        ),
    ),
    checks=_checks,
)
