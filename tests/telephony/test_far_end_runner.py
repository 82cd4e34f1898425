"""The far end driving a run (``far_end:``), on the real runner with plain text agents: a
voicemail box's greeting and beep and the message checks, a person's hello before the
transcript's turns, and an IVR with an adapter that cannot see keys sent (an ERROR, never a
FAIL)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_agent_eval._far_end import BUSY_WORDS, HOLD_WORDS, RING_WORDS
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import AgentReply, RunResult, Transcript, TranscriptResult
from pytest_agent_eval.models._far_end import BEEP_WORDS

VOICEMAIL = """
id: reminder
far_end:
  kind: voicemail
  greeting: "Hi, this is Sam. Leave a message after the beep."
  expect:
    voicemail: {says: ["Tuesday at 3"]}
"""


def _run(text: str, agent: Any) -> TranscriptResult:
    transcript = load_transcript_text(text, path=Path("call.yaml"))
    return asyncio.run(run_transcript(transcript, agent))


def _last(history: Sequence[Any]) -> str:
    return str(history[-1]["content"])


def test_a_message_left_after_the_beep_passes() -> None:
    def agent(history: Sequence[Any]) -> str:
        if _last(history) == BEEP_WORDS:
            return "Hi Sam, a reminder of your appointment on Tuesday at 3. Bye."
        return ""

    result = _run(VOICEMAIL, agent)
    run = result.runs[0]
    assert [t.user for t in run.turns] == [
        "Hi, this is Sam. Leave a message after the beep.",
        BEEP_WORDS,
    ]
    assert result.passed, run.evaluations
    (check,) = run.evaluations
    assert check.key == "far_end" and check.location == "call.yaml:3"


def test_talking_over_the_greeting_fails() -> None:
    def agent(history: Sequence[Any]) -> str:
        return "Hi Sam, a reminder of your appointment on Tuesday at 3."

    result = _run(VOICEMAIL, agent)
    (check,) = result.runs[0].evaluations
    assert not result.passed and not check.errored
    assert "talked over the voicemail's greeting, before the beep" in check.reasoning


def test_a_message_without_what_it_must_say_fails() -> None:
    def agent(history: Sequence[Any]) -> str:
        return "Hi Sam, please call us back." if _last(history) == BEEP_WORDS else ""

    result = _run(VOICEMAIL, agent)
    (check,) = result.runs[0].evaluations
    assert not result.passed and not check.errored
    assert "does not say 'Tuesday at 3'" in check.reasoning


def test_a_person_says_hello_before_the_transcripts_turns_with_their_checks() -> None:
    text = """
id: confirm
far_end: {kind: human, hello: "Hello, Sam speaking."}
turns:
  - user: "Yes, I can make it."
    expect:
      reply_contains_all: ["see you Tuesday"]
"""
    seen: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        seen.append(_last(history))
        return "Hi Sam, can you make Tuesday?" if len(seen) == 1 else "Great, see you Tuesday."

    result = _run(text, agent)
    assert seen == ["Hello, Sam speaking.", "Yes, I can make it."]
    assert result.passed
    assert [e.passed for e in result.runs[0].turns[1].evaluations] == [True]

    def wrong(history: Sequence[Any]) -> str:
        return "Goodbye."

    assert not _run(text, wrong).passed


def test_an_ivr_with_an_adapter_that_cannot_see_keys_errors() -> None:
    text = """
id: reach_billing
far_end:
  kind: ivr
  menu:
    main: {prompt: "For billing, press 2.", keys: {"2": billing}}
    billing: {prompt: "Billing."}
  expect: {reached: billing}
"""

    def agent(history: Sequence[Any]) -> str:
        return "I pressed 2."

    result = _run(text, agent)
    run = result.runs[0]
    assert not result.passed and run.verdict == "error"
    assert run.error is not None and "does not report them" in run.error


MENU = """
id: reach_pharmacy
far_end:
  kind: ivr
  retries: 1
  menu:
    main:
      prompt: "For the pharmacy, press 3."
      keys: {"3": pharmacy}
    pharmacy: {prompt: "Pharmacy, how can I help?"}
  expect: {reached: pharmacy}
"""


def _keys_agent(keys: list[str]) -> Any:
    """An agent that sends the next keys of ``keys`` in each turn (as an app that sends
    digits through its telephony provider's API reports them: `AgentReply.dtmf_sent`)."""
    left = list(keys)

    def agent(history: Sequence[Any]) -> AgentReply:
        return AgentReply("", dtmf_sent=left.pop(0) if left else "")

    return agent


def test_an_ivr_says_its_menu_again_on_a_wrong_key_and_on_no_key_then_moves_on() -> None:
    result = _run(MENU.replace("retries: 1", "retries: 3"), _keys_agent(["9", "", "3"]))
    run = result.runs[0]
    assert [t.user for t in run.turns] == [
        "For the pharmacy, press 3.",
        "Sorry, that is not a valid option. For the pharmacy, press 3.",
        "Sorry, I did not get your selection. For the pharmacy, press 3.",
        "Pharmacy, how can I help?",
    ]
    assert result.passed
    assert "path: main -> main -> main -> pharmacy" in run.evaluations[0].reasoning


def test_an_ivr_hangs_up_after_its_retries_and_the_node_is_not_reached() -> None:
    result = _run(MENU, _keys_agent(["1", "2", "3"]))
    run = result.runs[0]
    assert len(run.turns) == 2  # the menu, said again once, then the IVR hung up
    (check,) = run.evaluations
    assert not result.passed and not check.errored
    assert "reached 'main', not 'pharmacy'" in check.reasoning
    assert "keys the menus did not take: '12'" in check.reasoning


def test_the_lines_that_never_answer_are_one_turn_of_their_sound() -> None:
    seen: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        seen.append(_last(history))
        return ""

    assert _run("id: ring\nfar_end: no_answer\n", agent).passed
    assert _run("id: busy\nfar_end: busy\n", agent).passed
    assert seen == [RING_WORDS, BUSY_WORDS]


def test_hold_music_plays_then_a_person_picks_up_before_the_turns() -> None:
    text = """
id: on_hold
far_end: {kind: hold_music, greeting: "Your call is important to us.", holds: 2, hello: "Hi, Dana here."}
turns:
  - user: "What can I do for you?"
"""
    seen: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        seen.append(_last(history))
        return "Hello."

    assert _run(text, agent).passed
    assert seen == [
        f"Your call is important to us. {HOLD_WORDS}",
        HOLD_WORDS,
        "Hi, Dana here.",
        "What can I do for you?",
    ]


def test_a_hang_up_check_errors_with_an_adapter_that_cannot_see_hang_ups() -> None:
    result = _run("id: busy\nfar_end: {kind: busy, expect: {call_ended: true}}\n", _keys_agent([]))
    (check,) = result.runs[0].evaluations
    assert check.errored and "does not report hang-ups" in check.reasoning
    assert result.runs[0].verdict == "error"


HUMAN_TWO_TURNS = """
id: confirm
far_end: {kind: human}
turns:
  - user: "Yes, I can make it."
    expect:
      reply_contains_any: ["Tuesday"]
  - user: "See you then."
"""


def test_turns_cut_off_by_the_agent_hanging_up_fail_naming_their_line() -> None:
    def agent(history: Sequence[Any]) -> AgentReply:
        return AgentReply(reply="Goodbye.", call_ended=True)

    result = _run(HUMAN_TWO_TURNS, agent)
    run = result.runs[0]
    assert not result.passed and run.verdict == "failed", run.evaluations
    assert len(run.turns) == 1
    cut = [e for e in run.evaluations if e.key and e.key.startswith("turns[")]
    assert [(e.key, e.location, e.passed, e.errored) for e in cut] == [
        ("turns[0]", "call.yaml:5", False, False),
        ("turns[1]", "call.yaml:8", False, False),
    ]
    assert "the agent hung up in turn 1, so this turn" in cut[0].reasoning
    assert "never ran" in cut[0].reasoning


def test_hanging_up_during_the_voicemail_greeting_fails() -> None:
    def agent(history: Sequence[Any]) -> AgentReply:
        return AgentReply(reply="", call_ended=True)

    result = _run(VOICEMAIL, agent)
    run = result.runs[0]
    (check,) = run.evaluations
    assert run.verdict == "failed" and not check.passed and not check.errored, check
    assert "hung up during the greeting, before the beep; it left no message" in check.reasoning


def _attribute(text: str, agent: Any) -> tuple[Transcript, RunResult]:
    """``agent``'s one failed run of ``text``, attributed as a voice run's is (the far end's
    turns are text turns on every adapter: a failed call is attributed as it stands)."""
    from pytest_agent_eval._attribution import attribute_result
    from pytest_agent_eval._runner import RunSettings

    transcript = load_transcript_text(text, path=Path("call.yaml"))
    result = asyncio.run(run_transcript(transcript, agent))
    (run,) = result.runs
    assert run.verdict == "failed", run.evaluations
    asyncio.run(attribute_result(result, transcript, agent, RunSettings()))
    assert run.verdict == "failed" and run.attribution is not None
    return transcript, run


def test_a_failed_turn_of_a_far_end_call_is_rerun_up_to_its_own_transcript_turn() -> None:
    heard: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        heard.append(_last(history))
        return "No."

    _, run = _attribute(HUMAN_TWO_TURNS, agent)
    attribution = run.attribution
    assert attribution is not None
    # The call's turn 2 (the hello was turn 1) ran the transcript's first turn.
    assert (attribution.cause, attribution.turn) == ("agent_logic", 1)
    (rerun,) = [e for e in attribution.evidence if e.counterfactual == "text_rerun"]
    assert rerun.verdict == "failed" and rerun.turn == 1
    assert "turn 2 fails the same check: reply_contains_any" in rerun.detail
    # The run, then the rerun up to the failing turn: the hello and that turn, no more.
    assert heard == [
        "Hello?",
        "Yes, I can make it.",
        "See you then.",
        "Hello?",
        "Yes, I can make it.",
    ]


def test_a_failed_check_of_the_whole_call_is_rerun_as_the_whole_call() -> None:
    said: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        said.append(_last(history))
        return "Please call the clinic." if _last(history) == BEEP_WORDS else ""

    _, run = _attribute(VOICEMAIL, agent)
    assert run.attribution is not None and run.attribution.cause == "agent_logic"
    (evidence,) = run.attribution.evidence
    assert (evidence.counterfactual, evidence.verdict) == ("text_rerun", "failed")
    assert evidence.detail.startswith("the call given as text fails the same check: ")
    assert "Tuesday at 3" in evidence.detail
    assert said.count(BEEP_WORDS) == 2  # the run, and the call once more


def test_a_call_that_passes_when_rerun_is_undetermined() -> None:
    calls = iter(["Please call the clinic.", "Tuesday at 3, see you then."])

    def agent(history: Sequence[Any]) -> str:
        return next(calls) if _last(history) == BEEP_WORDS else ""

    _, run = _attribute(VOICEMAIL, agent)
    assert run.attribution is not None and run.attribution.cause == "undetermined"
    (evidence,) = run.attribution.evidence
    assert (evidence.counterfactual, evidence.verdict) == ("text_rerun", "passed")
    assert "hearing and turn-taking are not tried on it" in evidence.detail


def test_a_call_rerun_that_breaks_off_says_so_and_names_no_cause() -> None:
    beeps: list[str] = []

    def agent(history: Sequence[Any]) -> str:
        if _last(history) != BEEP_WORDS:
            return ""
        beeps.append(BEEP_WORDS)
        if len(beeps) > 1:  # the rerun: the agent breaks
            raise RuntimeError("the line dropped")
        return "Please call the clinic."

    _, run = _attribute(VOICEMAIL, agent)
    assert run.attribution is not None and run.attribution.cause == "undetermined"
    (evidence,) = run.attribution.evidence
    assert (evidence.counterfactual, evidence.verdict) == ("text_rerun", "error")
    assert "did not run to its end, so its checks say nothing: turn 2: " in evidence.detail
    assert "the line dropped" in evidence.detail


def test_a_far_end_heard_as_audio_is_refused_on_a_text_agent() -> None:
    calls: list[Any] = []

    def agent(history: Sequence[Any]) -> str:
        calls.append(history)
        return ""

    transcript = load_transcript_text(
        VOICEMAIL.replace("kind: voicemail", "kind: voicemail\n  as: audio"),
        path=Path("call.yaml"),
    )
    with pytest.raises(
        TranscriptError,
        match=r"call\.yaml:3, transcript 'reminder', far_end\.as: the far end is heard as "
        r"audio, and \w+ is a text agent, which hears no audio; run it with a voice adapter",
    ):
        asyncio.run(run_transcript(transcript, agent))
    assert calls == []
