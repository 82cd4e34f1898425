"""What a turn-taking run decided, stimulus by stimulus, for comparing a real-time run with
the virtual clock's: the latencies differ (compute takes wall time in real time), the
decisions and so the rates may not."""

from __future__ import annotations

from pytest_agent_eval._turn_taking._metrics import Observation, compute_metrics


def rates(observed: list[Observation]) -> dict[str, tuple[int, int]]:
    """Every rate's hits and count, by metric name (latencies left out)."""
    figures = compute_metrics(observed).items()
    return {k: (m.hits, m.count) for k, m in figures if m.hits is not None}


def decisions(observed: list[Observation]) -> list[tuple[bool, bool, bool]]:
    """Per stimulus: took over early, never stopped, never took a turn."""
    return [
        (o.took_over_early, o.agent_stopped_s is None, o.agent_turn_start_s is None)
        for o in observed
    ]
