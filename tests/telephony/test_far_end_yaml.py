"""The far end of an outbound call in YAML (``far_end:``), on the real loader: every kind loads,
and a far end that cannot work (a menu with no way out, a key that is not a key, a key that
leads nowhere, keys of another kind, turns it would never run) is refused naming file, line
and field, before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import Transcript
from pytest_agent_eval.models._far_end import (
    FarEnd,
    IvrNode,
    VoicemailExpect,
    spoken_lines,
    walk_ivr,
)


def _load(text: str) -> Transcript:
    return load_transcript_text(text, path=Path("call.yaml"))


IVR = """
id: reach_billing
far_end:
  kind: ivr
  menu:
    main:
      prompt: "For sales, press 1. For billing, press 2."
      keys: {1: sales, "2": billing}
    sales: {prompt: "Sales, please hold."}
    billing: {prompt: "Billing, please hold."}
  expect:
    reached: billing
"""


def test_an_ivr_loads_without_turns_with_its_keys_as_strings() -> None:
    transcript = _load(IVR)
    far_end = transcript.far_end
    assert transcript.turns == []
    assert far_end is not None and far_end.kind == "ivr"
    assert far_end.first_node == "main"
    assert far_end.menu["main"] == IvrNode(
        "For sales, press 1. For billing, press 2.", {"1": "sales", "2": "billing"}
    )
    assert far_end.expect.reached == "billing"
    assert transcript.locations["far_end"] == "call.yaml:3"


def test_a_voicemail_and_the_short_forms_load() -> None:
    transcript = _load(
        """
id: leave_message
far_end:
  kind: voicemail
  greeting: "Hi, this is Sam. Leave a message after the beep."
  expect:
    voicemail: {says: ["Tuesday"]}
"""
    )
    assert transcript.far_end is not None
    assert transcript.far_end.expect.voicemail == VoicemailExpect(says=["Tuesday"])
    busy = _load("id: busy_line\nfar_end: busy\n")
    assert busy.far_end == FarEnd("busy")
    human = _load('id: hi\nfar_end: human\nturns:\n  - user: "Yes, that is me."\n')
    assert human.far_end == FarEnd("human") and len(human.turns) == 1


@pytest.mark.parametrize(
    ("far_end", "message"),
    [
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"1": b}}, b: {prompt: "B", keys: '
            '{"1": a}}}}',
            r"call\.yaml:2, transcript 'x', far_end\.menu: the menu has no way out",
        ),
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"x": b}}, b: {prompt: "B"}}}',
            r"call\.yaml:2.*far_end\.menu\.a\.keys\.x: 'x' is not a key",
        ),
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"12": b}}, b: {prompt: "B"}}}',
            r"far_end\.menu\.a\.keys\.12: '12' is not a key",
        ),
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"1": c}}, b: {prompt: "B"}}}',
            r"key '1' leads to 'c', which is not a node of the menu \(a, b\)",
        ),
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"1": a}}, b: {prompt: "B"}}}',
            r"far_end\.menu\.a: no key from 'a' ever leads to a node without keys \(b\)",
        ),
        (
            '{kind: ivr, menu: {a: {prompt: "A", keys: {"1": b}}, b: {prompt: "B"}}, '
            "expect: {reached: c}}",
            r"far_end\.expect\.reached: reached 'c' is not a node",
        ),
        (
            '{kind: voicemail, greeting: "Leave a message.", menu: {a: {prompt: "A"}}}',
            r"far_end\.menu: the far end \(voicemail\) has no 'menu'; it takes greeting",
        ),
        ("{kind: voicemail}", r"far_end\.greeting: a voicemail far end needs a greeting"),
        (
            "{kind: busy, expect: {reached: main}}",
            r"far_end\.expect\.reached: 'reached' cannot be checked with a busy far end",
        ),
    ],
)
def test_a_far_end_that_cannot_work_is_refused_with_file_line_and_field(
    far_end: str, message: str
) -> None:
    with pytest.raises(TranscriptError, match=message):
        _load(f"id: x\nfar_end: {far_end}\n")


def test_an_unknown_key_is_refused() -> None:
    with pytest.raises(TranscriptError, match=r"call\.yaml:2.*far_end.*menus"):
        _load("id: x\nfar_end: {kind: ivr, menus: {}}\n")


def test_turns_a_far_end_would_never_run_are_refused() -> None:
    with pytest.raises(
        TranscriptError, match=r"call\.yaml:2.*the far end \(voicemail\) says everything"
    ):
        _load(
            'id: x\nfar_end: {kind: voicemail, greeting: "Leave a message."}\n'
            'turns:\n  - user: "Hello?"\n'
        )


def test_a_transcript_without_turns_or_far_end_still_needs_turns() -> None:
    with pytest.raises(TranscriptError, match=r"turns"):
        _load("id: x\n")


def test_the_ivr_walk_moves_on_keys_loops_on_a_wrong_key_and_stops_when_put_through() -> None:
    far_end = _load(IVR).far_end
    assert far_end is not None
    walk = walk_ivr(far_end, ["", "9", "2", ""])
    assert walk.nodes == ["main", "main", "main", "billing"]
    assert walk.node == "billing" and walk.wrong_keys == ["9"]
    assert walk_ivr(far_end, ["1"]).node == "sales"
    assert walk_ivr(far_end, ["21"]).node == "billing"  # keys after the tree ends are not read


def test_a_lower_case_menu_key_matches_the_key_the_agent_sends() -> None:
    far_end = _load(
        'id: x\nfar_end:\n  kind: ivr\n  menu:\n    main: {prompt: p, keys: {"a": end}}\n'
        "    end: {prompt: e}\n"
    ).far_end
    assert far_end is not None and far_end.menu["main"].keys == {"A": "end"}
    assert walk_ivr(far_end, ["a", ""]).node == "end"
    built = FarEnd(kind="ivr", menu={"main": IvrNode("p", {"b": "end"}), "end": IvrNode("e")})
    walk = walk_ivr(built, ["b", ""])
    assert walk.node == "end" and walk.wrong_keys == []


def test_interrupt_on_a_far_end_turn_is_refused_naming_the_line() -> None:
    with pytest.raises(
        TranscriptError, match=r"call\.yaml:7.*turns\[1\]\.interrupt.*not supported with a far end"
    ):
        _load(
            "id: x\nfar_end: human\nturns:\n  - user: hi\n  - user: wait\n"
            "    audio: wait.wav\n    interrupt: {stop_within_ms: 800, after_ms: 500}\n"
        )


@pytest.mark.parametrize(
    ("far_end", "message"),
    [
        (
            '{kind: voicemail, greeting: "Leave a message.", hello: "Hello?"}',
            r"call\.yaml:2.*far_end\.hello: the far end \(voicemail\) has no 'hello'",
        ),
        ("{kind: busy, retries: 2}", r"far_end\.retries: the far end \(busy\) has no 'retries'"),
    ],
)
def test_another_kinds_field_is_refused_even_at_its_default(far_end: str, message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        _load(f"id: x\nfar_end: {far_end}\n")


def test_a_far_end_heard_as_audio_loads_and_text_stays_the_default() -> None:
    far_end = _load(
        'id: x\nfar_end: {kind: voicemail, greeting: "Leave a message.", as: audio}\n'
    ).far_end
    assert far_end is not None and far_end.played_as == "audio"
    assert FarEnd("busy").played_as == "text"
    assert _load("id: x\nfar_end: busy\n").far_end == FarEnd("busy")


def test_a_far_end_heard_as_something_else_is_refused_with_file_line_and_field() -> None:
    with pytest.raises(TranscriptError, match=r"call\.yaml:2.*far_end\.as.*'video'"):
        _load("id: x\nfar_end: {kind: busy, as: video}\n")


def test_the_spoken_lines_are_the_far_ends_words_and_never_its_sounds() -> None:
    far_end = _load(IVR).far_end
    assert far_end is not None
    assert spoken_lines(far_end) == [
        ("menu.main", "For sales, press 1. For billing, press 2."),
        ("menu.sales", "Sales, please hold."),
        ("menu.billing", "Billing, please hold."),
        ("retry.wrong", "Sorry, that is not a valid option."),
        ("retry.timeout", "Sorry, I did not get your selection."),
    ]
    assert spoken_lines(FarEnd("hold_music", hello="Hi!")) == [("hello", "Hi!")]
    assert spoken_lines(FarEnd("busy")) == spoken_lines(FarEnd("no_answer")) == []
