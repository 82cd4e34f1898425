"""``heard_wer_max``: voice turns, how well the agent's speech recognizer heard the user.

The word error rate of what the STT heard against the words the user spoke (the turn's
``user`` text without pause markers), scored with the number-aware normalizer of
``--verify`` ("10am" and "ten a.m." are the same words). The runner records it on every voice
turn (`AgentTurn.wer`), asserted or not; this check compares it with a ceiling.
"""

from __future__ import annotations

from typing import Any

from ..evaluators._heard_wer import HeardWerEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION", "HeardWerEvaluator"]


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
