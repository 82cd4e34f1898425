"""A simulated caller in room mode: its utterances, synthesized on the fly, are streamed into a
room where the deployed booking worker hears them with its own STT, as a real caller's would
be; the conversation ends when the caller's goal is met and the criteria judge decides."""

from __future__ import annotations

from pathlib import Path

from room_lab import RoomLab

from pytest_agent_eval.models import TranscriptResult


def test_a_simulated_caller_talks_to_a_deployed_worker(
    lab: RoomLab, booking_worker: str, tmp_path: Path
) -> None:
    result = lab.call(
        "run_simulation_records",
        agent_name=booking_worker,
        audio_dir=str(tmp_path / "caller-audio"),
    )
    assert isinstance(result, TranscriptResult)
    (run,) = result.runs
    assert result.verdict == "passed", run.error or [
        (e.name, e.reasoning) for t in run.turns for e in t.evaluations if not e.passed
    ]
    assert [t.user for t in run.turns] == [
        "Hi, I am Alice and I would like a table for two at seven pm.",
        "What name is the booking under?",
    ]
    for turn in run.turns:
        # The worker heard what the caller said, from audio made on the fly for this call.
        assert turn.heard is not None and turn.wer is not None and turn.wer <= 0.1, turn.heard
        assert turn.audio is not None and Path(turn.audio).parent == tmp_path / "caller-audio"
    assert [c.name for c in run.turns[0].tool_calls] == ["book_table"]
    assert "Alice" in run.turns[1].reply
    assert run.simulation is not None and run.simulation.ended_by == "caller"
    assert [(e.name, e.passed) for e in run.evaluations] == [(run.evaluations[0].name, True)]
