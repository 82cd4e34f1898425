"""Whether the agent stopped speaking when a turn spoke over its reply (``interrupt:``).

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._barge_in`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import EvalResult, TurnContext
from ._base import DeterministicEvaluator, unobserved

__all__ = ["InterruptEvaluator"]


NOT_OBSERVED = (
    "this adapter does not perform barge-in (a text agent has no audio to interrupt); "
    "interrupt needs a voice adapter with a TTS in the session, such as LiveKitAdapter with "
    "SynthesizerTTS"
)


def _ms(seconds: float | None) -> str:
    return "?" if seconds is None else f"{seconds * 1000:.0f} ms"


@dataclass
class InterruptEvaluator(DeterministicEvaluator):
    """Passes when the agent stopped within the budget after the turn spoke over it.

    Args:
        stop_within_ms: The budget, from the start of the interrupting speech.
        name: Display name in results.
    """

    stop_within_ms: float
    name: str = "interrupt"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Read the turn's `BargeIn`: errored when it could not be tested."""
        barge = ctx.barge_in
        if barge is None:
            return unobserved(self.name, NOT_OBSERVED)
        if barge.precondition is not None:
            return unobserved(self.name, f"the barge-in was not tested: {barge.precondition}")
        at = f"{_ms(barge.reply_position_s)} into the reply"
        if not barge.stopped:
            how = "went quiet, then resumed the same reply" if barge.resumed else "kept speaking"
            played = (
                f"; {barge.played_s:.2f} s of the reply played"
                if barge.played_s is not None
                else ""
            )
            return EvalResult(
                False,
                f"the agent {how}: interrupted at {at}, it did not stop{played} (budget "
                f"{self.stop_within_ms:g} ms)",
                name=self.name,
            )
        latency = barge.stop_latency_s or 0.0
        if latency * 1000 > self.stop_within_ms:
            resumed = (
                f" (it went quiet after {_ms(barge.quiet_after_s)}, then resumed the reply)"
                if barge.resumed
                else ""
            )
            return EvalResult(
                False,
                f"the agent stopped {_ms(latency)} after the interrupting speech began (at "
                f"{at}){resumed} > stop_within_ms {self.stop_within_ms:g}",
                name=self.name,
            )
        return EvalResult(
            True,
            f"the agent stopped {_ms(latency)} after the interrupting speech began (at {at}) "
            f"<= {self.stop_within_ms:g}",
            name=self.name,
        )
