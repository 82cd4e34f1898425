"""Turn-taking metrics, from one `Observation` per stimulus played through an agent.

Every rate is a count over a count, with a 95% Wilson interval; every latency is a nearest-rank
percentile (p50, p95) with a distribution-free interval from the order statistics (its ranks are
the Wilson interval of the percentile's own fraction); `overlap_ratio` is a ratio of durations
and has no binomial interval. A metric with no stimulus to count is unmeasured (value None),
never 0. docs/turn-taking.md defines each and names the peer metric it mirrors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from ..models import percentile, wilson_interval
from ..models._turn_taking import Metric
from ._stimulus import Category, Expected

__all__ = [
    "HIGHER_IS_BETTER",
    "METRIC_NAMES",
    "TAKEOVER_CATEGORIES",
    "Metric",
    "Observation",
    "compute_metrics",
    "miss_of",
    "percentile_interval",
]

_Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True, kw_only=True)
class Observation:
    """What an agent did with one stimulus (a runner fills it from the session's timeline).

    Times are seconds on the stimulus audio's clock, from its start.
    """

    stimulus_id: str
    category: Category
    expect: Expected
    caller_end_s: float
    """End of the caller's last speech (words and fillers, not noise or backchannels)."""
    agent_turn_start_s: float | None = None
    """When the agent began a turn of its own in answer to the clip (its end of turn fired and
    it started speaking), or None when it never did."""
    agent_stopped_s: float | None = None
    """When the agent, speaking before the clip, stopped (was interrupted), or None."""
    agent_resumed: bool = False
    """After stopping, the agent went back to its speech (LiveKit's resume after a false
    interruption)."""
    interrupt_start_s: float | None = None
    """Start of what should make the agent stop (the barge-in's speech), for yield latency."""
    overlap_s: float = 0.0
    """Seconds both the caller (speech, not noise) and the agent were speaking."""
    caller_speech_s: float = 0.0
    """Seconds of caller speech in the clip."""

    @property
    def took_over_early(self) -> bool:
        """The agent started its turn before the caller's speech was over."""
        return self.agent_turn_start_s is not None and self.agent_turn_start_s < self.caller_end_s

    @property
    def reacted(self) -> bool:
        """While it was speaking, the agent stopped or began a new turn."""
        return self.agent_stopped_s is not None or self.agent_turn_start_s is not None


def percentile_interval(values: Sequence[float], q: float) -> tuple[float, float] | None:
    """A 95% interval for the ``q``-th percentile of ``values``, from the order statistics.

    The ranks are the Wilson interval of the fraction ``q / 100`` over ``len(values)`` trials,
    so it needs no assumption about the latencies' distribution; with few values it is wide
    (the smallest and largest value at n = 1).
    """
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        return None
    p = q / 100
    denom = 1 + _Z95 * _Z95 / n
    centre = (p + _Z95 * _Z95 / (2 * n)) / denom
    half = _Z95 * math.sqrt(p * (1 - p) / n + _Z95 * _Z95 / (4 * n * n)) / denom
    low_rank = max(1, math.floor((centre - half) * n))
    high_rank = min(n, math.ceil((centre + half) * n))
    return (ordered[low_rank - 1], ordered[high_rank - 1])


def _rate(name: str, hits: int, count: int) -> Metric:
    if count == 0:
        return Metric(name=name, value=None, count=0, hits=0, unit="ratio")
    return Metric(
        name=name,
        value=hits / count,
        count=count,
        hits=hits,
        interval=wilson_interval(hits, count),
        unit="ratio",
    )


def _latency(name: str, values_s: Sequence[float], q: float) -> Metric:
    ms = [round(v * 1000, 1) for v in values_s]
    return Metric(
        name=name,
        value=percentile(ms, q),
        count=len(ms),
        interval=percentile_interval(ms, q),
        unit="ms",
    )


def _count(
    observations: Iterable[Observation],
    where: Callable[[Observation], bool],
    hit: Callable[[Observation], bool],
) -> tuple[int, int]:
    chosen = [o for o in observations if where(o)]
    return sum(1 for o in chosen if hit(o)), len(chosen)


def _yielded(o: Observation) -> bool:
    """Whether the agent stopped at or after the interruption started (when it is known)."""
    if o.agent_stopped_s is None:
        return False
    return o.interrupt_start_s is None or o.agent_stopped_s >= o.interrupt_start_s


TAKEOVER_CATEGORIES: frozenset[Category] = frozenset(
    {Category.PAUSE, Category.FILLER, Category.BACKCHANNEL, Category.NOISE, Category.SIDE_SPEECH}
)
"""The categories a takeover rate counts (`pause_takeover_rate` counts pauses and fillers)."""


def _took_over(o: Observation) -> bool:
    """What the takeover rates count: over the agent's own speech, it stopped or took a turn;
    on the caller's turn, it took it before the caller was done, or cut its answer short."""
    if o.expect is Expected.KEEP_SPEAKING:
        return o.reacted
    return o.took_over_early or o.agent_stopped_s is not None


def miss_of(o: Observation) -> str | None:
    """What the agent did wrong with this stimulus, as the metrics count it (a takeover, a
    barge-in not yielded to, a turn never answered), in words; None when it did right."""
    if o.expect is Expected.YIELD:
        if _yielded(o):
            return None
        if o.agent_stopped_s is not None:
            return f"stopped at {o.agent_stopped_s:.2f} s, before the barge-in began"
        return "never stopped for the barge-in"
    if o.expect is Expected.RESPOND and o.agent_turn_start_s is None:
        return "never answered"
    if o.category not in TAKEOVER_CATEGORIES or not _took_over(o):
        return None  # a short answer taken early: no rate counts it, so no miss either
    if o.expect is Expected.KEEP_SPEAKING:  # it reacted: it stopped, or took a new turn
        if o.agent_stopped_s is not None:
            back = ", then went back to its speech" if o.agent_resumed else ""
            return f"stopped speaking at {o.agent_stopped_s:.2f} s{back}"
        return f"took a new turn at {o.agent_turn_start_s:.2f} s"
    if o.took_over_early and o.agent_turn_start_s is not None:
        early = o.caller_end_s - o.agent_turn_start_s
        return f"took the turn at {o.agent_turn_start_s:.2f} s, {early:.2f} s before the caller was done"
    return f"cut its answer short at {o.agent_stopped_s:.2f} s"


def compute_metrics(observations: Sequence[Observation]) -> dict[str, Metric]:
    """Every turn-taking metric of ``observations``, by name (in `METRIC_NAMES` order)."""
    obs = list(observations)

    def takeover(*categories: Category) -> tuple[int, int]:
        assert set(categories) <= TAKEOVER_CATEGORIES
        return _count(obs, lambda o: o.category in categories, _took_over)

    metrics: list[Metric] = [
        _rate("pause_takeover_rate", *takeover(Category.PAUSE, Category.FILLER)),
        _rate("backchannel_takeover_rate", *takeover(Category.BACKCHANNEL)),
        _rate("noise_takeover_rate", *takeover(Category.NOISE)),
        _rate("side_speech_takeover_rate", *takeover(Category.SIDE_SPEECH)),
    ]
    barge_ins = [o for o in obs if o.expect is Expected.YIELD]
    # Only a stop at or after the barge-in's start yields to it: one before it (the agent
    # stopping on its own) is no yield, and never a latency of 0 ms.
    yielded = [o for o in barge_ins if _yielded(o)]
    metrics.append(_rate("barge_in_yield_rate", len(yielded), len(barge_ins)))
    yield_s = [
        o.agent_stopped_s - o.interrupt_start_s
        for o in yielded
        if o.agent_stopped_s is not None and o.interrupt_start_s is not None
    ]
    metrics.append(_latency("barge_in_yield_latency_ms_p50", yield_s, 50))
    metrics.append(_latency("barge_in_yield_latency_ms_p95", yield_s, 95))
    answers = [o for o in obs if o.expect is Expected.RESPOND]
    eot_s = [
        o.agent_turn_start_s - o.caller_end_s
        for o in answers
        if o.agent_turn_start_s is not None and not o.took_over_early
    ]
    metrics.append(_latency("end_of_turn_latency_ms_p50", eot_s, 50))
    metrics.append(_latency("end_of_turn_latency_ms_p95", eot_s, 95))
    speaking = [o for o in obs if o.expect is Expected.KEEP_SPEAKING]
    false_stops = [o for o in speaking if o.agent_stopped_s is not None]
    metrics.append(_rate("false_interruption_rate", len(false_stops), len(speaking)))
    recovered = sum(1 for o in false_stops if o.agent_resumed)
    metrics.append(_rate("false_interruption_recovery_rate", recovered, len(false_stops)))
    unanswered = sum(1 for o in answers if o.agent_turn_start_s is None)
    metrics.append(_rate("unanswered_rate", unanswered, len(answers)))
    speech = sum(o.caller_speech_s for o in obs)
    overlap = sum(o.overlap_s for o in obs)
    metrics.append(
        Metric(
            name="overlap_ratio",
            value=overlap / speech if speech > 0 else None,
            count=len(obs) if speech > 0 else 0,
            unit="ratio",
        )
    )
    return {m.name: m for m in metrics}


METRIC_NAMES: tuple[str, ...] = tuple(compute_metrics([]))
"""Every metric's name, in the order reports show them."""

HIGHER_IS_BETTER: frozenset[str] = frozenset(
    {"barge_in_yield_rate", "false_interruption_recovery_rate"}
)
"""The metrics a rise improves; every other one a rise makes worse (the takeover, false
interruption and unanswered rates, the latencies, the overlap)."""
assert set(METRIC_NAMES) >= HIGHER_IS_BETTER
