"""The 95th percentile of voice-turn latency over a whole result (``latency_p95_ms_max``).

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._latency_percentiles`), kept here with every other evaluator
class: the registry is the one source of keys, schema and docs, and imports this package, never
the reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import EvalResult, TranscriptResult
from ._base import located, unobserved

__all__ = ["LatencyP95Check"]


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
