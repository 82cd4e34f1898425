"""Worker mode's judging of calls taken past ``load_threshold``, on a real `WorkerLab` (not
started) fed the worker's own log lines: which lines are job requests, which calls count as
taken (the agent joined their room), the one threshold every repeat is judged by at the end,
and the CPU count the load divides by (LiveKit's own)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agent_eval._capacity import judge_repeat
from pytest_agent_eval._capacity._knee import RepeatResult
from pytest_agent_eval._capacity._measure import StepMeasure
from pytest_agent_eval._capacity._worker import TakenCall, WorkerLab, livekit_cores


@pytest.fixture
def lab(tmp_path: Path) -> WorkerLab:
    worker = tmp_path / "agent.py"
    worker.write_text("")
    return WorkerLab(worker, workdir=tmp_path)


def _log(message: str, **extra: object) -> str:
    return json.dumps({"message": message, "level": "INFO", "name": "livekit.agents", **extra})


def test_only_the_workers_json_job_request_lines_are_read(lab: WorkerLab) -> None:
    lab._worker_line(_log("received job request", room="r1", job_id="j1"))
    lab._worker_line("user code: received job request for r2")  # not the worker's line
    lab._worker_line(_log("my agent received job request twice", room="r3"))
    lab._worker_line(_log("worker is at full capacity, marking as unavailable", threshold=0.5))
    assert [call.room for call in lab.taken] == ["r1"]
    assert lab.load_threshold == 0.5


def _repeat(span: tuple[float, float], joined: tuple[str, ...]) -> RepeatResult:
    measure = StepMeasure(wall_s=1.0, cpu_s=0.0, rss_start_bytes=0, rss_peak_bytes=0, lags_s=())
    return RepeatResult(
        k=1, repeat=0, latencies_s=(), failures=(), measure=measure, joined_rooms=joined,
        span=span,
    )  # fmt: skip


def test_every_repeat_is_judged_at_the_end_by_the_threshold_known_then(lab: WorkerLab) -> None:
    # The first repeat's call came before the worker logged its threshold (0.5): judged by it.
    lab.taken += [TakenCall(1.0, "early", 0.6), TakenCall(11.0, "late", 0.6)]
    first, second = _repeat((0.0, 10.0), ("early",)), _repeat((10.0, 20.0), ("late",))
    # Unknown (no --load-threshold, never logged): unjudged, nothing fails.
    assert judge_repeat(first, lab, None).past_threshold == ()
    lab._worker_line(_log("worker is at full capacity, marking as unavailable", threshold=0.5))
    (line,) = judge_repeat(first, lab, None).past_threshold
    assert (
        line.startswith("room early: taken at a CPU load of 0.60") and "(the worker's log)" in line
    )
    assert len(judge_repeat(second, lab, None).past_threshold) == 1
    assert judge_repeat(first, lab, 0.7).past_threshold == ()  # --load-threshold wins


def test_a_request_whose_agent_never_joined_was_not_taken(lab: WorkerLab) -> None:
    # Logged before the request_fnc ran; it rejected the job, so the agent never joined.
    lab.taken.append(TakenCall(1.0, "rejected", 0.9))
    assert judge_repeat(_repeat((0.0, 10.0), ()), lab, 0.5).past_threshold == ()


def test_the_load_divides_by_livekits_cpu_count(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    monkeypatch.setenv("NUM_CPUS", "3")  # LiveKit's override of its CPU count
    assert livekit_cores() == 3.0


@pytest.mark.parametrize("worker", [True, False])
def test_the_past_threshold_column_is_a_workers_only(tmp_path: Path, worker: bool) -> None:
    from rich.console import Console

    from pytest_agent_eval._capacity._knee import find_knee
    from pytest_agent_eval._capacity._plan import CapacityPlan
    from pytest_agent_eval._capacity._report import render_table

    given = {"worker": tmp_path / "agent.py", "agent_name": "a"} if worker else {}
    plan = CapacityPlan(rootdir=tmp_path, **given)  # type: ignore[arg-type]
    steps, knee = find_knee([_repeat((0.0, 1.0), ())], 2000.0, 100.0)
    console = Console(width=200, record=True, color_system=None)
    console.print(render_table(steps, knee, plan))
    assert ("past threshold" in console.export_text()) is worker
