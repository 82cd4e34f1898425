"""Live progress inside a long transcript, on a terminal: runs done of N and the current turn.

pytest prints one character per test, so a transcript of 20 runs of 5 turns shows nothing for
minutes. On a terminal, while an eval runs, a short status follows the test's place on the line
(`` 3/20 runs · run 4 turn 2/5``) and is rubbed out (backspaces, spaces) before pytest writes
the test's outcome there, so the output once the test is done is what it would have been.
Nothing is written when the output is not a terminal (CI logs, pipes), on an xdist worker, with
``-qq``, or when the status would not fit on the line. Updates are at most every
`MIN_INTERVAL_S`, so fast runs cost nothing noticeable.
"""

from __future__ import annotations

import threading
import time
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import pytest

from ..models import RunResult

__all__ = ["MIN_INTERVAL_S", "LiveProgress", "live_progress"]

MIN_INTERVAL_S = 0.1
"""Least time between two updates of the status."""


class LiveProgress:
    """The status of one eval on the terminal. ``run_done`` and ``turn_start`` are the
    runner's callbacks; `close` rubs the status out."""

    def __init__(self, config: pytest.Config, runs: int, turns: int) -> None:
        self._config = config
        self._writer = config.get_terminal_writer()
        self._runs, self._turns = runs, turns
        self._done = 0
        self._current: tuple[int, int] | None = None
        self._shown = 0
        self._last = 0.0
        self._thread = threading.get_ident()

    def run_done(self, run: RunResult) -> None:
        """A run ended."""
        self._done += 1
        self._show()

    def turn_start(self, run_index: int, turn_index: int) -> None:
        """A turn of a run started."""
        self._current = (run_index, turn_index)
        self._show()

    def text(self) -> str:
        """The status as it reads now: `` 3/20 runs · run 4 turn 2/5``."""
        parts = [f"{self._done}/{self._runs} runs"]
        if self._current is not None and self._done < self._runs:
            run, turn = self._current
            parts.append(f"run {run + 1} turn {turn + 1}/{self._turns}")
        return " " + " · ".join(parts)

    def _show(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if threading.get_ident() != self._thread or (
            not force and now - self._last < MIN_INTERVAL_S
        ):
            return
        self._last = now
        text = self.text()
        room = self._writer.fullwidth - self._writer.width_of_current_line - 1
        if len(text) > room:
            text = ""
        self._write(text)

    def _write(self, text: str) -> None:
        """Replace what is shown with ``text`` (rub it out when empty), outside pytest's output
        capture, without moving pytest's idea of the line's width."""
        if not text and not self._shown:
            return
        erase = "\b" * self._shown
        pad = max(0, self._shown - len(text))
        out = erase + text + " " * pad + "\b" * pad
        capture = self._config.pluginmanager.getplugin("capturemanager")
        disabled: AbstractContextManager[Any] = (
            capture.global_and_fixture_disabled() if capture is not None else nullcontext()
        )
        with disabled:
            write_raw = getattr(self._writer, "write_raw", None)
            if write_raw is not None:
                write_raw(out, flush=True)
            else:  # pytest 8.0: the writer's file, so the line's width is left alone
                stream = self._writer._file
                stream.write(out)
                stream.flush()
        self._shown = len(text)

    def close(self) -> None:
        """Rub the status out (the test's outcome is written where it was)."""
        if threading.get_ident() == self._thread:
            self._write("")


def live_progress(config: pytest.Config, runs: int, turns: int) -> LiveProgress | None:
    """A `LiveProgress` for an eval of ``runs`` runs of ``turns`` turns, or None where nothing
    extra must be written: output that is not a terminal, an xdist worker, ``-qq``."""
    if hasattr(config, "workerinput"):
        return None
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is None or not _is_a_terminal(reporter) or config.get_verbosity() < -1:
        return None
    return LiveProgress(config, runs, turns)


def _is_a_terminal(reporter: Any) -> bool:
    """Whether the terminal reporter writes to a terminal. pytest before 8.1 stores
    ``isatty`` as a plain bool; later releases make it a method (callable bool in between)."""
    isatty = reporter.isatty
    return bool(isatty() if callable(isatty) else isatty)
