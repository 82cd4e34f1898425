"""The reporter plugin: collects eval records, applies the gates, writes and prints the reports.

Registered by the plugin in ``pytest_configure`` only on the process that sees every report
(a single process, or the xdist controller; never on a worker), the way pytest's junitxml is.
Its hooks are thin: data comes from `records`, verdicts from `gates`, text from the renderers.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ..config import Settings
from ..gates import decide_exit, evaluate_gates
from .files import append_step_summary, resolve_report_path, write_atomic
from .html import render_html
from .markdown import render_markdown, render_summary_markdown
from .records import RecordCollector, ReportData
from .terminal import group_summary_lines, summary_lines

__all__ = ["AgentEvalReporter", "WrittenReports", "reporter_key"]

reporter_key = pytest.StashKey["AgentEvalReporter"]()
"""Where the reporter lives on ``config.stash`` (absent on xdist workers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WrittenReports:
    """Where the reports of a session went."""

    markdown: Path | None = None
    html: Path | None = None
    step_summary: Path | None = None


class AgentEvalReporter:
    """Collects eval results and turns them into reports, gate verdicts and an exit status.

    Args:
        config: The pytest config.
        settings: The resolved settings (report paths, groups).
    """

    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.collector = RecordCollector()
        self.data: ReportData | None = None
        self.written = WrittenReports()
        self.write_error: str | None = None
        self.planned_evals: list[str] = []
        """Node ids of every eval collected (to name those an interrupt cut off)."""
        self.ctrl_c = False
        """A KeyboardInterrupt stopped the session (not a collection error, also exit 2)."""
        self._started = time.monotonic()
        config.stash[reporter_key] = self

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collector.add_test_report(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collector.add_collect_failure(report.nodeid)

    def plan(self, nodeids: list[str]) -> None:
        """Note the evals about to run (collection order)."""
        self.planned_evals.extend(n for n in nodeids if n not in self.planned_evals)

    def pytest_keyboard_interrupt(self) -> None:
        self.ctrl_c = True

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.data = self.build(int(session.exitstatus), stopped_early=bool(session.shouldfail))
        if self.ctrl_c:
            # An eval cut off mid-run has a setup record and no verdict: it is listed as never
            # finished, not counted as skipped.
            never = tuple(n for n in self.planned_evals if n not in self.collector.finished)
            kept = tuple(r for r in self.data.session.records if r.nodeid not in never)
            self.data = replace(
                self.data,
                session=replace(self.data.session, records=kept),
                interrupted=True,
                not_run=never,
            )
        if self.data.decision is not None:
            session.exitstatus = self.data.decision.exitstatus
        try:
            self.written = self.write(self.data)
        except OSError as exc:
            # A report that cannot be written must not hide the test outcome behind a
            # traceback; it is named in the summary, in red, with what to fix.
            self.write_error = (
                f"agent-eval: could not write a report: {exc}; check the path given to "
                "--agent-eval-report / --agent-eval-html (or report_path / html_report_path)"
            )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        del config.stash[reporter_key]
        config.pluginmanager.unregister(self)

    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.data is None:
            return
        for title, lines in (
            ("agent eval summary", summary_lines(self.data)),
            ("group summary", group_summary_lines(self.data)),
        ):
            if lines:
                terminalreporter.write_sep("=", title)
                for line in lines:
                    terminalreporter.write_line(line.text, **line.markup())
        for label, path in (("markdown", self.written.markdown), ("html", self.written.html)):
            if path is not None:
                note = " (no eval test ran)" if self.data.nothing_ran else ""
                terminalreporter.write_sep("-", f"agent eval {label} report: {path}{note}")
        if self.write_error:
            terminalreporter.write_line(self.write_error, red=True, bold=True)

    def build(self, exitstatus: int, *, stopped_early: bool = False) -> ReportData:
        """Gather the records, judge the groups and decide the exit status."""
        session = self.collector.build()
        gates = evaluate_gates(self.settings.groups, session)
        decision = None
        if self.settings.groups:
            decision = decide_exit(exitstatus, session, gates, stopped_early=stopped_early)
        return ReportData(
            session=session,
            gates=gates,
            decision=decision,
            generated_at=datetime.now(UTC),
            duration_s=time.monotonic() - self._started,
            rootdir=self.settings.rootdir,
        )

    def report_path(self, option: str, configured: str | None) -> Path | None:
        """Where a report goes: a relative path on the command line is taken from the folder
        pytest was started in (as ``--junitxml`` does), one in pyproject.toml from its folder."""
        given = self.config.getoption(option, None)
        if given:
            return resolve_report_path(given, self.config.invocation_params.dir)
        if configured:
            return resolve_report_path(configured, self.settings.rootdir)
        return None

    def write(self, data: ReportData) -> WrittenReports:
        """Write the markdown and HTML reports and the CI step summary that are asked for."""
        rootdir = self.settings.rootdir
        full: str | None = None
        markdown_path = self.report_path("agent_eval_report", self.settings.report_path)
        if markdown_path is not None:
            full = render_markdown(data)
            write_atomic(markdown_path, full)
        html_path = self.report_path("agent_eval_html", self.settings.html_report_path)
        if html_path is not None:
            write_atomic(html_path, render_html(data, rootdir=rootdir, report_dir=html_path.parent))
        step = None
        if data.records or data.interrupted:
            # Only sessions that had eval tests write to the job summary, so a plain unit-test
            # step in the same job does not add an empty report.
            step = append_step_summary(
                full if full is not None else render_markdown(data),
                render_summary_markdown(data),
            )
        return WrittenReports(markdown=markdown_path, html=html_path, step_summary=step)
