"""The statistics of a verdict: passes needed, the Wilson interval, percentiles, and a score
shown apart from its threshold."""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = [
    "SCORE_MAX_DECIMALS",
    "passes_needed",
    "percentile",
    "score_and_threshold_text",
    "wilson_interval",
]

# z for a two-sided 95% interval.
_Z95 = 1.959963984540054


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by nearest rank, or None when empty.

    Nearest rank returns a value that was measured (never an interpolation between two), which
    is what a latency budget is checked against.
    """
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def passes_needed(threshold: float, runs: int) -> int:
    """Smallest number of passing runs with passes / runs >= threshold."""
    # The epsilon absorbs float noise such as 0.7 * 10 == 7.000000000000001.
    return max(0, math.ceil(threshold * runs - 1e-9))


SCORE_MAX_DECIMALS = 6
"""Most decimals `score_and_threshold_text` uses to show a score apart from its threshold."""


def score_and_threshold_text(score: float, threshold: float) -> tuple[str, str]:
    """``score`` and ``threshold`` with two decimals, or as many more as it takes to see them
    differ (``0.667`` and ``0.670`` for 2/3 against 0.67), so a message never reads
    ``score=0.67 < threshold=0.67``."""
    for decimals in range(2, SCORE_MAX_DECIMALS + 1):
        shown = (f"{score:.{decimals}f}", f"{threshold:.{decimals}f}")
        if (shown[0] != shown[1]) == (score != threshold):
            return shown
    return shown


def wilson_interval(successes: int, trials: int, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default).

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at
    0/N and N/N, which is where small eval suites live.
    """
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # At 0/N and N/N the interval touches 0 and 1 exactly; floating point leaves 5.55e-17.
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return (low, high)
