"""The caller's keypad in YAML (``dtmf:``) and the ``dtmf_sent`` check, on the real loader and
the real evaluators: bad keys are refused naming file, line and field; a reply that claims a
key press the agent never sent fails."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_agent_eval._expectations import build_evaluators
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.evaluators._keypad import DtmfSentEvaluator, claimed_keys
from pytest_agent_eval.models import DtmfInput, TurnContext


def _load(text: str):  # type: ignore[no-untyped-def]
    return load_transcript_text(text, path=Path("phone.yaml"))


def test_keys_load_in_short_and_long_form() -> None:
    transcript = _load(
        """
id: pay
turns:
  - user: "My account number."
    dtmf: "4521#"
  - user: "And the menu."
    dtmf: {digits: "2*", interval_ms: 250, at: after}
    expect:
      dtmf_sent: "21"
"""
    )
    first, second = transcript.turns
    assert first.dtmf == DtmfInput("4521#")
    assert second.dtmf == DtmfInput("2*", interval_ms=250, at="after")
    assert second.expect.dtmf_sent == "21"
    assert second.locations["dtmf"] == "phone.yaml:7"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('"45x1#"', r"phone\.yaml:5.*turns\[0\]\.dtmf.*'x' \(position 3\) is not a key"),
        ('{digits: "12E"}', r"phone\.yaml:5.*turns\[0\]\.dtmf\.digits.*'E' \(position 3\)"),
        ('{digits: ""}', r"phone\.yaml:5.*digits is empty"),
    ],
)
def test_a_key_that_is_not_on_the_keypad_is_named_with_file_line_and_field(
    value: str, message: str
) -> None:
    with pytest.raises(TranscriptError, match=message):
        _load(f"id: pay\nturns:\n  - user: hi\n\n    dtmf: {value}\n")


def test_keys_unquoted_as_a_number_are_refused() -> None:
    with pytest.raises(TranscriptError, match=r"phone\.yaml:4.*dtmf"):
        _load("id: pay\nturns:\n  - user: hi\n    dtmf: 4521\n")


def test_dtmf_sent_keys_are_checked_too() -> None:
    with pytest.raises(TranscriptError, match=r"phone\.yaml:5.*dtmf_sent.*'\?' \(position 2\)"):
        _load('id: pay\nturns:\n  - user: hi\n    expect:\n      dtmf_sent: "1?"\n')


def test_tones_in_audio_need_an_audio_turn() -> None:
    with pytest.raises(TranscriptError, match=r"phone\.yaml:4.*in_audio.*no 'audio:'"):
        _load('id: pay\nturns:\n  - user: hi\n    dtmf: {digits: "1", in_audio: true}\n')


def _ctx(reply: str, sent: str | None) -> TurnContext:
    return TurnContext("menu", reply, [], [], dtmf_sent=sent)


def test_dtmf_sent_passes_on_the_keys_sent() -> None:
    result = DtmfSentEvaluator("21")._check(_ctx("Pressing two, then one.", "21"))
    assert result.passed, result.reasoning


def test_dtmf_sent_fails_on_other_keys() -> None:
    result = DtmfSentEvaluator("21")._check(_ctx("Done.", "2"))
    assert not result.passed and "sent '2', expected '21'" in result.reasoning


def test_claiming_a_key_press_that_was_never_sent_fails() -> None:
    # The agent that "looped saying I'll press one" without a tone: no keys are expected
    # and none were sent, but the reply claims one.
    result = DtmfSentEvaluator("")._check(_ctx("Okay, I'll press one for billing.", ""))
    assert not result.passed and not result.errored
    assert "the reply claims pressing '1', a key press never sent" in result.reasoning
    # It sent 2 and says it pressed 1 as well: also a false claim.
    result = DtmfSentEvaluator("2")._check(_ctx("I pressed 2, and then 1.", "2"))
    assert not result.passed


def test_an_adapter_that_cannot_see_keys_errors_instead_of_passing() -> None:
    result = DtmfSentEvaluator("")._check(_ctx("Hello.", None))
    assert result.errored and not result.passed


def test_a_turn_with_keys_errors_when_the_adapter_pressed_none() -> None:
    transcript = _load('id: pay\nturns:\n  - user: hi\n    dtmf: "12"\n')
    turn = transcript.turns[0]
    (check,) = build_evaluators(turn.expect, turn=turn)
    assert check._check(_ctx("Hi.", None)).errored
    assert not check._check(TurnContext("hi", "Hi.", [], [], metadata={"dtmf_pressed": "1"})).passed
    assert check._check(TurnContext("hi", "Hi.", [], [], metadata={"dtmf_pressed": "12"})).passed


@pytest.mark.parametrize(
    ("reply", "claims"),
    [
        ("I will press one for you.", ["1"]),
        ("Pressing 4, 5, 2, 1 and then pound.", ["4521#"]),
        ("I sent 9 then star.", ["9*"]),
        ("Sure, one moment, I pressed the button.", []),
        ("I'll press 2 for billing now.", ["2"]),
        ("Let me dial 5.", ["5"]),
        ("Done. Pressing star now.", ["*"]),
        # Instructions to the caller and ordinary sentences claim nothing.
        ("Please press one for billing, or two for sales.", []),
        ("Enter your PIN, then press pound.", []),
        ("I have sent one email to you.", []),
        ("Select one of the options below.", []),
        ("Press 1 to hear your balance.", []),
    ],
)
def test_claims_are_read_from_the_reply(reply: str, claims: list[str]) -> None:
    assert claimed_keys(reply) == claims


def test_a_python_built_turn_with_a_bad_key_is_refused_naming_the_turn() -> None:
    from pytest_agent_eval._problems import transcript_problems
    from pytest_agent_eval.models import Transcript, Turn

    transcript = Transcript(id="pay", turns=[Turn("hi"), Turn("keys", dtmf="12?")])
    assert transcript.turns[1].dtmf == DtmfInput("12?")
    (problem,) = transcript_problems(transcript)
    error = str(problem.in_python("pay"))
    assert error.startswith("transcript 'pay', turn 2: ")
    assert "'?' (position 3) is not a key" in error


def test_a_turn_of_keys_alone_loads_with_no_words() -> None:
    transcript = _load('id: pay\nturns:\n  - user: "My account."\n  - dtmf: "4521#"\n')
    alone = transcript.turns[1]
    assert (alone.user, alone.dtmf) == ("", DtmfInput("4521#"))


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            "  - expect: {reply_contains_any: [hi]}\n",
            r"phone\.yaml:3.*turns\[0\]: missing required field 'user'; every turn needs the "
            r"user's words in `user:`, or, for a turn of keys alone, the keys in `dtmf:`",
        ),
        (
            '  - dtmf: "1"\n    audio: a.wav\n',
            r"phone\.yaml:3.*turns\[0\]\.dtmf: this turn presses keys alone \(no 'user:'\) and "
            r"has 'audio:'",
        ),
    ],
    ids=["neither_words_nor_keys", "keys_alone_with_audio"],
)
def test_a_turn_without_words_needs_keys_and_no_audio(turn: str, message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        _load(f"id: pay\nturns:\n{turn}")


def test_keys_alone_are_refused_before_a_text_agent_runs() -> None:
    transcript = _load('id: pay\nturns:\n  - dtmf: "4521#"\n')
    heard: list[object] = []

    def agent(history: list[dict[str, str]]) -> str:
        heard.append(history)
        return "Hello."

    with pytest.raises(
        TranscriptError,
        match=r"phone\.yaml:3: transcript 'pay', turns\[0\]\.dtmf: this turn presses keys alone "
        r"\(no 'user:'\), and CallableAdapter cannot press keys",
    ):
        asyncio.run(run_transcript(transcript, agent))
    assert heard == []


@pytest.mark.parametrize(
    ("turn", "message"),
    [
        (
            '  - dtmf: {digits: "1", in_audio: true}\n',
            "phone.yaml:3, transcript 'pay', turn 1, turns[0].dtmf: in_audio plays the keys as "
            "tones in the turn's audio, and this turn has no 'audio:'; a turn of keys alone has "
            "no audio: leave in_audio out, or give the turn 'user:' and 'audio:' (the keys are "
            "still delivered as keypad events)",
        ),
        (
            '  - user: ""\n    dtmf: "1"\n',
            "phone.yaml:3, transcript 'pay', turn 1, turns[0].user: must not be empty; for a "
            "turn of keys alone leave 'user:' out (the keys in 'dtmf:' are the turn)",
        ),
    ],
    ids=["keys_alone_in_audio", "empty_words_with_keys"],
)
def test_a_turn_of_keys_alone_written_wrong_is_told_how_to_write_one(
    turn: str, message: str
) -> None:
    with pytest.raises(TranscriptError) as refused:
        _load(f"id: pay\nturns:\n{turn}")
    assert str(refused.value) == message


def test_a_caller_number_on_an_outbound_call_is_refused_naming_file_line_and_field() -> None:
    with pytest.raises(TranscriptError) as refused:
        _load(
            "id: pay\nphone:\n  direction: outbound\n  caller_number: '+15550123'\n"
            "turns:\n  - user: hi\n"
        )
    assert str(refused.value) == (
        "phone.yaml:4, transcript 'pay', phone.caller_number: means nothing on an outbound "
        "call: the agent dials the number its create_sip_participant request gives in "
        "sip_call_to, and nobody calls it; leave caller_number out (trunk_number is still the "
        "number the call comes from)"
    )
    # The same phone inbound, and outbound without it, load.
    _load("id: pay\nphone:\n  caller_number: '+15550123'\nturns:\n  - user: hi\n")
    _load(
        "id: pay\nphone:\n  direction: outbound\n  trunk_number: '+15550199'\nturns:\n  - user: hi\n"
    )
