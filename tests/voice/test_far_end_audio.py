"""A far end's turns heard as audio (`voice._far_end_audio`, `models._far_end.audio_turns`):
the same turns its text plays, each made of its spoken lines (the fixtures the synthesizer made
offline) and the line's sounds; a voicemail's greeting turn is the greeting's fixture, its beep
turn the 1 kHz beep; a missing fixture names the far end's line and the command that makes it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.adapters.base import TurnInput
from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.models import Turn
from pytest_agent_eval.models._far_end import (
    BEEP_WORDS,
    FarEnd,
    FarEndPiece,
    IvrNode,
    IvrWalk,
    audio_turns,
    far_end_pieces,
    ivr_prompt,
)
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._clip import read_wav, resample
from pytest_agent_eval.voice._far_end_audio import HOLD_S, PIECE_GAP_S, far_end_clip

VOICEMAIL = """\
id: reminder_voicemail
far_end:
  kind: voicemail
  as: audio
  greeting: "Hi, you have reached Sam. Please leave a message after the beep."
"""


def test_the_turns_are_the_texts_turns_as_pieces() -> None:
    line = FarEndPiece
    assert audio_turns(FarEnd("voicemail", greeting="Leave a message.")) == [
        [line("line", "greeting")],
        [line("beep")],
    ]
    assert audio_turns(FarEnd("busy")) == [[line("busy")]]
    assert audio_turns(FarEnd("no_answer")) == [[line("ringback")]]
    assert audio_turns(FarEnd("hold_music", greeting="Please hold.", holds=2)) == [
        [line("line", "greeting"), line("hold_music")],
        [line("hold_music")],
        [line("line", "hello")],
    ]
    ivr = FarEnd("ivr", menu={"main": IvrNode("Press 1.", {"1": "end"}), "end": IvrNode("Hi.")})
    walk = IvrWalk(node="main", last="wrong")
    assert audio_turns(ivr, walk) == [[line("line", "retry.wrong"), line("line", "menu.main")]]


def test_each_turn_the_runner_sends_knows_its_pieces_from_its_index_or_its_words() -> None:
    line = FarEndPiece
    heard = FarEnd("human", played_as="audio")
    assert far_end_pieces(heard, 0, "Hello?") == (line("line", "hello"),)
    assert far_end_pieces(heard, 1, "Yes, Tuesday works.") == ()  # the transcript's own turn
    assert far_end_pieces(FarEnd("human"), 0, "Hello?") == ()  # a far end played as text
    menu = {"main": IvrNode("Press 1.", {"1": "end"}), "end": IvrNode("Hi.")}
    ivr = FarEnd("ivr", menu=menu, played_as="audio")
    again = ivr_prompt(menu["main"], IvrWalk(node="main", last="timeout"))
    assert far_end_pieces(ivr, 3, again) == (
        line("line", "retry.timeout"),
        line("line", "menu.main"),
    )
    assert far_end_pieces(ivr, 1, "Hi.") == (line("line", "menu.end"),)


def test_a_far_end_turn_heard_as_audio_streams_under_the_transcripts_conditions(
    tmp_path: Path,
) -> None:
    yaml = tmp_path / "voicemail.yaml"
    yaml.write_text(VOICEMAIL + "conditions: [phone]\n")
    transcript = load_transcript_file(yaml)
    assert transcript.far_end is not None
    # As the runner's script adds them: the greeting, then the beep.
    transcript.turns += [Turn(transcript.far_end.greeting), Turn(BEEP_WORDS)]
    sent = TurnInput.of(transcript, 1, 0)
    assert sent.far_end == (FarEndPiece("beep"),)
    assert sent.conditions == tuple(transcript.conditions) != ()


def test_a_voicemail_is_its_greetings_fixture_then_the_beep(tmp_path: Path) -> None:
    yaml = tmp_path / "voicemail.yaml"
    yaml.write_text(VOICEMAIL)
    assert main([str(yaml)]) == 0
    transcript = load_transcript_file(yaml)
    far_end = transcript.far_end
    assert far_end is not None
    greeting_turn, beep_turn = audio_turns(far_end)
    greeting = far_end_clip(transcript, greeting_turn, 16000)
    fixture = resample(
        read_wav(tmp_path / "audio" / "far_end" / "reminder_voicemail" / "greeting.wav"), 16000
    )
    assert np.array_equal(greeting.samples, fixture.samples)
    beep = far_end_clip(transcript, beep_turn, 24000)
    assert beep.sample_rate == 24000 and beep.duration_s == pytest.approx(0.4)
    spectrum = np.abs(np.fft.rfft(beep.samples))
    assert np.fft.rfftfreq(len(beep.samples), 1 / 24000)[spectrum.argmax()] == pytest.approx(
        1000, abs=5
    )
    hold = far_end_clip(transcript, [FarEndPiece("beep"), FarEndPiece("hold_music")], 16000)
    assert hold.duration_s == pytest.approx(0.4 + PIECE_GAP_S + HOLD_S)


def test_a_missing_spoken_line_names_it_and_the_command(tmp_path: Path) -> None:
    yaml = tmp_path / "voicemail.yaml"
    yaml.write_text(VOICEMAIL)
    transcript = load_transcript_file(yaml)
    with pytest.raises(
        AudioFixtureError,
        match=r"transcript 'reminder_voicemail', far_end\.greeting: .*greeting\.wav: audio file "
        r"not found; make it with python -m pytest_agent_eval\.synthesize_audio .*voicemail\.yaml",
    ):
        far_end_clip(transcript, [FarEndPiece("line", "greeting")], 16000)
