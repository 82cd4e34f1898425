"""Collecting the voice test folders loads no speech-recognition model (issue 23).

Every xdist worker collects every test module, so a model loaded at import or collection time
is paid once per worker even by a run that selects none of the tests needing it (Whisper took
about 2 s per worker in tests/livekit/test_livekit_barge_in.py). Tests that need the model ask
for the ``whisper_loaded`` fixture instead.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

_PROBE = textwrap.dedent(
    """
    import sys


    def pytest_collection_finish(session):
        whisper = sys.modules.get("pytest_agent_eval.voice._whisper")
        loaded = len(getattr(whisper, "_models", {}) or {}) if whisper else 0
        print(f"\\nPROBE collected={len(session.items)} whisper_models={loaded}")
    """
)


def test_collecting_the_voice_folders_loads_no_whisper_model(tmp_path: Path) -> None:
    (tmp_path / "collection_probe.py").write_text(_PROBE)
    folders = [f"tests/{name}" for name in ("livekit", "room", "pipecat")]
    command = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "collection_probe"]
    out = subprocess.run(
        [*command, "-p", "no:cacheprovider", *folders],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**_env(), "PYTHONPATH": str(tmp_path)},
        timeout=300,
    )
    probe = [line for line in out.stdout.splitlines() if line.startswith("PROBE ")]
    assert probe, out.stdout[-2000:] + out.stderr[-2000:]
    fields = dict(part.split("=") for part in probe[-1].split()[1:])
    assert int(fields["collected"]) > 100, probe
    assert fields["whisper_models"] == "0", (
        "a test module of tests/livekit, tests/room or tests/pipecat loads Whisper at import "
        "or collection; load it in a fixture (whisper_loaded)"
    )


def _env() -> dict[str, str]:
    import os

    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)
    env.pop("PYTEST_XDIST_WORKER_COUNT", None)
    env.pop("PYTEST_ADDOPTS", None)
    return env


@pytest.fixture(autouse=True)
def _needs_the_stt_extra() -> None:
    pytest.importorskip("faster_whisper", reason="needs the stt extra")
