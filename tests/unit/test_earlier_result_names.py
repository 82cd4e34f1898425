"""Results and transcripts built the way the earlier package (0.3.0) built them."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from pytest_agent_eval import (
    AgentReply,
    EvalResult,
    RunResult,
    Transcript,
    TranscriptError,
    TranscriptResult,
    Turn,
    TurnResult,
)
from pytest_agent_eval._runner import run_transcript


def test_turn_result_constructs_and_reads_by_the_earlier_names() -> None:
    evals = [EvalResult(True, "ok"), EvalResult(True)]
    turn = TurnResult(turn_index=2, passed=True, eval_results=evals)
    assert (turn.turn_index, turn.passed, turn.eval_results) == (2, True, evals)
    assert (turn.index, turn.evaluations, turn.user, turn.error) == (2, evals, "", None)
    turn.turn_index = 3
    assert turn.index == 3


def test_run_result_constructs_and_reads_by_the_earlier_names() -> None:
    turns = [TurnResult(turn_index=0, passed=True, eval_results=[EvalResult(True)])]
    run = RunResult(run_index=1, passed=True, turn_results=turns)
    assert (run.run_index, run.passed, run.turn_results) == (1, True, turns)
    assert (run.index, run.turns, run.error) == (1, turns, None)


def test_a_transcript_result_of_earlier_records_keeps_its_verdict() -> None:
    ok = TurnResult(turn_index=0, passed=True, eval_results=[EvalResult(True)])
    bad = TurnResult(turn_index=0, passed=False, eval_results=[EvalResult(False, "nope")])
    runs = [
        RunResult(run_index=0, passed=True, turn_results=[ok]),
        RunResult(run_index=1, passed=False, turn_results=[bad]),
    ]
    result = TranscriptResult(passed=False, score=0.5, threshold=0.8, runs=runs)
    assert result.passed_run_count == 1
    with pytest.raises(AssertionError, match=r"score=0\.50 < threshold=0\.80 \(1/2 runs passed\)"):
        result.assert_threshold()


def test_an_explicit_false_fails_the_record_and_says_why_in_error() -> None:
    turn = TurnResult(turn_index=0, passed=False, eval_results=[EvalResult(True)])
    assert turn.passed is False
    assert turn.error == "marked failed by the code that built this result (passed=False)"
    # consistent with the evaluations: nothing added
    failed = TurnResult(turn_index=0, passed=False, eval_results=[EvalResult(False, "no")])
    assert failed.passed is False and failed.error is None
    run = RunResult(run_index=0, passed=False, turn_results=[TurnResult(0, "u")])
    assert run.passed is False and "passed=False" in (run.error or "")
    # the reason survives the trip through a report
    assert TurnResult.from_dict(turn.to_dict()).passed is False
    assert RunResult.from_dict(run.to_dict()).passed is False


def test_an_explicit_true_cannot_make_a_failure_pass() -> None:
    with pytest.warns(UserWarning, match=r"passed=True\) was given but the result is failed"):
        turn = TurnResult(turn_index=0, passed=True, eval_results=[EvalResult(False, "no")])
    assert turn.passed is False
    with pytest.warns(UserWarning, match="a run without turns never passes"):
        run = RunResult(run_index=0, passed=True, turn_results=[])
    assert run.passed is False


def test_consistent_records_raise_no_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TurnResult(turn_index=0, passed=True, eval_results=[])
        RunResult(run_index=0, passed=True, turn_results=[TurnResult(0, "u")])


def test_one_field_under_both_names_is_refused() -> None:
    with pytest.raises(TypeError, match="both turn_index= and index="):
        TurnResult(index=0, turn_index=1)
    with pytest.raises(TypeError, match="both turn_results= and turns="):
        RunResult(run_index=0, turns=[], turn_results=[])
    with pytest.raises(TypeError, match=r"passed=\.\.\.\) takes True or False, got 1"):
        RunResult(run_index=0, passed=1)  # type: ignore[call-arg]


def test_our_own_constructors_are_unchanged() -> None:
    turn = TurnResult(0, "Book", "Booked", ["create_booking"], [EvalResult(True)])
    assert (turn.user, turn.reply, turn.tool_calls) == ("Book", "Booked", ["create_booking"])
    assert RunResult(0, [turn]).passed


def test_an_empty_transcript_constructs_in_python() -> None:
    transcript = Transcript(id="draft", turns=[])
    transcript.turns.append(Turn("Book a table"))
    assert len(transcript.turns) == 1


def test_running_an_empty_transcript_is_a_clear_error() -> None:
    def agent(history: object) -> AgentReply:
        raise AssertionError("the agent must not be called")

    with pytest.raises(TranscriptError, match="transcript 'draft' has no turns, so there is"):
        asyncio.run(run_transcript(Transcript(id="draft", turns=[]), agent))


def test_the_earlier_yaml_loader_module_loads_a_transcript(tmp_path) -> None:
    from pytest_agent_eval.yaml_loader import TranscriptError as LoaderError
    from pytest_agent_eval.yaml_loader import load_transcript

    path = tmp_path / "booking.yaml"
    path.write_text("id: booking\nturns:\n  - user: Book\n", encoding="utf-8")
    transcript = load_transcript(path, default_threshold=0.5, default_runs=3)
    assert (transcript.id, transcript.threshold, transcript.runs) == ("booking", 0.5, 3)
    assert LoaderError is TranscriptError
    path.write_text("id: booking\nturns: []\n", encoding="utf-8")
    with pytest.raises(TranscriptError, match="'turns' is empty"):
        load_transcript(str(path))
