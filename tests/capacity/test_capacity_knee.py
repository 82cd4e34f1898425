"""The knee analysis on measured numbers: which K is within budget, sessions per core, and its
interval over the repeats."""

from __future__ import annotations

from pytest_agent_eval._capacity._knee import RepeatResult, find_knee, summarize
from pytest_agent_eval._capacity._measure import StepMeasure, lag_percentile, percentile

MB = 1024 * 1024


def _repeat(
    k: int,
    repeat: int,
    latencies_ms: list[float],
    lag_ms: float = 2.0,
    cpu_s: float = 5.0,
    failures: tuple[str, ...] = (),
) -> RepeatResult:
    return RepeatResult(
        k=k,
        repeat=repeat,
        latencies_s=tuple(v / 1000 for v in latencies_ms),
        failures=failures,
        measure=StepMeasure(
            wall_s=10.0,
            cpu_s=cpu_s,
            rss_start_bytes=200 * MB,
            rss_peak_bytes=(200 + 10 * k) * MB,
            lags_s=(lag_ms / 1000,) * 20,
        ),
        audio_s=4.0 * k,
    )


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([], 95) is None
    assert percentile([3.0], 50) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.5
    assert percentile(list(range(101)), 95) == 95.0


def test_a_step_pools_its_repeats_and_says_why_it_is_over_budget() -> None:
    step = summarize(
        4,
        [_repeat(4, 0, [900, 1000, 1100], lag_ms=150), _repeat(4, 1, [3000], lag_ms=150)],
        p95_latency_ms=2000,
        loop_lag_ms=100,
    )
    assert step.turns == 4
    assert step.p50_latency_ms == 1050.0
    assert step.p95_latency_ms is not None and step.p95_latency_ms > 2000
    assert step.rss_per_session_mb == 10.0
    assert step.cpu_s_per_audio_s == 10.0 / 32.0
    assert not step.within_budget
    assert step.over_budget[0].startswith("p95 latency")
    assert step.over_budget[1].startswith("loop lag p95 150 ms")


def test_a_failed_conversation_puts_a_step_over_budget_whatever_its_latency() -> None:
    step = summarize(2, [_repeat(2, 0, [100], failures=("session 2: stopped",))], 2000, 100)
    assert step.over_budget == ("1 conversation(s) failed",)


def test_the_knee_is_the_largest_k_before_the_first_step_over_budget() -> None:
    results = [
        _repeat(1, 0, [500, 600], cpu_s=2.0),
        _repeat(2, 0, [550, 650], cpu_s=4.0),
        _repeat(4, 0, [700, 800], cpu_s=8.0),
        _repeat(8, 0, [2500, 3000], cpu_s=9.5),
        # Within budget again past the knee: a later step never raises it.
        _repeat(16, 0, [600, 700], cpu_s=9.9),
    ]
    steps, knee = find_knee(results, p95_latency_ms=2000, loop_lag_ms=100)
    assert [s.k for s in steps] == [1, 2, 4, 8, 16]
    assert knee.k == 4
    assert knee.first_over == 8
    # 8 CPU seconds over 10 wall seconds: under one core, so the knee counts one core.
    assert knee.sessions_per_core == 4.0


def test_sessions_per_core_divides_by_the_cores_a_multi_threaded_process_used() -> None:
    results = [_repeat(1, 0, [500], cpu_s=4.0), _repeat(8, 0, [700], cpu_s=20.0)]
    _, knee = find_knee(results, 2000, 100)
    assert knee.k == 8
    assert knee.first_over is None
    assert knee.sessions_per_core == 4.0  # 8 sessions on 2.0 cores


def test_the_interval_spans_the_repeats_judged_one_at_a_time() -> None:
    results = [
        _repeat(1, 0, [500]),
        _repeat(1, 1, [500]),
        _repeat(2, 0, [600]),
        _repeat(2, 1, [2600]),  # the second repeat breaks at K=2
        _repeat(4, 0, [2700]),
        _repeat(4, 1, [2700]),
    ]
    _, knee = find_knee(results, 2000, 100)
    # Pooled, K=2's p95 (600 and 2600 ms) is over; the first repeat alone reached K=2.
    assert knee.k == 1
    assert (knee.low, knee.high) == (1.0, 2.0)


def test_when_one_session_is_already_over_the_knee_is_zero() -> None:
    _, knee = find_knee([_repeat(1, 0, [100], lag_ms=400)], 2000, 100)
    assert knee.k == 0
    assert knee.sessions_per_core == 0.0
    assert knee.first_over == 1


def test_loop_lag_percentiles_weigh_each_lag_by_the_time_it_held_the_loop() -> None:
    # Fifteen on-time wake-ups (20 ms each) and one after a 300 ms block: by count the block
    # is one sample in sixteen, by time it is half of the 600 ms observed.
    lags = [0.0] * 15 + [0.3]
    assert percentile(lags, 95) is not None and percentile(lags, 95) < 0.3  # type: ignore[operator]
    assert lag_percentile(lags, 0.02, 95) == 0.3
    assert lag_percentile(lags, 0.02, 40) == 0.0
    assert lag_percentile([], 0.02, 95) is None


def test_one_noisy_step_in_a_repeat_does_not_end_that_repeats_ramp() -> None:
    noisy = [600.0] * 19 + [2600.0] * 2  # this repeat alone: p95 over at K=2
    results = [
        _repeat(1, 0, [500] * 21),
        _repeat(1, 1, [500] * 21),
        _repeat(2, 0, noisy),
        _repeat(2, 1, [600] * 21),
        _repeat(4, 0, [700] * 21),
        _repeat(4, 1, [700] * 21),
        _repeat(8, 0, [2700] * 21),
        _repeat(8, 1, [2700] * 21),
    ]
    steps, knee = find_knee(results, 2000, 100)
    assert [s.within_budget for s in steps] == [True, True, True, False]  # pooled, K=2 holds
    assert knee.k == 4
    # The noisy repeat still reached K=4 on its own figures: the interval is the knee's.
    assert (knee.low, knee.high) == (4.0, 4.0)
