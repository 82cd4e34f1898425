"""Waiting for the servers `.ci/run` builds while the suite already runs.

`.ci/run` builds livekit-server and LiveKit's SIP service with Go (minutes on a fresh machine)
at low priority while the suite runs, rather than holding the suite back until both are done.
Each build holds an exclusive lock on ``$AGENT_EVAL_CI_BUILDS/<name>.lock`` from before it
starts until it ends; a test that needs the binary takes a shared lock on it, which returns the
moment the build ends. The tests that need a server run last (tests/conftest.py), so by then
the builds have usually long ended. Without the variable (a developer's machine) nothing waits.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

__all__ = ["BUILDS_ENV", "build_log", "builds_started", "failed_build_note", "wait_for_build"]

BUILDS_ENV = "AGENT_EVAL_CI_BUILDS"
"""The folder of `.ci/run`'s build locks and logs (``<name>.lock``, ``.out``, ``.err``)."""


def builds_started() -> bool:
    """Whether `.ci/run` started server builds for this run (their locks are there; whether
    they have ended yet is what `wait_for_build` waits for)."""
    folder = os.environ.get(BUILDS_ENV)
    return bool(folder) and any(Path(folder).glob("*.lock"))


def wait_for_build(name: str) -> None:
    """Return once `.ci/run`'s build of ``name`` (``server``, ``sip``) has ended, or at once
    when there is no such build."""
    folder = os.environ.get(BUILDS_ENV)
    if not folder:
        return
    lock = Path(folder, f"{name}.lock")
    try:
        handle = lock.open("rb")
    except FileNotFoundError:
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_SH)  # released when the handle closes


def build_log(name: str, lines: int = 30) -> str:
    """The end of `.ci/run`'s log of the build of ``name`` ("" when there is none): what a
    test names when the build ended without its binary."""
    folder = os.environ.get(BUILDS_ENV)
    if not folder:
        return ""
    tail: list[str] = []
    for suffix in (".out", ".err"):
        path = Path(folder, name + suffix)
        if path.is_file():
            tail += path.read_text(errors="replace").splitlines()[-lines:]
    return "\n".join(tail)


def failed_build_note(name: str, built: Path) -> str:
    """What to add to a test's "binary missing" advice when `.ci/run`'s build of ``name`` ended
    without ``built``, the binary it installs: its log's end; "" when there was no such build
    or it did install it (the advice is then about another path, given in a variable)."""
    if built.is_file() or not (log := build_log(name)):
        return ""
    return f"; .ci/run's build of it ended without it:\n{log}"
