"""``pytest --agent-eval-capacity``: the capacity run over the session's selected transcripts.

The transcripts are those the session selected (paths, ``-k``, ``-m``, ``--agent-eval-tags``),
each once; the plan is ``[tool.agent_eval.capacity]`` as the command reads it, and the run is
the command's own (`run_plan`). The selected tests are not run: the capacity run takes their
place, as ``--collect-only`` does. Its table and lines are the terminal section "agent-eval
capacity"; a failed gate (sessions per core below ``min_sessions_per_core``, a worker that took
calls past its ``load_threshold``) fails the session (exit code 1), and bad input is a usage
error naming what to fix.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING

import pytest

from ..errors import AgentEvalError

if TYPE_CHECKING:
    from ..models import Transcript

__all__ = ["CAPACITY_OPTION", "CapacityRun"]

CAPACITY_OPTION = "--agent-eval-capacity"


def selected_transcripts(items: list[pytest.Item]) -> list[Transcript]:
    """The transcripts of the selected transcript items, each once, in the session's order."""
    seen: set[tuple[str, str]] = set()
    found: list[Transcript] = []
    for item in items:
        transcript = getattr(item, "transcript", None)
        if transcript is None or not hasattr(transcript, "turns"):
            continue
        key = (str(transcript.path), transcript.id)
        if key not in seen:
            seen.add(key)
            found.append(transcript)
    return found


class CapacityRun:
    """The plugin registered for ``--agent-eval-capacity`` (see the module docstring)."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._lines: list[str] = []
        self._table = ""
        self._code: int | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        from rich.console import Console

        from . import Output, _parser, build_plan, run_plan

        transcripts = selected_transcripts(session.items)
        if not transcripts:
            raise pytest.UsageError(
                f"{CAPACITY_OPTION}: no transcripts were selected; select YAML transcripts "
                "(paths, -k, -m or --agent-eval-tags), or drop the option"
            )
        rootdir = self._config.rootpath
        try:
            plan = build_plan(_parser().parse_args(["--rootdir", str(rootdir)]))
        except AgentEvalError as exc:
            raise pytest.UsageError(f"{CAPACITY_OPTION}: {exc}") from None
        buffer = io.StringIO()
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        width = getattr(getattr(reporter, "_tw", None), "fullwidth", 100)
        console = Console(file=buffer, width=width, color_system=None, soft_wrap=True)
        output = Output(console, self._lines.append)
        self._code = run_plan(plan, transcripts, output)
        self._table = buffer.getvalue()
        if self._code == 2:
            raise pytest.UsageError(
                f"{CAPACITY_OPTION}: " + "; ".join(line for line in self._lines if line)
            )
        if self._code == 130:
            raise KeyboardInterrupt
        if self._code != 0:
            session.testsfailed += 1
        return True

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self._code is None:
            return
        terminalreporter.section("agent-eval capacity")
        terminalreporter.write(self._table)
        for line in self._lines:
            if not line.startswith("capacity: K="):  # progress: the table has the figures
                terminalreporter.write_line(line)
