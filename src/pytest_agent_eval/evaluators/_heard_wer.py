"""The word error rate of what the agent's speech recognizer heard (``heard_wer_max``).

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._heard_wer`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from .._text import shorten
from ..errors import install_command
from ..models import EvalResult, TurnContext
from ._base import DeterministicEvaluator, unobserved

__all__ = ["HeardWerEvaluator"]


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
                    f"whisper-normalizer: {install_command('livekit')})"
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
