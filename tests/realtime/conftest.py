"""Fixtures of the realtime-agent tests (agents on a realtime, speech-to-speech model)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")
pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")

# The LiveKit tests' helpers (converse, the corpus's comparison of captured turns) serve these
# tests too: one way to run a conversation and one way to compare captures.
_LIVEKIT_TESTS = str(Path(__file__).resolve().parent.parent / "livekit")
if _LIVEKIT_TESTS not in sys.path:
    sys.path.append(_LIVEKIT_TESTS)

from realtime_agents import synthesize  # noqa: E402


@pytest.fixture(scope="session")
def realtime_audio(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The realtime corpus's WAV fixtures (one per phrase), synthesized once per test session."""
    return synthesize(tmp_path_factory.mktemp("realtime"))
