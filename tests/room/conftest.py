"""Fixtures of the room tests: a lab (server in a loopback-only namespace) and its workers.

Room tests skip, saying why, on a machine that cannot host a lab (no root, no livekit-server);
`.ci/run` sets AGENT_EVAL_REQUIRE_ROOM_TESTS=1, which turns that skip into a failure.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

# Required (CI): a missing livekit fails collection instead of skipping.
if not os.environ.get("AGENT_EVAL_REQUIRE_ROOM_TESTS"):
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from room_lab import EXAMPLE_DIR, EXAMPLE_WORKER, LAB_WORKER, RoomLab, require_labs

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RoomLab]:
    """One lab per test process (per xdist worker); checked for leaks when it stops."""
    require_labs()
    with RoomLab(tmp_path_factory.mktemp("room-lab")) as room_lab:
        yield room_lab
        leaks = room_lab.leaks()
    print(f"\nroom lab timings: {room_lab.timings}")
    assert leaks == [], f"packets left the lab's loopback namespace: {leaks}"


@pytest.fixture(scope="session")
def booking_worker(lab: RoomLab) -> str:
    """The example's worker file, unchanged, registered as ``booking-agent``."""
    lab.start_worker("booking-worker", EXAMPLE_WORKER)
    return "booking-agent"


@pytest.fixture(scope="session")
def lab_worker(lab: RoomLab) -> str:
    """The misbehaving test worker, registered as ``lab-agent``."""
    # Its "absent" jobs never end by themselves; no need to wait for them when the lab stops.
    lab.start_worker("lab-worker", LAB_WORKER, stop_grace_s=2.0)
    return "lab-agent"


@pytest.fixture(scope="session")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The room example's transcripts with their fixtures synthesized, as run_demo.sh does."""
    target = tmp_path_factory.mktemp("example") / "voice-livekit-room"
    shutil.copytree(
        EXAMPLE_DIR,
        target,
        ignore=shutil.ignore_patterns("audio", "__pycache__", ".agent_eval_cache"),
    )
    transcripts = [load_transcript_file(p) for p in sorted((target / "evals").glob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return target
