"""``reply_contains_none``: strings that must not appear in the reply (an apology, a competitor's
name, an internal id)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .._text import shorten
from ..evaluators.base import DeterministicEvaluator
from ..models import EvalResult, Expect, TurnContext
from .base import Expectation, ExpectKey, keyed, string_list

__all__ = ["EXPECTATION", "ReplyContainsNoneEvaluator"]


@dataclass
class ReplyContainsNoneEvaluator(DeterministicEvaluator):
    """Fails when any of ``none_of`` appears in the reply (case-insensitive), naming each one.

    Args:
        none_of: Strings that must not appear.
        name: Display name in results.
    """

    none_of: Sequence[str] = field(default_factory=list)
    name: str = "reply_contains_none"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """List every forbidden string found in the reply."""
        lowered = ctx.reply.lower()
        found = [s for s in self.none_of if s.lower() in lowered]
        if found:
            return EvalResult(
                False,
                f"reply contains {found!r}, which must not appear "
                f"(reply was {shorten(ctx.reply, 200)!r})",
                name=self.name,
            )
        return EvalResult(True, f"reply contains none of {list(self.none_of)!r}", name=self.name)


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
