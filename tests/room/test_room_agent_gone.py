"""An agent that dies ends the turn within seconds, and a failed run's log holds only its failure.

A job process that dies sends the server nothing: the server keeps its participant for its
reconnect window (about 20 s) before telling the room it left. The adapter asks the agent's
participant every second whether it is there (an RPC its SDK acknowledges natively), so it
notices within a few seconds. Either way the caller's log stays clean: no "Task exception was
never retrieved" from a reply stream the dead agent left open, and no ERROR lines from
livekit-rtc about data channels closing as the run's room goes away.
"""

from __future__ import annotations

from pathlib import Path

from room_lab import RoomLab


def _noise(out: dict[str, object]) -> list[str]:
    logs = [str(line) for line in out["logs"]]  # type: ignore[attr-defined]
    unretrieved = [str(line) for line in out["unretrieved"]]  # type: ignore[attr-defined]
    return unretrieved + [
        line for line in logs if "never retrieved" in line or "data channel" in line
    ]


def test_a_crashed_agent_ends_the_turn_naming_what_happened(lab: RoomLab, lab_worker: str) -> None:
    out = lab.call(
        "converse_logged",
        agent_name=lab_worker,
        dispatch_metadata="crash",
        turns=[{"user": "Do you have vegan dishes?"}, {"user": "Please crash now."}],
        timeout_s=60,
    )
    error = out["error"]
    assert error is not None
    # Turn 1 was answered; turn 2 ends on the agent going quiet, not on the server's
    # participant timeout or the turn's own.
    assert error.startswith("turn 2: the agent (agent-AJ_"), error
    assert "stopped answering" in error and "job process died" in error, error
    assert _noise(out) == []


def test_a_room_deleted_under_the_caller_leaves_no_error_lines_in_the_log(
    lab: RoomLab, lab_worker: str
) -> None:
    # The room goes away with the caller in it (the agent or an operator ended the call):
    # livekit-rtc reports the caller's data channels closing "unexpectedly", at ERROR. For
    # the run's own room that is its expected end.
    out = lab.call(
        "room_deleted_under_the_caller", agent_name=lab_worker, dispatch_metadata="no-helper"
    )
    assert out["error"] is not None
    assert "disconnected from the room" in out["error"] or "left the room" in out["error"], out
    assert _noise(out) == []
    assert [line for line in out["logs"] if line.startswith("ERROR")] == [], out["logs"]


def test_an_agent_that_hangs_up_ends_the_turn(lab: RoomLab, lab_worker: str) -> None:
    out = lab.call(
        "converse_logged",
        agent_name=lab_worker,
        dispatch_metadata="hangup",
        turns=[{"user": "Thanks, bye!"}],
    )
    error = out["error"]
    assert error is not None and error.startswith("turn 1: "), out
    assert "disconnected from the room" in error or "left the room" in error, error
    assert _noise(out) == []


def test_a_failed_turn_leaves_no_error_lines_in_the_log(lab: RoomLab, lab_worker: str) -> None:
    out = lab.call(
        "converse_logged",
        agent_name=lab_worker,
        dispatch_metadata="mute",
        turns=[{"user": "Do you have vegan dishes?"}],
        timeout_s=5,
    )
    assert out["error"] is not None and out["error"].startswith("turn 1: nothing within")
    assert _noise(out) == []
    assert [line for line in out["logs"] if line.startswith("ERROR")] == [], out["logs"]


def test_runs_whose_agent_never_joined_or_crashed_end_in_adapter_errors(
    lab: RoomLab, lab_worker: str, tmp_path: Path
) -> None:
    # Through the runner, as a suite runs them: the reason is the run's (or the turn's)
    # error, raised by the adapter, never a check's verdict on a reply that did not come.
    source = tmp_path / "crash.yaml"
    source.write_text(
        "id: crash\nruns: 1\nturns:\n"
        '  - user: "Please crash now."\n    expect:\n      reply_contains_any: ["Goodbye"]\n'
    )
    crashed = lab.call(
        "run_records", agent_name=lab_worker, dispatch_metadata="crash", path=str(source)
    )
    (run,) = crashed.runs
    assert not run.passed and run.error is None
    (turn,) = run.turns
    assert turn.error is not None and "AdapterError" in turn.error, turn.error
    assert "stopped answering" in turn.error and turn.evaluations == []

    never = lab.call(
        "run_records",
        agent_name=lab_worker,
        dispatch_metadata="absent",
        path=str(source),
        join_timeout_s=6,
    )
    (run,) = never.runs
    assert not run.passed and run.turns == []
    assert run.error is not None and run.error.startswith("starting the conversation failed")
    assert "AdapterError" in run.error and "never joined the room" in run.error


def test_an_agent_whose_own_code_raises_is_crashed_with_its_place(
    lab: RoomLab, lab_worker: str, tmp_path: Path
) -> None:
    # The worker's helper reports the exception LiveKit logged from the agent's on_enter,
    # with its place, as in process: a crash of the agent, not an ERROR of the run.
    source = tmp_path / "broken.yaml"
    source.write_text("id: broken\nruns: 1\nturns:\n  - user: hello\n")
    result = lab.call(
        "run_records", agent_name=lab_worker, dispatch_metadata="broken-enter", path=str(source)
    )
    (run,) = result.runs
    assert run.verdict == "crashed" and run.turns == [], run.error
    assert run.crash is not None
    assert (run.crash.type, run.crash.message) == ("RuntimeError", "greeting template missing")
    assert run.crash.where is not None and run.crash.where.startswith("lab_agents.py:")
    assert run.crash.where.endswith(" in on_enter")
    assert result.verdict == "crashed"
