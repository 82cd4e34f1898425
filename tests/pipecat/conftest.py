"""Fixtures of the Pipecat tests; the helpers live in ``pipecat_support`` and the bots in
``corpus_bots`` (no ``__init__.py`` here: a package named after ``pipecat`` would shadow it)."""

from __future__ import annotations

import pytest

pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")

from pathlib import Path

from pipecat_support import synthesize_phrases


@pytest.fixture(scope="session")
def phrases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Every corpus phrase as a WAV made by the offline default voice, once per session."""
    return synthesize_phrases(tmp_path_factory.mktemp("pipecat-phrases"))
