"""The one summary line saying how many eval tests were skipped for not being live, and how to
make them run."""

from __future__ import annotations

from typing import Any

import pytest

from .._records import EvalRecord, serialized_records

__all__ = ["NotLiveSummary"]


class NotLiveSummary:
    """Counts eval tests skipped for not being live and prints the one line saying how to
    enable them. Registered on the controller only, which sees every report (also xdist's)."""

    def __init__(self) -> None:
        self.count = 0

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and any(
            EvalRecord.from_dict(data).not_live for data in serialized_records(report)
        ):
            self.count += 1

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.count:
            noun = "test" if self.count == 1 else "tests"
            terminalreporter.write_line(
                f"agent-eval: {self.count} eval {noun} skipped because evals are not live; "
                "run with --agent-eval-live or EVAL_LIVE=1 (or live = true in [tool.agent_eval])",
                yellow=True,
            )
