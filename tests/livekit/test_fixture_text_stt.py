"""FixtureTextSTT answers only with text a fixture's provenance proves, and only the words whose
audio ended within each speech segment.

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

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit._audio import load_fixture_audio
from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.models import InterruptConfig, Turn
from pytest_agent_eval.synthesize import ensure_fixtures
from pytest_agent_eval.voice._fixtures import (
    prove_fixture_text,
    read_sidecar,
    set_max_fixture_s,
)

REFILL = "Hi, this is Maria Lopez. I need a refill of my blood pressure medication."
SUNDAY = "What time are you open on Sunday?"
PAUSED = "Hi, this is Maria. [pause 2s] I need a refill."
# One sentence: hibari at half speed pauses 0.86 s after "payment:", which every VAD here ends a
# segment at. The sidecar's phrase is the whole sentence; only its word timings see the pause.
SPLIT = "I would like two large pizzas with extra cheese and for payment: cash please."
SPLIT_FIRST = "I would like two large pizzas with extra cheese and for payment:"


@dataclass(frozen=True)
class Made:
    folder: Path
    refill: Path
    sunday: Path
    paused: Path
    split: Path


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Made:
    folder = tmp_path_factory.mktemp("stt")
    (folder / "t.yaml").write_text(
        f'id: t\nturns:\n  - user: "{REFILL}"\n    audio: refill.wav\n'
        f'  - user: "{SUNDAY}"\n    audio: sunday.wav\n'
        f'  - user: "{PAUSED}"\n    audio: paused.wav\n'
    )
    (folder / "slow.yaml").write_text(
        f'id: slow\nvoice: {{speed: 0.5}}\nturns:\n  - user: "{SPLIT}"\n    audio: split.wav\n'
    )
    loaded = [load_transcript_file(folder / name) for name in ("t.yaml", "slow.yaml")]
    ensure_fixtures(loaded, jobs=1).raise_for_failures()
    return Made(
        folder,
        folder / "refill.wav",
        folder / "sunday.wav",
        folder / "paused.wav",
        folder / "split.wav",
    )


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


def test_a_sentence_cut_at_a_pause_is_heard_word_by_word_as_it_is_said(made: Made) -> None:
    """Issue 32: when the VAD cut one sentence at a pause, the STT answered the first segment
    with the whole sentence, and a bot had the words said after the pause ("cash please") at
    the first end of turn. The agent must get only the words said before the pause then, so a
    rule keyed on the later words cannot fire early."""
    from livekit.agents import AgentSession

    asked: list[str] = []

    def note(ctx: Any) -> str:
        asked.append(ctx.user)
        return "Noted."

    rules = [
        Rule(r"\bcash\b", tool="check_menu", args={"diet": "cash"}, reply=note),
        Rule(r".", reply=note),
    ]
    stt = ListeningSTT()

    def factory() -> tuple[AgentSession[Any], Any]:
        session: AgentSession[Any] = AgentSession(
            stt=stt, vad=booking.VAD, llm=ScriptedLLM(rules), **eval_session_kwargs()
        )
        return session, booking.RestaurantAgent()

    (reply,) = run(
        converse(LiveKitAdapter(factory), transcript(Turn(user=SPLIT, audio=made.split)))
    )
    assert reply.metadata["livekit"]["speech_segments"] == 2
    assert stt.answers == [SPLIT_FIRST, "cash please."]
    # The first end of turn was answered from the first part alone; the rule on "cash" fired
    # only once the words were said.
    assert asked[0] == SPLIT_FIRST
    assert [c.name for c in reply.calls] == ["check_menu"]
    assert reply.heard == SPLIT


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
    words = prove_fixture_text(made.refill, REFILL)
    assert " ".join(w.text for w in words) == REFILL
    assert words == read_sidecar(made.refill).words
    # The spoken text (markup removed, as text adapters get it) proves the same as the user text.
    assert prove_fixture_text(made.paused, "Hi, this is Maria. I need a refill.")
    # Without the sidecar, the key inside the WAV proves the text but holds no word timings:
    # refused, naming the command that makes the fixture again.
    lost = tmp_path / "lost.wav"
    shutil.copy(made.refill, lost)
    with pytest.raises(AudioFixtureError, match=r"sidecar is missing.*word timings.*synthesize"):
        prove_fixture_text(lost, REFILL)

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


@pytest.fixture
def small_cap() -> Iterator[None]:
    set_max_fixture_s(1.0)
    yield
    set_max_fixture_s(None)


@pytest.mark.usefixtures("small_cap")
def test_the_session_loader_applies_the_duration_cap(made: Made) -> None:
    with pytest.raises(AudioFixtureError, match=r"is 5\.\d s long, over the 1 s limit"):
        load_fixture_audio(made.refill, sample_rate=24000, frame_ms=20, tail_s=0.6)


def test_a_fixture_without_word_timings_is_refused_naming_the_command(
    made: Made, tmp_path: Path
) -> None:
    """A sidecar written before word timings existed (format 1 too, which had no phrase
    timings either) proves the text but not when each word is said: the STT refuses it, one
    line naming the fixture and the command that adds the timings."""
    from pytest_agent_eval.voice._fixtures import fixture_key

    for fmt in (2, 1):
        wav = _copy(made.refill, tmp_path / f"old{fmt}")
        side_path = wav.with_name(wav.name + ".hash")
        side = json.loads(side_path.read_text())
        del side["words"], side["word_alignment"]
        if fmt == 1:
            del side["phrases"]
            side["format"] = 1
            side["key"] = fixture_key(side["text"], side["inputs"], format_version=1)
        side_path.write_text(json.dumps(side))
        with pytest.raises(AudioFixtureError) as info:
            _listen(wav, REFILL)
        message = str(info.value)
        assert f"audio fixture {wav}: its sidecar has no word timings (made before" in message
        assert "python -m pytest_agent_eval.synthesize_audio" in message
        assert "\n" not in message


def test_after_a_handoff_the_rest_is_primed_again_without_repeating_what_was_heard(
    made: Made,
) -> None:
    """After a handoff in the middle of a fixture the new agent's VAD streams may cut the rest
    differently from the first scan. The adapter then primes the STT with the finished
    segments followed by the rest as now cut (``heard=``): each word goes to the segment it
    ends in, and a word already heard is not given again."""
    stt = FixtureTextSTT()
    words = prove_fixture_text(made.paused, PAUSED)
    maria, refill = words[:4], words[4:]
    first = (maria[0].start_s, maria[-1].end_s)
    middle = refill[2].end_s  # after "I need a"

    async def hear(count: int) -> list[str]:
        return [await stt._transcribe(None) for _ in range(count)]

    # The first scan: one segment per sentence; the first is heard, then the agent hands off.
    stt.expect(made.paused, PAUSED, [first, (refill[0].start_s, refill[-1].end_s)])
    assert run(hear(1)) == ["Hi, this is Maria."]
    # The new agent's VAD streams cut the rest in two.
    rest = [(refill[0].start_s, middle), (middle, refill[-1].end_s)]
    stt.clear()
    stt.expect(made.paused, PAUSED, [first, *rest], heard=1)
    assert run(hear(2)) == ["I need a", "refill."]
    # Priming the rest alone would give the sentence already heard to the first segment.
    stt.clear()
    stt.expect(made.paused, PAUSED, rest)
    assert run(hear(2)) == ["Hi, this is Maria. I need a", "refill."]


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
    from pytest_agent_eval._runner import RunSettings, run_transcript

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
