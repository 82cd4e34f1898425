"""Turn-taking metrics from per-stimulus observations: known counts give known rates, Wilson
intervals and nearest-rank percentiles; nothing measurable is None, never 0."""

from __future__ import annotations

import pytest

from pytest_agent_eval._turn_taking._metrics import (
    METRIC_NAMES,
    Observation,
    compute_metrics,
    miss_of,
    percentile_interval,
)
from pytest_agent_eval._turn_taking._stimulus import Category, Expected
from pytest_agent_eval.models import wilson_interval


def _pause(i: int, *, early: bool, latency_s: float | None = 0.5) -> Observation:
    start = 1.0 if early else (None if latency_s is None else 3.0 + latency_s)
    return Observation(
        stimulus_id=f"pause-{i}",
        category=Category.PAUSE,
        expect=Expected.RESPOND,
        caller_end_s=3.0,
        agent_turn_start_s=start,
        caller_speech_s=2.0,
    )


def _speaking(category: Category, i: int, *, stopped: bool, resumed: bool = False) -> Observation:
    return Observation(
        stimulus_id=f"{category.value}-{i}",
        category=category,
        expect=Expected.KEEP_SPEAKING,
        caller_end_s=2.0,
        agent_stopped_s=2.2 if stopped else None,
        agent_resumed=resumed,
    )


def _barge(i: int, stop_after_s: float | None) -> Observation:
    return Observation(
        stimulus_id=f"barge_in-{i}",
        category=Category.BARGE_IN,
        expect=Expected.YIELD,
        caller_end_s=2.5,
        interrupt_start_s=1.5,
        agent_stopped_s=None if stop_after_s is None else 1.5 + stop_after_s,
        overlap_s=0.0 if stop_after_s is None else stop_after_s,
        caller_speech_s=1.0,
    )


def test_every_metric_is_listed_once() -> None:
    assert len(METRIC_NAMES) == len(set(METRIC_NAMES)) == 13
    assert set(compute_metrics([])) == set(METRIC_NAMES)


def test_nothing_observed_is_unmeasured_not_zero() -> None:
    metrics = compute_metrics([])
    assert all(m.value is None and m.count == 0 for m in metrics.values())


def test_pause_takeover_rate_counts_early_turns_with_a_wilson_interval() -> None:
    obs = [_pause(i, early=i < 3) for i in range(10)]
    metric = compute_metrics(obs)["pause_takeover_rate"]
    assert (metric.hits, metric.count, metric.value) == (3, 10, 0.3)
    assert metric.interval == wilson_interval(3, 10)
    assert metric.interval[0] < 0.3 < metric.interval[1]


def test_end_of_turn_latency_uses_only_turns_taken_after_the_caller() -> None:
    obs = [_pause(0, early=True)] + [
        _pause(i, early=False, latency_s=0.1 * i) for i in range(1, 11)
    ]
    metrics = compute_metrics(obs)
    p50, p95 = metrics["end_of_turn_latency_ms_p50"], metrics["end_of_turn_latency_ms_p95"]
    assert p50.count == p95.count == 10
    assert p50.value == 500.0  # nearest rank: the 5th of 100, 200, ..., 1000 ms
    assert p95.value == 1000.0
    assert p50.interval is not None and p50.interval[0] <= 500.0 <= p50.interval[1]


def test_unanswered_counts_caller_turns_the_agent_never_took() -> None:
    obs = [_pause(0, early=False), _pause(1, early=False, latency_s=None)]
    metric = compute_metrics(obs)["unanswered_rate"]
    assert (metric.hits, metric.count) == (1, 2)


def test_a_stop_over_a_backchannel_is_a_takeover_and_a_false_interruption() -> None:
    obs = [
        _speaking(Category.BACKCHANNEL, 0, stopped=True, resumed=True),
        _speaking(Category.BACKCHANNEL, 1, stopped=True),
        _speaking(Category.BACKCHANNEL, 2, stopped=False),
        _speaking(Category.BACKCHANNEL, 3, stopped=False),
        _speaking(Category.NOISE, 4, stopped=True),
    ]
    metrics = compute_metrics(obs)
    assert metrics["backchannel_takeover_rate"].value == 0.5
    assert metrics["noise_takeover_rate"].value == 1.0
    assert metrics["side_speech_takeover_rate"].value is None
    fi, recovered = metrics["false_interruption_rate"], metrics["false_interruption_recovery_rate"]
    assert (fi.hits, fi.count) == (3, 5)
    assert (recovered.hits, recovered.count) == (1, 3)


def test_a_noise_after_the_caller_that_cuts_the_answer_is_a_takeover() -> None:
    cut = Observation(
        stimulus_id="noise-1",
        category=Category.NOISE,
        expect=Expected.RESPOND,
        caller_end_s=2.0,
        agent_turn_start_s=2.6,
        agent_stopped_s=2.9,
    )
    fine = Observation(
        stimulus_id="noise-2",
        category=Category.NOISE,
        expect=Expected.RESPOND,
        caller_end_s=2.0,
        agent_turn_start_s=2.6,
    )
    assert compute_metrics([cut, fine])["noise_takeover_rate"].value == 0.5


def test_barge_ins_give_the_yield_rate_latency_and_overlap() -> None:
    obs = [_barge(0, 0.2), _barge(1, 0.4), _barge(2, 0.6), _barge(3, None)]
    metrics = compute_metrics(obs)
    assert metrics["barge_in_yield_rate"].value == 0.75
    assert metrics["barge_in_yield_latency_ms_p50"].value == 400.0
    assert metrics["barge_in_yield_latency_ms_p95"].value == 600.0
    assert metrics["overlap_ratio"].value == pytest.approx(1.2 / 4.0)
    assert metrics["overlap_ratio"].interval is None


def test_percentile_interval_is_a_pair_of_measured_values_around_the_percentile() -> None:
    values = [float(v) for v in range(1, 101)]
    low, high = percentile_interval(values, 50) or (0.0, 0.0)
    assert low in values and high in values
    assert 38 <= low < 50 < high <= 62
    assert percentile_interval([], 50) is None
    assert percentile_interval([7.0], 95) == (7.0, 7.0)


def test_to_dict_is_plain_json() -> None:
    doc = compute_metrics([_pause(0, early=True)])["pause_takeover_rate"].to_dict()
    assert doc["name"] == "pause_takeover_rate"
    assert doc["hits"] == 1 and doc["count"] == 1
    assert isinstance(doc["interval"], list)


def test_a_stop_before_the_barge_in_started_is_no_yield() -> None:
    early = _barge(4, -0.3)  # stopped 0.3 s before the caller started: not a yield of 0 ms
    metrics = compute_metrics([_barge(0, 0.4), early])
    assert metrics["barge_in_yield_rate"].value == 0.5
    assert metrics["barge_in_yield_latency_ms_p50"].value == 400.0
    assert metrics["barge_in_yield_latency_ms_p95"].value == 400.0


def _counted_against(o: Observation) -> bool:
    """Whether ``o`` alone moves a takeover, yield or unanswered rate the wrong way."""
    m = compute_metrics([o])
    wrong = [
        m[name].hits
        for name in (
            "pause_takeover_rate",
            "backchannel_takeover_rate",
            "noise_takeover_rate",
            "side_speech_takeover_rate",
            "unanswered_rate",
        )
    ]
    not_yielded = m["barge_in_yield_rate"].count and not m["barge_in_yield_rate"].hits
    return any(wrong) or bool(not_yielded)


@pytest.mark.parametrize(
    ("observation", "said"),
    [
        (_pause(0, early=True), "took the turn at 1.00 s, 2.00 s before the caller was done"),
        (_pause(1, early=False), None),
        (_pause(2, early=False, latency_s=None), "never answered"),
        (_speaking(Category.BACKCHANNEL, 0, stopped=True), "stopped speaking at 2.20 s"),
        (
            _speaking(Category.NOISE, 1, stopped=True, resumed=True),
            "stopped speaking at 2.20 s, then went back to its speech",
        ),
        (_speaking(Category.SIDE_SPEECH, 2, stopped=False), None),
        (_barge(0, 0.3), None),
        (_barge(1, None), "never stopped for the barge-in"),
        (
            Observation(
                stimulus_id="noise-9",
                category=Category.NOISE,
                expect=Expected.RESPOND,
                caller_end_s=2.0,
                agent_turn_start_s=2.6,
                agent_stopped_s=2.9,
            ),
            "cut its answer short at 2.90 s",
        ),
        (  # answered before a short answer was over: no rate counts it, so no miss
            Observation(
                stimulus_id="short_answer-1",
                category=Category.SHORT_ANSWER,
                expect=Expected.RESPOND,
                caller_end_s=1.0,
                agent_turn_start_s=0.8,
            ),
            None,
        ),
    ],
)
def test_a_miss_is_what_the_metrics_count_against_the_agent(
    observation: Observation, said: str | None
) -> None:
    assert miss_of(observation) == said
    assert (said is not None) == _counted_against(observation)
