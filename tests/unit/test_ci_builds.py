"""`.ci/run`'s server builds, waited for by the tests that need them (tests/ci_builds.py).

A build holds its lock from before it starts until it ends; a test that needs the binary waits
on it and goes on the moment the build ends. While builds are pending, the room tier runs last.
"""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from ci_builds import BUILDS_ENV, build_log, builds_started, wait_for_build

TESTS = Path(__file__).resolve().parents[1]


def test_a_test_waits_while_the_build_holds_its_lock_and_goes_on_when_it_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(BUILDS_ENV, str(tmp_path))
    # As `.ci/run` does: lock first, then start the build, which inherits the locked
    # descriptor and holds it (here until its input ends); then let go of ours.
    with (tmp_path / "server.lock").open("wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        build = subprocess.Popen(
            ["bash", "-c", "read -r _; echo built"],
            stdin=subprocess.PIPE,
            stdout=tmp_path.joinpath("server.out").open("w"),
            text=True,
            pass_fds=(lock.fileno(),),
        )
    waited = threading.Event()
    waiter = threading.Thread(target=lambda: (wait_for_build("server"), waited.set()))
    waiter.start()
    assert builds_started()
    assert not waited.wait(0.5), "the test went on while the build held its lock"
    assert build.stdin is not None
    build.stdin.write("\n")
    build.stdin.close()
    assert build.wait(10) == 0
    waiter.join(10)
    assert waited.is_set(), "the test still waits after the build ended"
    assert build_log("server") == "built"


def test_nothing_waits_without_builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(BUILDS_ENV, raising=False)
    wait_for_build("server")
    assert not builds_started() and build_log("server") == ""
    monkeypatch.setenv(BUILDS_ENV, str(tmp_path))  # the folder, but no build of that name
    wait_for_build("sip")
    assert not builds_started() and build_log("sip") == ""


PRINT_TIERS = """
def pytest_collection_finish(session):
    for item in session.items:
        print("ITEM", item.get_closest_marker("room") is not None, item.nodeid)
"""


def test_while_builds_are_pending_the_room_tier_runs_last(tmp_path: Path) -> None:
    (tmp_path / "print_tiers.py").write_text(PRINT_TIERS)
    (tmp_path / "sip.lock").touch()
    env = {**os.environ, BUILDS_ENV: str(tmp_path), "PYTHONPATH": str(tmp_path)}
    # Named room tests first: without the builds they would be collected first.
    files = [TESTS / "room/test_room_parts.py", TESTS / "unit/test_readme.py"]
    args = ["--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:xdist"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *args, "-p", "print_tiers", *map(str, files)],
        cwd=TESTS.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    room = [
        line.split()[1] == "True" for line in done.stdout.splitlines() if line.startswith("ITEM")
    ]
    assert any(room) and not all(room), done.stdout
    assert room == sorted(room), f"a room test runs before another:\n{done.stdout}"
