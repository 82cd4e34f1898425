"""``latency_p95_ms_max`` (top level): the 95th percentile of voice-turn latency over all runs.

A per-turn ``max_latency_ms`` fails a run on one slow turn; this looks at the whole result
instead: every voice turn of every run, the 95th percentile by nearest rank (a latency that
was measured, never an interpolation). It fails the transcript, whatever its pass rate, when
the percentile is over the budget, and errors when no voice-turn latency was measured (a text
adapter, or no audio turn).
"""

from __future__ import annotations

from typing import Any

from ..evaluators._latency_percentiles import LatencyP95Check
from ..models import Transcript
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION", "LatencyP95Check"]


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
