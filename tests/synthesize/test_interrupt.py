"""Kill a synthesis run mid-way (SIGKILL, no cleanup code runs) and look at what it left."""

from __future__ import annotations

import contextlib
import hashlib
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._fixtures import read_sidecar

SENTENCES = [
    "I'd like to move my flight to Friday, March 3rd.",
    "What's the weather like in San Francisco this weekend?",
    "Please transfer $250 from checking to savings.",
    "Is the pharmacy on Main Street open until 9:30 pm?",
    "Hi, I'm calling about my internet bill from last month.",
    "No, the order number is 48213, not 48231.",
]


def write_suite(folder: Path, prefix: str = "") -> None:
    turns = "".join(
        f'  - user: "{prefix}{text}"\n    audio: t{i:02d}.wav\n' for i, text in enumerate(SENTENCES)
    )
    (folder / "long.yaml").write_text(f"id: long\nturns:\n{turns}")


def run_and_kill_after_first_fixture(folder: Path, *args: str) -> None:
    """Start the command line, wait until it reports one fixture, then SIGKILL its group."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "-j", "1", *args, "."],
        cwd=folder,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        start_new_session=True,
    )
    assert proc.stdout is not None
    try:
        for line in proc.stdout:
            if line.startswith(b"synthesized"):
                break
        else:
            raise AssertionError("the run ended before reporting a fixture")
        os.killpg(proc.pid, signal.SIGKILL)
    finally:
        proc.wait(timeout=60)
        proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL


def assert_nothing_looks_current_unless_it_is(folder: Path) -> list[Path]:
    """Every WAV with a sidecar is exactly the WAV the sidecar describes; returns those."""
    current = []
    for wav in sorted(folder.glob("*.wav")):
        sidecar = read_sidecar(wav)
        if sidecar is None or sidecar.pending:
            continue  # an interrupted write: reported as stale, checked below
        assert sidecar.wav_sha256 == hashlib.sha256(wav.read_bytes()).hexdigest(), wav
        assert sidecar.wav_bytes == wav.stat().st_size
        current.append(wav)
    return current


def test_a_killed_run_leaves_only_whole_fixtures_and_the_next_run_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    write_suite(tmp_path)
    run_and_kill_after_first_fixture(tmp_path)
    done = assert_nothing_looks_current_unless_it_is(tmp_path)
    assert 1 <= len(done) < len(SENTENCES)

    # Leftovers of a dead writer are ignored by --check and cleaned by the next run; a temp
    # file of a live process is not touched.
    dead = tmp_path / ".t00.wav.999999999.deadbeef.tmp"
    alive = tmp_path / f".t01.wav.{os.getpid()}.livefile.tmp"
    dead.write_bytes(b"RIFF half a file")
    alive.write_bytes(b"RIFF being written")
    monkeypatch.chdir(tmp_path)
    assert main(["--check", "."]) == 1
    out = capsys.readouterr().out
    assert f"{len(SENTENCES) - len(done)} of {len(SENTENCES)} fixture(s)" in out
    assert ".tmp" not in out

    assert main(["."]) == 0
    assert f"│ {len(SENTENCES) - len(done):>11} │ {len(done):>10} │" in capsys.readouterr().out
    assert not dead.exists()
    assert alive.exists()
    assert len(assert_nothing_looks_current_unless_it_is(tmp_path)) == len(SENTENCES)


def test_a_killed_rewrite_never_pairs_new_audio_with_an_old_sidecar(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_suite(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["."]) == 0
    write_suite(tmp_path, prefix="Sorry, ")  # every text changes
    run_and_kill_after_first_fixture(tmp_path)
    current = assert_nothing_looks_current_unless_it_is(tmp_path)
    redone = [w for w in current if read_sidecar(w).text.startswith("Sorry, ")]
    assert 1 <= len(redone) < len(SENTENCES)
    assert main(["."]) == 0
    assert main(["--check", "."]) == 0


def _children(pid: int) -> set[int]:
    """Every live descendant of ``pid`` (from /proc)."""
    found: set[int] = set()
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        for task in Path(f"/proc/{parent}/task").glob("*/children"):
            with contextlib.suppress(OSError):
                for child in task.read_text().split():
                    if int(child) not in found:
                        found.add(int(child))
                        frontier.append(int(child))
    return found


def _wait_all_exit(pids: set[int], deadline_s: float) -> set[int]:
    """Wait (on pidfds, no sleeping) until every process in ``pids`` has exited; the ones still
    running at the deadline are returned."""
    fds = {}
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            fds[os.pidfd_open(pid)] = pid
    end = time.monotonic() + deadline_s
    try:
        while fds and (left := end - time.monotonic()) > 0:
            ready, _, _ = select.select(list(fds), [], [], left)
            for fd in ready:
                os.close(fd)
                fds.pop(fd)
        return set(fds.values())
    finally:
        for fd in fds:
            os.close(fd)


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="needs Linux pidfds to watch processes")
def test_kill_9_of_the_command_leaves_no_worker_behind(tmp_path: Path) -> None:
    """Issue 12: workers (hundreds of MB each) outlived a SIGKILLed command."""
    from pytest_agent_eval.synthesize._run import MIN_ITEMS_PER_PROCESS

    count = 2 * MIN_ITEMS_PER_PROCESS + 8  # enough for two worker processes
    turns = "".join(
        f'  - user: "Number {i} please."\n    audio: n{i:02d}.wav\n' for i in range(count)
    )
    (tmp_path / "many.yaml").write_text(f"id: many\nturns:\n{turns}")
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    workers: set[int] = set()
    try:
        for line in proc.stdout:
            if line.startswith(b"synthesized"):  # a worker has made one: the pool is up
                workers = _children(proc.pid)
                break
        else:
            raise AssertionError("the run ended before reporting a fixture")
        assert len(workers) >= 2, workers
        os.kill(proc.pid, signal.SIGKILL)  # the command only, as `kill -9 PID` does
        proc.wait(timeout=60)
    finally:
        proc.stdout.close()
        if proc.poll() is None:
            proc.kill()
    left = _wait_all_exit(workers, deadline_s=30)
    for pid in left:  # do not leak them into the rest of the suite
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"worker processes outlived the killed command: {sorted(left)}"
