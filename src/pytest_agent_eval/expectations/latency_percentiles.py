"""``latency_p95_ms_max`` (top level): the 95th percentile of voice-turn latency over all runs.

A per-turn ``max_latency_ms`` fails a run on one slow turn; this looks at the whole result
instead: every voice turn of every run, the 95th percentile by nearest rank (a latency that
was measured, never an interpolation). It fails the transcript, whatever its pass rate, when
the percentile is over the budget, and errors when no voice-turn latency was measured (a text
adapter, or no audio turn).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluators.base import located
from ..models import EvalResult, Transcript, TranscriptResult
from .base import Expectation, ExpectKey, keyed, unobserved

__all__ = ["EXPECTATION", "LatencyP95Check"]


@dataclass
class LatencyP95Check:
    """Passes when the p95 voice-turn latency of a result is at most ``max_ms``.

    Args:
        max_ms: The budget in milliseconds.
        name: Display name in results.
    """

    max_ms: float
    name: str = "latency_p95_ms_max"

    async def evaluate(self, result: TranscriptResult) -> EvalResult:
        """The verdict on the whole result, naming the key it checks."""
        return located(self.check(result), self)

    def check(self, result: TranscriptResult) -> EvalResult:
        """Compare the p95 of every measured voice-turn latency with the budget."""
        values = result.turn_latencies_s
        p95 = result.p95_latency_s
        if p95 is None:
            return unobserved(
                self.name,
                "no voice-turn latency was measured (latency is measured on turns that stream "
                "audio, by adapters that measure it, such as LiveKitAdapter)",
            )
        p50 = result.p50_latency_s or 0.0
        left_out = result.errored_run_count
        measured = (
            f"p95 {p95 * 1000:.0f} ms (p50 {p50 * 1000:.0f} ms) over {len(values)} voice "
            f"turn(s) of {len(result.evaluated_runs)} run(s)"
            + (f"; {left_out} ERROR run(s) left out" if left_out else "")
        )
        if p95 * 1000 > self.max_ms:
            return EvalResult(
                False, f"{measured} > latency_p95_ms_max {self.max_ms:g}", name=self.name
            )
        return EvalResult(True, f"{measured} <= {self.max_ms:g}", name=self.name)


def _result_checks(transcript: Transcript) -> list[Any]:
    if transcript.latency_p95_ms_max is None:
        return []
    return [
        keyed(
            LatencyP95Check(transcript.latency_p95_ms_max), "latency_p95_ms_max", scope="transcript"
        )
    ]


EXPECTATION = Expectation(
    name="latency_percentiles",
    keys=(),
    transcript_keys=(
        ExpectKey(
            name="latency_p95_ms_max",
            schema={"type": "number", "exclusiveMinimum": 0},
            description="Top level of a transcript: the 95th percentile of voice-turn latency "
            "(end of the user's speech to the first reply text) over every turn of every run "
            "is at most this many milliseconds; otherwise the transcript fails, whatever its "
            "pass rate. Errors when no voice-turn latency was measured.",
            example=1500,
        ),
    ),
    result_checks=_result_checks,
)
