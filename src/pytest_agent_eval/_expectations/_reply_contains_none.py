"""``reply_contains_none``: strings that must not appear in the reply (an apology, a competitor's
name, an internal id)."""

from __future__ import annotations

from typing import Any

from ..evaluators._reply_contains_none import ReplyContainsNoneEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed, string_list

__all__ = ["EXPECTATION", "ReplyContainsNoneEvaluator"]


def _checks(expect: Expect) -> list[Any]:
    if not expect.reply_contains_none:
        return []
    return [
        keyed(ReplyContainsNoneEvaluator(list(expect.reply_contains_none)), "reply_contains_none")
    ]


EXPECTATION = Expectation(
    name="reply_contains_none",
    keys=(
        ExpectKey(
            name="reply_contains_none",
            schema=string_list(),
            description="None of these strings appears in the reply (case-insensitive); a "
            "failure names the ones that did.",
            example=["sorry", "unfortunately"],
        ),
    ),
    checks=_checks,
)
