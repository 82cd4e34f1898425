"""Fixtures of the LiveKit tests; the helpers live in ``livekit_support``."""

from __future__ import annotations

import pytest
from livekit_support import Fixtures, make_fixtures


@pytest.fixture(scope="session")
def fixtures(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    """TTS-made WAV fixtures (and broken ones), synthesized once per test session."""
    return make_fixtures(tmp_path_factory)
