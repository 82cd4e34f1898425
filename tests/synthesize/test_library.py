"""The entry points the pytest plugin uses: fixture_problems and ensure_fixtures."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.models import Transcript, Turn, VoiceSettings
from pytest_agent_eval.synthesize import (
    FixtureState,
    Planner,
    ensure_fixtures,
    fixture_problems,
)

from .conftest import file_ids


def test_fresh_transcript_has_no_problems(project: Callable[[], Path]) -> None:
    root = project()
    transcript = load_transcript_file(root / "evals" / "booking.yaml")
    assert fixture_problems(transcript, VoiceSettings()) == []


def test_problems_carry_turn_path_reason_and_the_exact_command(
    project: Callable[[], Path],
) -> None:
    root = project()
    (root / "evals" / "booking_t2.wav").unlink()
    transcript = load_transcript_file(root / "evals" / "booking.yaml")
    problems = fixture_problems(transcript, VoiceSettings(speed=1.1))
    assert [p.turn_index for p in problems] == [0, 1, 2, 3]
    missing = problems[1]
    assert missing.state is FixtureState.MISSING
    assert missing.wav == root / "evals" / "booking_t2.wav"
    assert missing.reason == "WAV missing"
    assert missing.message == (
        "evals/booking.yaml:5: transcript 'booking', turn 2: audio fixture "
        "evals/booking_t2.wav is missing (WAV missing). "
        "Fix: python -m pytest_agent_eval.synthesize_audio evals/booking.yaml"
    )
    assert problems[0].reason == "speed changed: 1.0 -> 1.1"


def test_invalid_voice_settings_are_problems_without_a_fix_command(tmp_path: Path) -> None:
    transcript = Transcript(
        id="t",
        turns=[Turn(user="Hi.", audio=tmp_path / "hi.wav", voice=VoiceSettings(backend="nope"))],
        path=tmp_path / "t.yaml",
    )
    (problem,) = fixture_problems(transcript)
    assert problem.state is FixtureState.INVALID
    assert "unknown TTS backend 'nope'" in problem.message
    assert "Fix:" not in problem.message


def test_two_turns_wanting_different_audio_in_one_file(tmp_path: Path) -> None:
    wav = tmp_path / "same.wav"
    transcript = Transcript(
        id="t", turns=[Turn(user="Yes.", audio=wav), Turn(user="No.", audio=wav)]
    )
    problems = fixture_problems(transcript)
    assert [p.state for p in problems] == [FixtureState.MISSING, FixtureState.INVALID]
    assert "uses the same WAV with different text or voice" in problems[1].reason


def test_ensure_fixtures_makes_only_what_is_missing(project: Callable[[], Path]) -> None:
    root = project()
    evals = root / "evals"
    (evals / "booking_t4.wav").unlink()
    before = file_ids(evals)
    transcript = load_transcript_file(evals / "booking.yaml")
    summary = ensure_fixtures([transcript], VoiceSettings(), jobs=1)
    assert summary.ok
    assert [r.spec.wav.name for r in summary.synthesized] == ["booking_t4.wav"]
    assert len(summary.up_to_date) == 3
    assert summary.audio_seconds > 0.5
    summary.raise_for_failures()
    after = file_ids(evals)
    assert {n for n in after if after[n] != before.get(n)} == {
        "booking_t4.wav",
        "booking_t4.wav.hash",
    }


def test_ensure_fixtures_reports_failures_clearly(tmp_path: Path) -> None:
    transcript = Transcript(
        id="t",
        turns=[
            Turn(user="Hello there.", audio=tmp_path / "ok.wav"),
            Turn(user="Hi.", audio=tmp_path / "bad.wav", voice=VoiceSettings(voice="nope-xx")),
            Turn(
                user="Hi.",
                audio=tmp_path / "gb.wav",
                voice=VoiceSettings(backend="espeak", voice="xx-nolang"),
            ),
        ],
        path=tmp_path / "t.yaml",
    )
    summary = ensure_fixtures([transcript], jobs=2)
    assert not summary.ok
    assert [r.spec.wav.name for r in summary.synthesized] == ["ok.wav"]
    assert [r.spec.wav.name for r in summary.failed] == ["gb.wav"]
    assert [p.wav.name for p in summary.invalid] == ["bad.wav"]
    with pytest.raises(AudioFixtureError) as info:
        summary.raise_for_failures()
    message = str(info.value)
    assert message.startswith("2 audio fixture(s) could not be synthesized:")
    assert "hibari has no voice 'nope-xx'" in message
    assert "espeak-ng has no voice 'xx-nolang'" in message
    assert not (tmp_path / "gb.wav").exists()
    assert not (tmp_path / "gb.wav.hash").exists()


def test_layers_merge_config_then_transcript_then_turn_then_flags(tmp_path: Path) -> None:
    transcript = Transcript(
        id="t",
        voice=VoiceSettings(speed=1.1, sample_rate=22050),
        turns=[
            Turn(user="A.", audio=tmp_path / "a.wav"),
            Turn(user="B.", audio=tmp_path / "b.wav", voice=VoiceSettings(speed=0.9)),
        ],
    )
    planner = Planner(VoiceSettings(sample_rate=24000, seed=7))
    a, b = planner.plan([transcript]).specs
    assert (a.inputs["speed"], a.inputs["sample_rate"], a.inputs["seed"]) == (1.1, 22050, 7)
    assert (b.inputs["speed"], b.inputs["sample_rate"]) == (0.9, 22050)
    flagged = Planner(VoiceSettings(), overrides=VoiceSettings(speed=1.5)).plan([transcript])
    assert [s.inputs["speed"] for s in flagged.specs] == [1.5, 1.5]


def test_worker_processes_make_the_same_bytes_as_one_process(tmp_path: Path) -> None:
    from pytest_agent_eval.synthesize._run import MIN_ITEMS_PER_PROCESS

    words = ["Yes.", "No.", "Maybe.", "Sure.", "Thanks.", "Hello.", "Goodbye.", "Okay."]
    count = 2 * MIN_ITEMS_PER_PROCESS  # enough for two workers
    texts = [f"{words[i % len(words)]} {i}." for i in range(count)]
    parallel = Transcript(
        id="p", turns=[Turn(user=t, audio=tmp_path / "p" / f"{i}.wav") for i, t in enumerate(texts)]
    )
    summary = ensure_fixtures([parallel], jobs=2)
    summary.raise_for_failures()
    assert len(summary.synthesized) == count
    sample = [0, count // 2, count - 1]
    serial = Transcript(
        id="s", turns=[Turn(user=texts[i], audio=tmp_path / "s" / f"{i}.wav") for i in sample]
    )
    ensure_fixtures([serial], jobs=1).raise_for_failures()
    for i in sample:
        assert (tmp_path / "p" / f"{i}.wav").read_bytes() == (
            tmp_path / "s" / f"{i}.wav"
        ).read_bytes()
