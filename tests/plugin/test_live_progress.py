"""Live progress inside a long transcript: on a terminal, runs done of N and the current turn
follow the test's place on its line while it runs, and are rubbed out before pytest writes the
outcome there; nothing extra when the output is not a terminal, or under xdist."""

from __future__ import annotations

import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest

from child_pytest import child_pytest_env

from .conftest import Project

SLOW_AGENT = """
async def agent(history):
    import asyncio

    await asyncio.sleep(0.12)  # a turn that takes a while, as a real model's does
    return AgentReply("ok")
"""


def _slow_project(project: Project) -> None:
    project.pyproject("concurrency = 1")
    project.agent(SLOW_AGENT)
    project.transcript("slow", "id: slow\nruns: 4\nturns:\n  - user: a\n  - user: b\n  - user: c\n")


def _run(path: Path, *args: str, terminal: bool) -> str:
    """pytest in a subprocess, its output a pseudo-terminal (``terminal``) or a pipe; the
    output exactly as written, control characters included."""
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agent-eval-live", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EVAL_LIVE"))}
    env = child_pytest_env({**env, "COLUMNS": "80"})
    if not terminal:
        done = subprocess.run(command, cwd=path, env=env, capture_output=True, timeout=300)
        return done.stdout.decode()
    controller, child = pty.openpty()
    process = subprocess.Popen(command, cwd=path, env=env, stdin=child, stdout=child, stderr=child)
    os.close(child)
    out = b""
    try:
        while chunk := _read(controller):
            out += chunk
    finally:
        os.close(controller)
        process.wait(timeout=300)
    return out.decode()


def _read(fd: int) -> bytes:
    try:
        return os.read(fd, 65536)
    except OSError:  # the child closed the terminal
        return b""


def _screen(raw: str) -> list[str]:
    """What a terminal shows after ``raw``: backspaces, carriage returns and colours applied."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    lines: list[list[str]] = [[]]
    column = 0
    for char in text:
        line = lines[-1]
        if char == "\n":
            lines.append([])
            column = 0
        elif char == "\r":
            column = 0
        elif char == "\b":
            column = max(0, column - 1)
        else:
            line.extend(" " * (column - len(line) + 1))
            line[column] = char
            column += 1
    return ["".join(line).rstrip() for line in lines]


def test_on_a_terminal_a_long_transcript_shows_runs_done_and_the_current_turn(
    project: Project,
) -> None:
    _slow_project(project)
    raw = _run(project.path, terminal=True)

    # While it ran: runs done of 4, and which run and turn is under way.
    assert " 0/4 runs · run 1 turn 1/3" in raw
    assert " 2/4 runs · run 3 turn 2/3" in raw
    # Once done, the screen reads as it would have without it: the dot, then [100%].
    screen = _screen(raw)
    (line,) = [s for s in screen if s.startswith("tests/evals/slow.yaml")]
    assert re.fullmatch(r"tests/evals/slow\.yaml \. +\[100%\]", line), line
    assert len(line) == 79
    assert "1 passed" in screen[-2]


@pytest.mark.parametrize(
    ("args", "terminal"), [((), False), (("-n", "2"), True)], ids=["not a terminal", "xdist"]
)
def test_nothing_extra_is_written_off_a_terminal_or_under_xdist(
    project: Project, args: tuple[str, ...], terminal: bool
) -> None:
    _slow_project(project)
    raw = _run(project.path, *args, terminal=terminal)

    assert "1 passed" in raw
    assert " runs · " not in raw and "\b" not in raw
