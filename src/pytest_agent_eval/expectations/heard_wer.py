"""``heard_wer_max``: voice turns, how well the agent's speech recognizer heard the user.

The word error rate of what the STT heard against the words the user spoke (the turn's
``user`` text without pause markers), scored with the number-aware normalizer of
``--verify`` ("10am" and "ten a.m." are the same words). The runner records it on every voice
turn (`AgentTurn.wer`), asserted or not; this check compares it with a ceiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._text import shorten
from ..evaluators.base import DeterministicEvaluator
from ..models import EvalResult, Expect, TurnContext
from .base import Expectation, ExpectKey, keyed, unobserved

__all__ = ["EXPECTATION", "HeardWerEvaluator"]


@dataclass
class HeardWerEvaluator(DeterministicEvaluator):
    """Passes when the turn's word error rate is at most ``max_wer``.

    Args:
        max_wer: The ceiling, 0.0 (every word right) and up.
        name: Display name in results.
    """

    max_wer: float
    name: str = "heard_wer_max"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the turn's WER with the ceiling; error when it was not measured."""
        if ctx.wer is None:
            if ctx.audio is None:
                why = f"turn {ctx.turn_index + 1} is a text turn (no audio:), so nothing is heard"
            elif ctx.heard is None:
                why = (
                    "this adapter does not report what its speech recognizer heard "
                    "(heard_wer_max needs a voice adapter such as LiveKitAdapter)"
                )
            else:
                why = (
                    "the word error rate could not be computed (the normalizer needs "
                    "whisper-normalizer: pip install 'pytest-agent-eval[livekit]')"
                )
            return unobserved(self.name, why)
        heard = shorten(ctx.heard or "", 160)
        if ctx.wer > self.max_wer:
            return EvalResult(
                False,
                f"WER {ctx.wer:.2f} > heard_wer_max {self.max_wer:g}: heard {heard!r} for "
                f"{shorten(ctx.user, 160)!r}",
                name=self.name,
            )
        return EvalResult(True, f"WER {ctx.wer:.2f} <= {self.max_wer:g}", name=self.name)


def _checks(expect: Expect) -> list[Any]:
    if expect.heard_wer_max is None:
        return []
    return [keyed(HeardWerEvaluator(expect.heard_wer_max), "heard_wer_max")]


EXPECTATION = Expectation(
    name="heard_wer",
    keys=(
        ExpectKey(
            name="heard_wer_max",
            schema={"type": "number", "minimum": 0},
            description="Voice turns: the word error rate of what the agent's speech "
            "recognizer heard, against the words of the turn's user text (numbers, times and "
            "spelled letters normalized), is at most this (0.0: every word right). Errors on "
            "a text turn or with an adapter that does not report what it heard.",
            example=0.2,
        ),
    ),
    checks=_checks,
)
