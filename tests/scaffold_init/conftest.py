"""A LiveKit project made by ``init``, once per session: the scaffold tests and the CI recipe
test both run it (each on its own copy when it changes anything)."""

from __future__ import annotations

from pathlib import Path

import pytest
from init_support import run_init


@pytest.fixture(scope="session")
def livekit_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("livekit.agents", reason="the LiveKit scaffold needs the livekit extra")
    target = tmp_path_factory.mktemp("init") / "voice-project"
    result = run_init("--adapter", "livekit", target)
    assert result.returncode == 0, result.stdout + result.stderr
    return target
