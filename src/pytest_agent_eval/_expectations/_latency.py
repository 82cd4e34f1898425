"""``max_latency_ms``: voice turns, end of the user's speech to the first reply text."""

from __future__ import annotations

from typing import Any

from ..evaluators._reply import LatencyEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION"]


def _checks(expect: Expect) -> list[Any]:
    if expect.max_latency_ms is None:
        return []
    return [keyed(LatencyEvaluator(expect.max_latency_ms), "max_latency_ms")]


EXPECTATION = Expectation(
    name="latency",
    keys=(
        ExpectKey(
            name="max_latency_ms",
            schema={"type": "number", "exclusiveMinimum": 0},
            description="Voice turns: at most this many milliseconds from the end of the "
            "user's speech to the first reply text. Fails when there is no reply; errors with "
            "an adapter that does not measure latency.",
            example=1500,
        ),
    ),
    checks=_checks,
)
