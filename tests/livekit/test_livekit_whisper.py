"""The same conversation heard by a real offline speech recognizer (Whisper tiny.en)."""

from __future__ import annotations

from pathlib import Path

import pytest
from livekit.agents import Agent, AgentSession
from livekit_support import BOOK_TEXT, NAME_TEXT, Fixtures, booking, converse, run, transcript

from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT
from pytest_agent_eval.audio_fixtures import word_error_rate
from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.models import Turn


def test_whisper_hears_the_fixtures_and_the_agent_remembers(fixtures: Fixtures) -> None:
    def factory() -> tuple[AgentSession, Agent]:
        return booking.make_session(stt=WhisperSTT())

    script = transcript(
        Turn(user=BOOK_TEXT, audio=fixtures.book),
        Turn(user="Do you have vegan dishes?"),
        Turn(user=NAME_TEXT, audio=fixtures.name),
    )
    first, _second, third = run(converse(LiveKitAdapter(factory), script))

    assert first.heard is not None and word_error_rate(BOOK_TEXT, first.heard) <= 0.2
    assert [(c.name, c.args) for c in first.calls] == [
        ("book_table", {"party_size": 2, "time": "19:00", "name": "Alice"})
    ]
    assert third.heard is not None and word_error_rate(NAME_TEXT, third.heard) <= 0.2
    assert third.reply == "The booking is under Alice."


def test_whisper_stt_names_a_missing_model_folder(tmp_path: Path) -> None:
    with pytest.raises(AudioFixtureError, match="does not exist"):
        WhisperSTT(tmp_path / "no-such-model").load()
