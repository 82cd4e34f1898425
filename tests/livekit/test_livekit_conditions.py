"""Audio conditions through a real AgentSession with the offline Whisper STT: the same
transcript passes clean and degrades measurably under harsh noise, each seed gives the same
audio every time, and the STT that does not listen is refused."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path

import pytest
from livekit.agents import Agent, AgentSession
from livekit_support import BOOK_TEXT, Fixtures, booking, run

from pytest_agent_eval._expansion import expand
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.livekit import FixtureTextSTT, LiveKitAdapter, WhisperSTT
from pytest_agent_eval.models import Transcript, TranscriptResult
from pytest_agent_eval.voice._fixtures import read_wav, word_error_rate

pytest.importorskip("pedalboard", reason="needs the conditions extra")

YAML = f"""
id: booking
seed: 5
runs: 2
variants:
  - clean
  - name: harsh
    conditions: [{{noise: {{color: white, snr_db: -5}}}}]
turns:
  - user: "{BOOK_TEXT}"
    audio: book.wav
    expect:
      heard_wer_max: 0.25
"""


def _variants(fixtures: Fixtures) -> list[Transcript]:
    return expand(load_transcript_text(YAML, path=fixtures.folder / "conditions.yaml"))


def _whisper_session() -> tuple[AgentSession, Agent]:
    return booking.make_session(stt=WhisperSTT())


def _run(transcript: Transcript, save: Path) -> TranscriptResult:
    settings = RunSettings(concurrency=1, save_audio_dir=save)
    return run(run_transcript(transcript, LiveKitAdapter(_whisper_session), settings=settings))


def _sha(path: Path | None) -> str:
    assert path is not None and path.is_file()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_same_transcript_passes_clean_and_degrades_under_harsh_noise(
    fixtures: Fixtures, tmp_path: Path
) -> None:
    clean, harsh = _variants(fixtures)
    clean_result = _run(clean, tmp_path / "first")
    harsh_result = _run(harsh, tmp_path / "first")

    assert clean_result.passed, clean_result.runs
    clean_wers = clean_result.turn_wers
    harsh_wers = harsh_result.turn_wers
    assert len(clean_wers) == len(harsh_wers) == 2 and max(clean_wers) <= 0.25
    # Measurably worse: the STT heard the same words far less well under the noise...
    assert min(harsh_wers) >= max(clean_wers) + 0.3
    # ... and the turn fails heard_wer_max for that reason, with what was heard.
    assert not harsh_result.passed
    for run_result in harsh_result.runs:
        (turn,) = run_result.turns
        assert turn.error is None
        check = next(e for e in turn.evaluations if e.name == "heard_wer_max")
        assert not check.passed and not check.errored
        assert f"WER {turn.wer:.2f} > heard_wer_max 0.25" in check.reasoning
        assert turn.conditions == "noise(snr_db=-5, color=white, talkers=4)"
        assert turn.wer == pytest.approx(word_error_rate(BOOK_TEXT, turn.heard or ""), abs=1e-4)
    # The streamed audio is saved, after the conditions; the fixture on disk is the clean one.
    streamed = read_wav(harsh_result.runs[0].turns[0].audio_in)  # type: ignore[arg-type]
    clean_streamed = read_wav(clean_result.runs[0].turns[0].audio_in)  # type: ignore[arg-type]
    assert streamed.sample_rate == clean_streamed.sample_rate == 24000
    noise_floor = float((streamed.samples[:2400] ** 2).mean())  # the first 0.1 s: no speech
    assert noise_floor > 100 * float((clean_streamed.samples[:2400] ** 2).mean())


def test_the_same_seed_streams_the_same_audio_and_each_run_its_own(
    fixtures: Fixtures, tmp_path: Path
) -> None:
    _, harsh = _variants(fixtures)
    fixture_before = _sha(fixtures.book)
    first = _run(harsh, tmp_path / "first")
    second = _run(harsh, tmp_path / "second")
    for index in (0, 1):
        a = first.runs[index].turns[0].audio_in
        b = second.runs[index].turns[0].audio_in
        assert a is not None and b is not None and a != b  # two folders...
        assert _sha(a) == _sha(b)  # ... the same bytes
    # Each run draws its own noise (its own seed), and the fixture itself never changes.
    assert _sha(first.runs[0].turns[0].audio_in) != _sha(first.runs[1].turns[0].audio_in)
    assert _sha(fixtures.book) == fixture_before
    assert (
        first.runs[0].turns[0].audio_in
        == (tmp_path / "first" / "booking_harsh" / "run1-turn1.wav").resolve()
    )


def test_fixture_text_stt_is_refused_under_audio_conditions(fixtures: Fixtures) -> None:
    _, harsh = _variants(fixtures)

    def fixture_text_session() -> tuple[AgentSession, Agent]:
        return booking.make_session(stt=FixtureTextSTT())

    result = run(run_transcript(harsh, LiveKitAdapter(fixture_text_session)))
    assert not result.passed
    for run_result in result.runs:
        assert run_result.error is not None and not run_result.turns
        assert (
            "transcript 'booking[harsh]', turn 1: variant 'harsh' (noise(snr_db=-5, color=white, "
            "talkers=4)) change what the agent hears, but the session's STT is FixtureTextSTT"
        ) in run_result.error
        assert "Use an STT that listens, such as WhisperSTT()" in run_result.error
    # Without conditions, the same STT is fine.
    clean, _ = _variants(fixtures)
    assert run(run_transcript(clean, LiveKitAdapter(fixture_text_session))).passed


def test_conditions_are_applied_once_per_turn_not_cached_across_seeds(
    fixtures: Fixtures,
) -> None:
    _, harsh = _variants(fixtures)
    adapter = LiveKitAdapter(_whisper_session)
    conditions = harsh.conditions
    one = asyncio.run(asyncio.to_thread(adapter.turn_audio, fixtures.book, conditions, 1))
    two = adapter.turn_audio(fixtures.book, conditions, 2)
    again = adapter.turn_audio(fixtures.book, conditions, 1)
    data = [b"".join(bytes(f.data) for f in a.frames) for a in (one, two, again)]
    assert data[0] == data[2] and data[0] != data[1]
    assert adapter.turn_audio(fixtures.book) is adapter.fixture_audio(fixtures.book)


DEAF_YAML = f"""
id: booking
seed: 5
runs: 2
variants:
  - clean
  - name: deaf
    conditions: [{{noise: {{color: white, snr_db: -12}}}}]
turns:
  - user: "{BOOK_TEXT}"
    audio: book.wav
"""


def test_a_variant_the_agent_cannot_hear_fails_naming_the_condition_not_the_fixture(
    fixtures: Fixtures, tmp_path: Path
) -> None:
    """The clean variant passes, so the fixture is fine: under noise the VAD hears nothing in,
    the agent failed that condition (a FAIL that names it), not an ERROR asking for a new
    fixture."""
    clean, deaf = expand(load_transcript_text(DEAF_YAML, path=fixtures.folder / "deaf.yaml"))
    assert _run(clean, tmp_path).passed
    result = _run(deaf, tmp_path)
    assert result.errored_run_count == 0 and result.verdict == "failed"
    for run_result in result.runs:
        (turn,) = run_result.turns
        assert turn.verdict == "failed" and turn.error is not None
        assert turn.error.startswith(
            "AgentFailedError: turn 1: under the audio conditions noise(snr_db=-12, color=white"
        )
        assert "the agent would never get a turn, so it fails this condition" in turn.error
        assert "Not observed: whether the clean fixture is heard" in turn.error
        assert "Re-create the fixture" not in turn.error
