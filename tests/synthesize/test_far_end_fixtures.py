"""The spoken lines of a far end heard as audio (``far_end: {as: audio}``) are fixtures like a
turn's: planned next to the YAML (``audio/far_end/<id>/<line>.wav``), made offline by
``python -m pytest_agent_eval.synthesize_audio`` with their provenance, fresh afterwards and
kept by ``--prune``; a missing one is named by the far end's line, not a turn. A far end played
as text needs none."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.models import VoiceSettings
from pytest_agent_eval.synthesize import FixtureState, fixture_problems
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._fixtures import Origin, read_provenance, read_wav

GREETING = "Hi, you have reached Sam. Please leave a message after the beep."
VOICEMAIL = f"""\
# A voicemail box, heard as audio
id: reminder_voicemail
far_end:
  kind: voicemail
  as: {{medium}}
  greeting: "{GREETING}"
  expect:
    voicemail: {{{{says: ["Tuesday at 3"]}}}}
"""


def _project(tmp_path: Path, medium: str) -> Path:
    (tmp_path / "evals").mkdir()
    yaml = tmp_path / "evals" / "voicemail.yaml"
    yaml.write_text(VOICEMAIL.format(medium=medium))
    return yaml


def test_the_greeting_is_synthesized_with_its_provenance_and_then_fresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    yaml = _project(tmp_path, "audio")
    transcript = load_transcript_file(yaml)
    (missing,) = fixture_problems(transcript, VoiceSettings())
    assert missing.state is FixtureState.MISSING
    assert missing.message.startswith(
        "evals/voicemail.yaml:3: transcript 'reminder_voicemail', far_end.greeting: audio "
        "fixture evals/audio/far_end/reminder_voicemail/greeting.wav is missing"
    )
    assert main([str(yaml)]) == 0
    wav = tmp_path / "evals" / "audio" / "far_end" / "reminder_voicemail" / "greeting.wav"
    assert read_wav(wav).duration_s > 1.0
    provenance = read_provenance(wav)
    assert provenance.origin is Origin.SYNTHESIZED
    assert provenance.sidecar is not None and provenance.sidecar.text == GREETING
    assert fixture_problems(transcript, VoiceSettings()) == []
    # The greeting is used: pruning the folder keeps it.
    assert main([str(tmp_path / "evals"), "--prune"]) == 0
    assert wav.is_file()


def test_a_far_end_played_as_text_needs_no_fixture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    transcript = load_transcript_file(_project(tmp_path, "text"))
    assert fixture_problems(transcript, VoiceSettings()) == []
