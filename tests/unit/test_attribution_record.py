"""The attribution record (issue 35): its one-line account, the words it names as misheard,
and its trip through the serializer that carries results across xdist and into files."""

from __future__ import annotations

from pytest_agent_eval._attribution import Attribution, Evidence, misheard_spans
from pytest_agent_eval.models import RunResult, TurnResult


def test_misheard_words_are_only_those_that_differ() -> None:
    intended = "Hi, I am Alice and I would like a table for fifteen at seven pm."
    assert misheard_spans(
        intended, "hi i am alice and i would like a table for fifty at seven pm"
    ) == [("fifty", "fifteen")]
    assert misheard_spans(intended, intended.upper()) == []
    assert misheard_spans("a table for two", "a table") == [("", "for two")]


def test_each_cause_reads_as_one_line_naming_its_evidence() -> None:
    hearing = Attribution(
        "hearing",
        [
            Evidence("heard_words", "found", turn=0, heard="fifty", intended="fifteen"),
            Evidence("text_rerun", "passed", turn=0, detail="given as text, turn 1 passes"),
        ],
        turn=0,
    )
    assert hearing.describe() == 'hearing — heard "fifty", intended "fifteen"'
    tool = Attribution(
        "tool", [Evidence("tool_record", "found", tool="check_menu", error="ValueError: down")]
    )
    assert tool.describe() == "tool — tool 'check_menu' failed: ValueError: down"
    logic = Attribution(
        "agent_logic",
        [
            Evidence("heard_words", "none", detail="every audio turn was heard as said"),
            Evidence("text_rerun", "failed", detail="given as text, turn 1 fails the same check"),
        ],
    )
    assert logic.describe() == "agent_logic — given as text, turn 1 fails the same check"


def test_a_run_keeps_its_attribution_through_the_serializer() -> None:
    run = RunResult(
        index=0,
        turns=[TurnResult(index=0, user="a table for fifteen")],
        attribution=Attribution(
            "hearing",
            [Evidence("heard_words", "found", turn=0, heard="fifty", intended="fifteen")],
            turn=0,
        ),
    )
    again = RunResult.from_dict(run.to_dict())
    assert again.attribution == run.attribution
    assert RunResult.from_dict(RunResult(index=1).to_dict()).attribution is None


def test_a_failed_check_the_rerun_could_not_hold_is_never_taken_for_a_pass() -> None:
    # The audio run failed turn 2's barge-in check; a rerun without that check (a text turn
    # cannot barge in) says nothing of it: an error of the rerun, never "passes".
    from pytest_agent_eval._attribution._attribute import _judge_rerun
    from pytest_agent_eval.models import EvalResult

    failed = EvalResult(False, "kept talking", name="interrupt", key="turns[1].interrupt")
    failing = TurnResult(index=1, user="wait", evaluations=[failed])
    replied = EvalResult(True, "ok", name="reply_contains_any", key="turns[1].expect.x")
    rerun = RunResult(index=0, turns=[TurnResult(index=1, user="wait", evaluations=[replied])])
    verdict, said = _judge_rerun(failing, rerun, "given as text")
    assert verdict == "error"
    assert "could not check turn 2's turns[1].interrupt" in said
    # The same rerun holding the check and passing it is a pass.
    held = EvalResult(True, "stopped", name="interrupt", key="turns[1].interrupt")
    rerun = RunResult(index=0, turns=[TurnResult(index=1, user="wait", evaluations=[held])])
    assert _judge_rerun(failing, rerun, "given as text")[0] == "passed"


def test_a_rerun_that_stopped_at_an_earlier_turn_says_that_turns_error() -> None:
    # The rerun errored on turn 1 (a fixture it could not read) and never reached turn 2: the
    # evidence names turn 1's error, not "it stopped before that turn".
    from pytest_agent_eval._attribution._attribute import _judge_rerun
    from pytest_agent_eval.models import EvalResult

    failed = EvalResult(False, "wrong day", name="reply_contains_any", key="turns[1].expect.x")
    failing = TurnResult(index=1, user="when?", evaluations=[failed])
    broken = TurnResult(index=0, user="hi", error="audio file not found: greeting.wav")
    verdict, said = _judge_rerun(failing, RunResult(index=0, turns=[broken]), "given as text")
    assert verdict == "error"
    assert said.endswith("did not reach turn 2: turn 1: audio file not found: greeting.wav")


def test_compare_counts_every_eval_of_one_transcript() -> None:
    # One transcript run as two evals (a parametrized agent): both runs' causes count.
    from pytest_agent_eval._report._causes import cause_changes

    def entry(param: str, cause: str) -> dict[str, object]:
        return {
            "transcript_id": "t",
            "param": param,
            "captures": [{"attribution": {"cause": cause}}],
        }

    new = {"evals": [entry("a", "hearing"), entry("b", "tool")]}
    assert cause_changes({"evals": []}, new) == [
        "failure causes: none -> 1 hearing, 1 tool",
        "  t[a]: none -> 1 hearing",
        "  t[b]: none -> 1 tool",
    ]
    same = {"evals": [entry("", "hearing"), entry("", "tool")]}
    assert cause_changes({"evals": []}, same)[0] == "failure causes: none -> 1 hearing, 1 tool"
