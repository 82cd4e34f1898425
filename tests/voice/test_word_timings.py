"""Word timings: how they are measured on a fixture, and the one rule stand-in STTs hear by."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
from pytest_agent_eval.voice._fixtures import TimedPhrase, TimedWord, read_sidecar, read_wav
from pytest_agent_eval.voice._heard import (
    VAD_END_SLACK_S,
    assign_words,
    heard_until,
    segment_words,
    words_ended_by,
)
from pytest_agent_eval.voice._segments import SpeechSegment
from pytest_agent_eval.voice._words import align_words

# Each text has pauses at known places: a pause marker ends a phrase, and the synthesizer
# records exactly where each phrase ends. Measured with the phrase bounds hidden (the whole
# text as one phrase), the alignment must find every pause and put the right words before it.
PAUSED = [
    "I would like to pay [pause 1.2s] with cash please.",
    "Hi, this is Maria. [pause 0.6s] I need a refill of my blood pressure pills [pause 0.8s] "
    "and a delivery to Baker Street, please.",
    "Can you book [pause 0.5s] a table for seven [pause 0.5s] tomorrow at noon?",
    "I need to change my reservation [pause 0.4s] from Friday to Saturday evening.",
    "Could you check whether [pause 0.6s] the blue jacket comes in medium?",
    "Yes [pause 0.3s] please go ahead [pause 0.3s] and book it.",
    "I am calling about the invoice [pause 0.25s] that arrived yesterday [pause 0.5s] it "
    "charges me twice.",
    "Please cancel [pause 0.35s] my subscription to the premium plan [pause 0.3s] starting "
    "next month.",
    "I need a table [pause 0.3s] for four people tonight.",
    "Could you send the invoice [pause 0.25s] to my work address please?",
    "I ordered the chicken curry [pause 0.3s] but got the vegetable one.",
    "Please move my appointment [pause 0.5s] to Thursday morning.",
    "The package never arrived [pause 0.3s] and the tracking says delivered.",
    "Can I pay by card [pause 0.3s] or do you only take cash?",
    "We are three adults [pause 0.3s] and two small children.",
    "Is the museum open [pause 0.3s] on public holidays?",
    "My order number is four five six [pause 0.7s] and the name is Jonathan Smith.",
    "The account number is seven three nine [pause 0.3s] and my postcode is SW1A 2AA.",
    "My flight number is BA two one seven [pause 0.4s] and it leaves at nine.",
    "I would like to speak [pause 0.4s] to a manager about my refund.",
]


@pytest.fixture(scope="module")
def paused(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("words")
    lines = ["id: words", "turns:"]
    for k, text in enumerate(PAUSED):
        lines += [f'  - user: "{text}"', f"    audio: p{k}.wav"]
    (folder / "t.yaml").write_text("\n".join(lines) + "\n")
    ensure_fixtures([load_transcript_file(folder / "t.yaml")], jobs=1).raise_for_failures()
    return [folder / f"p{k}.wav" for k in range(len(PAUSED))]


def test_the_alignment_finds_each_pause_and_the_words_before_it(paused: list[Path]) -> None:
    """The accuracy docs/voice-fixtures.md quotes: of the pauses below, all but a few are
    placed within 0.03 s of the true end of the word before them, and a miss is never early
    (a word said after a pause placed before it would be heard before it is said)."""
    errors: list[float] = []
    for wav in paused:
        sidecar = read_sidecar(wav)
        assert sidecar is not None
        phrases = sidecar.phrases
        whole = TimedPhrase(
            " ".join(p.text for p in phrases), phrases[0].start_s, phrases[-1].end_s
        )
        words = align_words(read_wav(wav), [whole])
        assert [w.text for w in words] == whole.text.split()
        at = 0
        for phrase in phrases[:-1]:
            at += len(phrase.text.split())
            errors.append(words[at - 1].end_s - phrase.end_s)
    close = [e for e in errors if abs(e) <= 0.03]
    assert len(errors) == 25
    assert len(close) >= 22, errors
    assert min(errors) >= -0.03, errors  # never early


def test_every_new_fixture_times_its_words_within_its_phrases(paused: list[Path]) -> None:
    for wav in paused:
        sidecar = read_sidecar(wav)
        assert sidecar is not None
        at = 0
        for phrase in sidecar.phrases:
            mine = sidecar.words[at : at + len(phrase.text.split())]
            at += len(mine)
            assert " ".join(w.text for w in mine) == phrase.text
            assert mine[0].start_s == phrase.start_s and mine[-1].end_s == phrase.end_s
        assert at == len(sidecar.words)


WORDS = [
    TimedWord("I", 0.25, 0.4),
    TimedWord("would", 0.4, 0.7),
    TimedWord("pay", 0.7, 1.2),
    # a pause of 0.86 s
    TimedWord("cash", 2.06, 2.5),
    TimedWord("please.", 2.5, 3.0),
]


@pytest.mark.parametrize(
    ("ends", "heard"),
    [
        # The VAD cut at the pause: the words after it go with the later segment only.
        ([1.2, 3.0], ["I would pay", "cash please."]),
        # Its end of speech a little before the last sound the timings count moves no word.
        ([1.2 - VAD_END_SLACK_S + 0.05, 3.0], ["I would pay", "cash please."]),
        # One segment: every word.
        ([3.0], ["I would pay cash please."]),
        # A VAD ending early on the last segment: the rest of the audio came with it.
        ([1.2, 2.4], ["I would pay", "cash please."]),
        # Noise before the speech holds no word; a cut inside a word hands it out later.
        ([0.1, 0.45, 3.0], ["", "I", "would pay cash please."]),
    ],
)
def test_each_segment_hears_the_words_that_ended_within_it(
    ends: list[float], heard: list[str]
) -> None:
    assert assign_words(WORDS, ends) == heard


def test_a_word_is_heard_only_once_its_end_is_in_the_audio() -> None:
    assert words_ended_by(WORDS, 1.19) == 2
    assert words_ended_by(WORDS, 1.2) == 3
    assert words_ended_by(WORDS, 2.9, start=3) == 4  # "cash" ended 2.5; "please." not yet
    assert words_ended_by(WORDS, 2.49, start=3) == 3


def test_the_slack_stops_where_the_vad_declared_the_end() -> None:
    # A VAD ending speech after 50 ms of silence declared the end at 1.05 s: "cash" was not
    # said yet, though it ended within the slack of 0.9 s.
    words = [
        *WORDS[:2],
        TimedWord("pay", 0.7, 0.9),
        TimedWord("cash", 1.02, 1.08),
        TimedWord("please.", 1.08, 1.5),
    ]
    assert heard_until(0.9) == pytest.approx(0.9 + VAD_END_SLACK_S)
    assert heard_until(0.9, 1.05) == 1.05
    assert heard_until(0.9, 1.5) == pytest.approx(0.9 + VAD_END_SLACK_S)
    assert assign_words(words, [0.9, 1.5]) == ["I would pay cash", "please."]
    assert assign_words(words, [0.9, 1.5], detected=[0.95, 1.6]) == [
        "I would pay",
        "cash please.",
    ]
    segments = [SpeechSegment(0.9, 0.65, 0.95), SpeechSegment(1.5, 0.4, 1.6)]
    assert segment_words(words, segments) == ["I would pay", "cash please."]
    with pytest.raises(ValueError, match="1 detection time"):
        assign_words(words, [0.9, 1.5], detected=[0.95])
