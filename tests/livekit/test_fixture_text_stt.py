"""FixtureTextSTT answers only with text a fixture's provenance proves, one phrase per segment.

Real sessions (livekit-agents AgentSession, Silero VAD), real fixtures from the offline
synthesizer; the WAVs that must be refused are made the ways they arise (a CI cache that kept
``*.wav`` only, a recording, a hand edit).
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from livekit_support import booking, converse, run, transcript

from pytest_agent_eval.adapters.livekit import FixtureTextSTT, LiveKitAdapter
from pytest_agent_eval.adapters.livekit._audio import load_fixture_audio
from pytest_agent_eval.adapters.livekit.offline._stt import assign_phrases
from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.loader import load_transcript_file
from pytest_agent_eval.models import InterruptConfig, Turn
from pytest_agent_eval.synthesize import ensure_fixtures
from pytest_agent_eval.voice._fixtures import (
    TimedPhrase,
    prove_fixture_text,
    read_sidecar,
    set_max_fixture_s,
)

REFILL = "Hi, this is Maria Lopez. I need a refill of my blood pressure medication."
SUNDAY = "What time are you open on Sunday?"
PAUSED = "Hi, this is Maria. [pause 2s] I need a refill."


@dataclass(frozen=True)
class Made:
    folder: Path
    refill: Path
    sunday: Path
    paused: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    folder = tmp_path_factory.mktemp("stt")
    (folder / "t.yaml").write_text(
        f'id: t\nturns:\n  - user: "{REFILL}"\n    audio: refill.wav\n'
        f'  - user: "{SUNDAY}"\n    audio: sunday.wav\n'
        f'  - user: "{PAUSED}"\n    audio: paused.wav\n'
    )
    ensure_fixtures([load_transcript_file(folder / "t.yaml")], jobs=1).raise_for_failures()
    return Made(folder, folder / "refill.wav", folder / "sunday.wav", folder / "paused.wav")


class ListeningSTT(FixtureTextSTT):
    """FixtureTextSTT that keeps what it answered for each speech segment."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[str] = []

    async def _transcribe(self, frame: Any) -> str:
        text = await super()._transcribe(frame)
        self.answers.append(text)
        return text


def _listen(wav: Path, text: str) -> tuple[ListeningSTT, Any]:
    stt = ListeningSTT()
    adapter = LiveKitAdapter(lambda: booking.make_session(stt=stt))
    (reply,) = run(converse(adapter, transcript(Turn(user=text, audio=wav))))
    return stt, reply


def test_each_segment_hears_the_sentence_spoken_in_it(made: Made) -> None:
    """Issue 9: words were shared out by duration ("Hi, this is Maria" / "Lopez. I need...")."""
    stt, reply = _listen(made.refill, REFILL)
    assert reply.metadata["livekit"]["speech_segments"] == 2
    assert stt.answers == [
        "Hi, this is Maria Lopez.",
        "I need a refill of my blood pressure medication.",
    ]
    assert reply.heard == REFILL


def test_a_pause_written_in_the_text_is_a_pause_the_vad_hears(made: Made) -> None:
    stt, reply = _listen(made.paused, PAUSED)
    assert reply.metadata["livekit"]["speech_segments"] == 2
    assert stt.answers == ["Hi, this is Maria.", "I need a refill."]
    assert reply.heard == "Hi, this is Maria. I need a refill."  # the words, no markup


def test_a_wav_that_lost_its_sidecar_and_says_something_else_is_refused(
    made: Made, tmp_path: Path
) -> None:
    """Issue 9: a WAV saying "What time are you open on Sunday?" passed a refill transcript."""
    wav = tmp_path / "refill.wav"
    shutil.copy(made.sunday, wav)  # a cache that restored *.wav but not the sidecars
    with pytest.raises(AudioFixtureError) as info:
        _listen(wav, REFILL)
    message = str(info.value)
    assert f"it was synthesized from {SUNDAY!r}, not from {REFILL!r}" in message
    assert "WhisperSTT" in message
    assert "\n" not in message


def test_a_recording_proves_nothing(made: Made, tmp_path: Path) -> None:
    import soundfile

    wav = tmp_path / "recorded.wav"
    data, rate = soundfile.read(str(made.refill), dtype="int16")
    soundfile.write(str(wav), data, rate, subtype="PCM_16")
    with pytest.raises(AudioFixtureError, match=r"it is a recording .* use WhisperSTT"):
        _listen(wav, REFILL)


def _copy(src: Path, folder: Path) -> Path:
    folder.mkdir()
    wav = folder / src.name
    shutil.copy(src, wav)
    shutil.copy(src.with_name(src.name + ".hash"), wav.with_name(wav.name + ".hash"))
    return wav


def test_what_the_provenance_proves(made: Made, tmp_path: Path) -> None:
    phrases = prove_fixture_text(made.refill, REFILL)
    assert [p.text for p in phrases] == [
        "Hi, this is Maria Lopez.",
        "I need a refill of my blood pressure medication.",
    ]
    assert phrases == read_sidecar(made.refill).phrases
    # The spoken text (markup removed, as text adapters get it) proves the same as the user text.
    assert prove_fixture_text(made.paused, "Hi, this is Maria. I need a refill.")
    # Without the sidecar, the key inside the WAV proves the same phrases.
    lost = tmp_path / "lost.wav"
    shutil.copy(made.refill, lost)
    assert prove_fixture_text(lost, REFILL) == phrases

    cases: dict[str, str] = {}

    edited = _copy(made.sunday, tmp_path / "e")
    side = json.loads(edited.with_name("sunday.wav.hash").read_text())
    side["text"] = REFILL  # "make it pass" by hand
    edited.with_name("sunday.wav.hash").write_text(json.dumps(side))
    cases["edited by hand"] = str(edited)

    changed = _copy(made.refill, tmp_path / "c")
    changed.write_bytes(made.sunday.read_bytes())  # another synthesized WAV, sidecar kept
    cases["the WAV changed since it was synthesized"] = str(changed)

    legacy = tmp_path / "l" / "refill.wav"
    legacy.parent.mkdir()
    shutil.copy(made.refill, legacy)
    digest = hashlib.sha256(REFILL.encode("utf-8")).hexdigest()
    legacy.with_name("refill.wav.hash").write_text(digest + "\n")
    cases["made by pytest-agent-eval 0.3"] = str(legacy)

    for why, path in cases.items():
        with pytest.raises(AudioFixtureError, match=why):
            prove_fixture_text(path, REFILL)


@pytest.mark.parametrize(
    ("phrases", "segments", "heard"),
    [
        # One segment per sentence: each gets its sentence, whatever the durations.
        (
            [("A b c d e f.", 0.25, 3.0), ("G h.", 3.75, 4.2)],
            [(0.2, 3.0), (3.7, 4.2)],
            ["A b c d e f.", "G h."],
        ),
        # VAD boundaries a little off (prefix padding, frame lag) move no word.
        ([("A b.", 0.25, 1.5), ("C d.", 2.25, 3.0)], [(0.0, 1.7), (1.9, 3.1)], ["A b.", "C d."]),
        # Two sentences in one segment (the VAD did not cut at the pause).
        ([("A b.", 0.25, 1.5), ("C d.", 2.25, 3.0)], [(0.2, 3.0)], ["A b. C d."]),
        # A segment with no phrase in it (a noise the VAD took for speech) hears nothing.
        ([("A b.", 0.25, 1.5)], [(0.2, 1.5), (2.5, 2.7)], ["A b.", ""]),
        # The VAD really cut inside a sentence: its words are shared by time.
        ([("one two three four", 0.0, 4.0)], [(0.0, 2.0), (2.6, 4.0)], ["one two", "three four"]),
    ],
)
def test_phrases_go_to_the_segments_they_are_spoken_in(
    phrases: list[tuple[str, float, float]],
    segments: list[tuple[float, float]],
    heard: list[str],
) -> None:
    timed = [TimedPhrase(t, s, e) for t, s, e in phrases]
    assert assign_phrases(timed, segments) == heard


@pytest.fixture
def small_cap() -> Iterator[None]:
    set_max_fixture_s(1.0)
    yield
    set_max_fixture_s(None)


@pytest.mark.usefixtures("small_cap")
def test_the_session_loader_applies_the_duration_cap(made: Made) -> None:
    with pytest.raises(AudioFixtureError, match=r"is 5\.\d s long, over the 1 s limit"):
        load_fixture_audio(made.refill, sample_rate=24000, frame_ms=20, tail_s=0.6)


def test_a_format_1_sidecar_gets_timings_cut_only_between_sentences(
    made: Made, tmp_path: Path
) -> None:
    """Sidecars of the previous format recorded no phrase timings: estimate them, but never
    inside a sentence."""
    from pytest_agent_eval.voice._fixtures import fixture_key

    wav = _copy(made.refill, tmp_path / "old")
    side_path = wav.with_name(wav.name + ".hash")
    side = json.loads(side_path.read_text())
    del side["phrases"]
    side["format"] = 1
    side["key"] = fixture_key(side["text"], side["inputs"], format_version=1)
    side_path.write_text(json.dumps(side))
    phrases = prove_fixture_text(wav, REFILL)
    assert [p.text for p in phrases] == [
        "Hi, this is Maria Lopez.",
        "I need a refill of my blood pressure medication.",
    ]
    assert phrases[0].start_s == pytest.approx(0.25)
    assert phrases[-1].end_s == pytest.approx(side["wav"]["duration_s"] - 0.25)
    assert phrases[0].end_s == pytest.approx(phrases[1].start_s)


def test_after_a_handoff_the_rest_is_primed_again_without_repeating_what_was_heard(
    made: Made,
) -> None:
    """After a handoff in the middle of a fixture the new agent's VAD streams may cut the rest
    differently from the first scan. The adapter then primes the STT with the finished
    segments followed by the rest as now cut (``heard=``): each phrase goes to the segment it
    is spoken in, and a phrase already heard is not given again."""
    stt = FixtureTextSTT()
    maria, refill = prove_fixture_text(made.paused, PAUSED)
    first = (maria.start_s, maria.end_s)
    middle = (refill.start_s + refill.end_s) / 2

    async def hear(count: int) -> list[str]:
        return [await stt._transcribe(None) for _ in range(count)]

    # The first scan: one segment per sentence; the first is heard, then the agent hands off.
    stt.expect(made.paused, PAUSED, [first, (refill.start_s, refill.end_s)])
    assert run(hear(1)) == ["Hi, this is Maria."]
    # The new agent's VAD streams cut the rest in two.
    rest = [(refill.start_s, middle), (middle, refill.end_s)]
    stt.clear()
    stt.expect(made.paused, PAUSED, [first, *rest], heard=1)
    assert run(hear(2)) == ["I need", "a refill."]
    # Priming the rest alone would give the sentence already heard to its nearest segment.
    stt.clear()
    stt.expect(made.paused, PAUSED, rest)
    assert run(hear(2)) == ["Hi, this is Maria. I need", "a refill."]


def _recording(made: Made, tmp_path: Path) -> Path:
    import soundfile

    wav = tmp_path / "recorded.wav"
    data, rate = soundfile.read(str(made.refill), dtype="int16")
    soundfile.write(str(wav), data, rate, subtype="PCM_16")
    return wav


def test_a_fixture_it_cannot_answer_for_is_an_error_of_the_run_before_any_turn(
    made: Made, tmp_path: Path
) -> None:
    """Issue 21: FixtureTextSTT refusing a fixture must be an error of the run (the runner's
    ERROR, with the fix), found when the conversation starts, never a turn that ran and heard
    nothing (as the interrupting turn of a barge-in did: heard '', a "false interruption")."""
    from pytest_agent_eval.runner import RunSettings, run_transcript

    recorded = _recording(made, tmp_path)
    for second in (
        Turn(user=REFILL, audio=recorded),
        Turn(
            user=REFILL,
            audio=recorded,
            interrupt=InterruptConfig(stop_within_ms=2000, after_ms=500),
        ),
    ):
        script = transcript(Turn(user=SUNDAY, audio=made.sunday), second)
        adapter = LiveKitAdapter(lambda: booking.make_session(stt=FixtureTextSTT()))
        result = run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
        (run_result,) = result.runs
        assert run_result.turns == []  # not one turn ran
        error = run_result.error or ""
        assert "AudioFixtureError" in error, error
        assert "transcript 't', turn 2: FixtureTextSTT cannot answer for audio fixture" in error
        assert "it is a recording" in error and "WhisperSTT" in error
        assert not result.passed


def test_outside_the_adapter_it_refuses_to_hear_what_it_was_not_told() -> None:
    """In an agent's own worker (room mode) nobody hands FixtureTextSTT the fixture's text:
    it raises, saying to use an STT that listens, rather than hear silence."""
    from livekit import rtc

    stt = FixtureTextSTT()
    frame = rtc.AudioFrame(
        data=b"\0\0" * 1600, sample_rate=16000, num_channels=1, samples_per_channel=1600
    )
    with pytest.raises(
        AudioFixtureError, match=r"only for a test that hands it each fixture.s text.*WhisperSTT"
    ):
        run(stt.recognize(frame))
