"""The one summary line saying how many eval tests were skipped for not being live, and how to
make them run."""

from __future__ import annotations

from typing import Any

import pytest

from .._records import EvalRecord, serialized_records

__all__ = ["NotLiveSummary", "not_live_line"]


def not_live_line(count: int) -> str:
    """The line, in the earlier package's words (CI logs are searched for them), then ours."""
    return (
        f"{count} eval test(s) skipped — live mode is off. Pass --agent-eval-live or set "
        "EVAL_LIVE=1. To run them every time, set live = true in [tool.agent_eval]."
    )


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
            terminalreporter.write_line(not_live_line(self.count), yellow=True)
