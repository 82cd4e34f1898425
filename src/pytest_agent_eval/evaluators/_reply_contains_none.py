"""Strings the reply must not contain (``reply_contains_none``).

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._reply_contains_none`), kept here with every other evaluator
class: the registry is the one source of keys, schema and docs, and imports this package, never
the reverse.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .._text import shorten
from ..models import EvalResult, TurnContext
from ._base import DeterministicEvaluator

__all__ = ["ReplyContainsNoneEvaluator"]


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
