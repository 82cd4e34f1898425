"""``pytest --agent-eval-capacity``: the capacity run over the session's selected transcripts.

The transcripts are those the session selected (paths, ``-k``, ``-m``, ``--agent-eval-tags``),
each once (turn-taking and simulation tests left out, with a line saying so; a far-end
transcript refused as the command refuses it); the plan is ``[tool.agent_eval.capacity]`` of
the session's own pyproject.toml, as the command reads it, and the run is
the command's own (`run_plan`). The selected tests are not run: the capacity run takes their
place, as ``--collect-only`` does. Its table and lines are the terminal section "agent-eval
capacity"; a failed gate (sessions per core below ``min_sessions_per_core``, a worker that took
calls past its ``load_threshold``) fails the session (exit code 1), and bad input is a usage
error naming what to fix. ``--collect-only`` lists the items and runs nothing; collection
errors stop the session as they do without the option; xdist (``-n``) and
``--agent-eval-shard`` are refused (the run is one process's).
"""

from __future__ import annotations

import io
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import pytest

from ..errors import AgentEvalError

if TYPE_CHECKING:
    from ..models import Transcript

__all__ = ["CAPACITY_OPTION", "CapacityRun", "refuse_options", "selected_transcripts"]

CAPACITY_OPTION = "--agent-eval-capacity"


def _played_elsewhere(item: pytest.Item) -> bool:
    """A turn-taking or simulation test: it plays stimuli or a simulated caller, never a
    transcript's turns, so the capacity run leaves it out."""
    return hasattr(item, "simulation") or (hasattr(item, "spec") and hasattr(item, "category"))


def selected_transcripts(items: list[pytest.Item]) -> tuple[list[Transcript], int]:
    """The transcripts of the selected transcript items, each once, in the session's order,
    and how many turn-taking and simulation tests were left out.

    Raises:
        ConfigError: For a transcript the capacity run cannot play (`check_capacity_transcripts`).
    """
    from ._agent import check_capacity_transcripts

    seen: set[tuple[str, str]] = set()
    found: list[Transcript] = []
    left_out = 0
    for item in items:
        transcript = getattr(item, "transcript", None)
        if transcript is None or not hasattr(transcript, "turns"):
            continue
        if _played_elsewhere(item):
            left_out += 1
            continue
        key = (str(transcript.path), transcript.id)
        if key not in seen:
            seen.add(key)
            found.append(transcript)
    if found:
        check_capacity_transcripts(found)
    return found, left_out


def _conftest_modules(config: pytest.Config) -> dict[Path, ModuleType]:
    """The conftest modules pytest imported, by resolved path: the capacity run takes the
    agent fixture from them rather than executing a conftest a second time."""
    found: dict[Path, ModuleType] = {}
    for plugin in config.pluginmanager.get_plugins():
        where = getattr(plugin, "__file__", None)
        if isinstance(plugin, ModuleType) and where and Path(where).name == "conftest.py":
            found[Path(where).resolve()] = plugin
    return found


def refuse_options(config: pytest.Config) -> None:
    """Refuse the options the capacity run cannot honour, before anything is collected.

    Raises:
        pytest.UsageError: For xdist (``-n``) or ``--agent-eval-shard``, naming the option.
    """
    if config.getoption("numprocesses", None) or config.getoption("tx", None):
        raise pytest.UsageError(
            f"{CAPACITY_OPTION} runs in one process, measuring its own sessions; drop -n "
            "(pytest-xdist)"
        )
    if config.getoption("agent_eval_shard", None):
        raise pytest.UsageError(
            f"{CAPACITY_OPTION} measures the selected transcripts together in one process; "
            "drop --agent-eval-shard"
        )


class CapacityRun:
    """The plugin registered for ``--agent-eval-capacity`` (see the module docstring)."""

    def __init__(self, config: pytest.Config, rootdir: Path) -> None:
        refuse_options(config)
        self._config = config
        self._rootdir = rootdir  # the session's: where its pyproject.toml is
        self._lines: list[str] = []
        self._table = ""
        self._code: int | None = None

    def _collection_failed(self, session: pytest.Session) -> None:
        """Stop as pytest's own loop does when collection failed (unless told to go on)."""
        if session.testsfailed and not self._config.option.continue_on_collection_errors:
            count = session.testsfailed
            raise session.Interrupted(f"{count} error{'s' if count != 1 else ''} during collection")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool | None:
        from rich.console import Console

        from . import Output, _parser, build_plan, run_plan

        self._collection_failed(session)
        if self._config.option.collectonly:
            return None  # pytest's own loop: the items listed, nothing run or measured
        try:
            transcripts, left_out = selected_transcripts(session.items)
        except AgentEvalError as exc:
            raise pytest.UsageError(f"{CAPACITY_OPTION}: {exc}") from None
        if left_out:
            self._lines.append(
                f"capacity: left out {left_out} turn-taking or simulation test(s): the capacity "
                "run plays transcripts' turns only"
            )
        if not transcripts:
            if session.testsfailed:  # went on past collection errors: they are the reason
                raise pytest.UsageError(
                    f"{CAPACITY_OPTION}: no transcripts to run: {session.testsfailed} "
                    "collection error(s); fix them (shown above)"
                )
            raise pytest.UsageError(
                f"{CAPACITY_OPTION}: no transcripts were selected; select YAML transcripts "
                "(paths, -k, -m or --agent-eval-tags), or drop the option"
            )
        try:
            plan = build_plan(_parser().parse_args(["--rootdir", str(self._rootdir)]))
        except AgentEvalError as exc:
            raise pytest.UsageError(f"{CAPACITY_OPTION}: {exc}") from None
        buffer = io.StringIO()
        reporter = self._config.pluginmanager.get_plugin("terminalreporter")
        width = getattr(getattr(reporter, "_tw", None), "fullwidth", 100)
        console = Console(file=buffer, width=width, color_system=None, soft_wrap=True)
        output = Output(console, self._lines.append)
        self._code = run_plan(plan, transcripts, output, _conftest_modules(self._config))
        self._table = buffer.getvalue()
        if self._code == 2:
            errors = [
                line.removeprefix("error: ") for line in self._lines if line.startswith("error:")
            ]
            raise pytest.UsageError(f"{CAPACITY_OPTION}: " + "; ".join(errors or self._lines[-1:]))
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
