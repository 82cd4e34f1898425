"""Fixtures of the LiveKit tests; the helpers live in ``livekit_support``."""

from __future__ import annotations

import pytest

# Without the livekit extra these tests cannot run; say so instead of erroring at collection.
pytest.importorskip("livekit.agents", reason="needs the livekit extra")
pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")

from pathlib import Path

from corpus_agents import synthesize
from livekit_support import Fixtures, make_fixtures


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    """TTS-made WAV fixtures (and broken ones), synthesized once per test session."""
    return make_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def corpus_audio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The agent corpus's WAV fixtures (one per phrase), synthesized once per test session."""
    return synthesize(tmp_path_factory.mktemp("corpus"))
