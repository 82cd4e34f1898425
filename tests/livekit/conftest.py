"""Fixtures of the LiveKit tests; the helpers live in ``livekit_support``."""

from __future__ import annotations

import pytest

# Without the livekit extra these tests cannot run; say so instead of erroring at collection.
pytest.importorskip("livekit.agents", reason="needs the livekit extra")
pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")

from pathlib import Path

from corpus_agents import synthesize
from livekit_support import Fixtures, make_fixtures

from pytest_agent_eval.adapters.livekit import WhisperSTT


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    """TTS-made WAV fixtures (and broken ones), synthesized once per test session."""
    return make_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def corpus_audio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The agent corpus's WAV fixtures (one per phrase), synthesized once per test session."""
    return synthesize(tmp_path_factory.mktemp("corpus"))


@pytest.fixture(scope="session")
def whisper_loaded() -> None:
    """The Whisper model, loaded once per process by the first test that needs it, never at
    import or collection (every xdist worker would pay it, even for tests without Whisper).

    Loaded before a session starts, so a test's first transcription is not also the model's
    load: a slow first transcript can make LiveKit resume a paused reply, taking an
    interruption for a false one.
    """
    WhisperSTT().load()
