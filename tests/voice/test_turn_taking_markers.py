"""The turn-taking speech markers: [filler ...], [noise KIND], [noise KIND at T] and
[backchannel "..." at T]; what they say, what text agents get, and the errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.voice._speech import (
    Backchannel,
    Filler,
    Noise,
    Pause,
    PauseMarkupError,
    Phrase,
    overlays_of,
    parse_speech,
    split_speech,
    spoken_text,
)

MARKED = 'Well [filler um] I need [pause 1s] a refill. [noise cough] Thanks [noise door at 1.5s] [backchannel "uh-huh" at 2s]'


def test_every_marker_is_parsed_in_order() -> None:
    assert parse_speech(MARKED) == [
        Phrase("Well"),
        Filler("um"),
        Phrase("I need"),
        Pause(1.0),
        Phrase("a refill."),
        Noise("cough", None),
        Phrase("Thanks"),
        Noise("door", 1.5),
        Backchannel("uh-huh", 2.0),
    ]
    assert overlays_of(MARKED) == [Noise("door", 1.5), Backchannel("uh-huh", 2.0)]


def test_a_quoted_filler_keeps_its_words_and_times_take_ms() -> None:
    parts = parse_speech('So [filler "let  me see"] [noise click at 250ms] right')
    assert Filler("let me see") in parts
    assert Noise("click", 0.25) in parts


def test_text_agents_get_the_words_and_fillers_without_sounds_or_backchannels() -> None:
    assert spoken_text(MARKED) == "Well um I need a refill. Thanks"


def test_the_synthesizer_speaks_fillers_as_phrases_and_leaves_sounds_out() -> None:
    assert split_speech(MARKED) == [
        Phrase("Well"),
        Phrase("um"),
        Phrase("I need"),
        Pause(1.0),
        Phrase("a refill."),
        Phrase("Thanks"),
    ]


def test_a_text_without_markers_is_unchanged() -> None:
    text = "I said [sic] nothing odd, noise and all."
    assert spoken_text(text) == text


@pytest.mark.parametrize("tag", ["[noise]", "[filler]", "[backchannel]", "[NOISE]"])
def test_a_bare_tag_is_text_as_it_was_before_the_markers(tag: str) -> None:
    # Speech recognizers write "[noise]" into transcripts, and calls imported before these
    # markers existed kept it: such a transcript loads and says what it always said.
    text = f"hello {tag} can you hear me"
    assert parse_speech(text) == [Phrase(text)]
    assert spoken_text(text) == text


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ("Hi [noise coff] there", "asks for 'coff'; write one of babble, cafe, click, cough"),
        ("Hi [noise cough at soon]", "malformed noise marker '[noise cough at soon]'"),
        ("Hi [noise cough at 61s]", "'at' must be between 0 and 60 s"),
        ("Hi [backchannel uh-huh at 2s]", 'write [backchannel "uh-huh" at 2s] (the quoted'),
        ('Hi [backchannel "yeah"]', "malformed backchannel marker"),
        ('Hi [backchannel "" at 1s]', "malformed backchannel marker"),
        ("Hi [noise cough", "malformed noise marker '[noise cough'"),
    ],
)
def test_a_bad_marker_says_the_fix(user: str, message: str) -> None:
    with pytest.raises(PauseMarkupError, match=message.replace("[", r"\[").replace("(", r"\(")):
        spoken_text(user)
    with pytest.raises(PauseMarkupError):
        parse_speech(user)


def test_sounds_alone_are_a_stimulus_but_not_a_turn_to_say() -> None:
    assert parse_speech("[noise cough at 1s]") == [Noise("cough", 1.0)]
    with pytest.raises(PauseMarkupError, match="a noise or a backchannel alone does not"):
        split_speech("[noise cough at 1s]")
    with pytest.raises(PauseMarkupError, match="nothing to say"):
        spoken_text('[backchannel "yeah" at 1s]')


def test_a_bad_marker_in_yaml_names_file_line_turn_and_field(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("id: bad\nturns:\n  - user: 'Hi'\n  - user: 'I need [noise coff] a refill'\n")
    with pytest.raises(PauseMarkupError) as caught:
        load_transcript_file(path)
    message = str(caught.value)
    assert "bad.yaml:4" in message
    assert "turn 2" in message
    assert "turns[1].user" in message
    assert "write one of babble" in message


def test_an_imported_call_that_says_a_marker_word_in_brackets_is_escaped() -> None:
    from pytest_agent_eval._importers._build import _user_text

    notices: list[Any] = []
    assert (
        _user_text("I heard a [noise cough] there", 2, notices) == "I heard a (noise cough) there"
    )
    assert "holds '[noise', which transcripts read as a noise marker" in notices[0].text
