"""The reporter plugin: collects eval records, applies the gates, writes and prints the reports.

Registered by the plugin in ``pytest_configure`` only on the process that sees every report
(a single process, or the xdist controller; never on a worker), the way pytest's junitxml is.
Its hooks are thin: data comes from `records`, verdicts from `gates`, text from the renderers.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from .._config import Settings, parse_shard
from .._gates import decide_exit, evaluate_gates
from .._records import RecordCollector
from ._baseline import BaselineError, compare_with_baseline
from ._files import append_step_summary, resolve_report_path, write_atomic
from ._format import COLLECTION_STOPPED
from ._frameworks import framework_versions
from ._html import render_html
from ._markdown import render_markdown, render_summary_markdown
from ._records import ReportData
from ._results_file import load_baseline, results_document
from ._shards import replayed_key, shard_deselected, shard_document
from ._terminal import baseline_lines, group_summary_lines, summary_lines, turn_taking_lines

__all__ = [
    "AgentEvalReporter",
    "WrittenReports",
    "package_version",
    "reporter_key",
]


def package_version() -> str:
    """The installed pytest-agent-eval's version, as every report and results file states it."""
    try:
        return metadata.version("pytest-agent-eval")
    except metadata.PackageNotFoundError:  # a source tree that was never installed
        return "unknown"


def _seeds(settings: Settings) -> tuple[tuple[str, int], ...]:
    seed = settings.voice.seed
    return () if seed is None else (("voice synthesis", seed),)


def _gates_note(mode: str, configured: bool, shard: str | None = None) -> str:
    if not configured or mode == "strict":
        return ""
    if mode == "skip":
        return "gates skipped: this is a subset run (subset_gates = 'skip')"
    if shard:
        return (
            f"gates are report-only in a shard ({shard}): they judge this shard's evals "
            "only; agent-eval merge decides them over every shard"
        )
    return (
        "gates are report-only in this subset run (subset_gates = 'report-only'): "
        "they did not change the exit status"
    )


reporter_key = pytest.StashKey["AgentEvalReporter"]()
"""Where the reporter lives on ``config.stash`` (absent on xdist workers)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WrittenReports:
    """Where the reports of a session went."""

    markdown: Path | None = None
    html: Path | None = None
    results: Path | None = None
    step_summary: Path | None = None
    kept: tuple[tuple[str, Path], ...] = ()
    """Reports from pyproject.toml left as they were, by kind (``markdown``, ``html``,
    ``results``): this session ran no eval, so it must not replace what an eval step wrote."""


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
        self.stop_kind: str | None = None
        """How the session was cut short, in words, or None."""
        self.load_errors: list[tuple[str, str]] = []
        """Files that failed to collect: (node id, the error as pytest shows it)."""
        self.deselected = 0
        """Eval tests deselected (``-k``, ``-m``, ``--agent-eval-tags``)."""
        self._started = time.monotonic()
        config.stash[reporter_key] = self

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.collector.add_test_report(report)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.collector.add_collect_failure(report.nodeid)
            self.load_errors.append((report.nodeid, self._load_error(report)))

    def _load_error(self, report: pytest.CollectReport) -> str:
        """The error of a file that failed to collect, in one piece: a transcript's whole
        message (with its file, line and fix), or the last line of a traceback."""
        text = report.longreprtext.strip()
        lines = [line for line in text.splitlines() if line.strip()]
        raised = [line[1:].strip() for line in lines if line.startswith("E ")]
        error = raised[-1] if raised else (text if len(lines) == 1 else lines[0] if lines else "")
        root = f"{self.settings.rootdir}{os.sep}" if self.settings.rootdir else ""
        return error.replace(root, "") if root else error

    def plan(self, nodeids: list[str]) -> None:
        """Note the evals about to run (collection order)."""
        self.planned_evals.extend(n for n in nodeids if n not in self.planned_evals)

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        self.ctrl_c = True
        # pytest-xdist stops a ``-x`` / ``--maxfail`` session by raising its own
        # KeyboardInterrupt subclass: that is not the user pressing Ctrl-C.
        kind = type(excinfo.value)
        if kind.__module__.startswith("xdist") and kind.__name__ == "Interrupted":
            self.stop_kind = f"early: {excinfo.value} (-x / --maxfail)"
        elif (
            isinstance(excinfo.value, pytest.Session.Interrupted)
            and str(excinfo.value).endswith("during collection")
            and self.load_errors
        ):
            # pytest's own stop ("1 error during collection"), not the user pressing Ctrl-C.
            self.stop_kind = COLLECTION_STOPPED.format(count=len(self.load_errors))
        else:
            self.stop_kind = "by Ctrl-C"

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected += len(items)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        self.data = self.build(int(session.exitstatus), stopped_early=bool(session.shouldfail))
        stopped = self.stop_kind
        if stopped is None and (session.shouldfail or session.shouldstop):
            stopped = f"early: {session.shouldfail or session.shouldstop}"
        self.data = replace(self.data, stopped=stopped, load_errors=tuple(self.load_errors))
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
        self.data = replace(
            self.data,
            exit_status=int(session.exitstatus),
            shard=self.shard_document(),
        )
        self.data = self.with_baseline(self.data)
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
        width = terminalreporter.config.get_terminal_writer().fullwidth
        for title, lines in (
            ("agent eval summary", summary_lines(self.data, width=width)),
            ("group summary", group_summary_lines(self.data)),
            ("turn-taking conformance", turn_taking_lines(self.data)),
        ):
            if lines:
                terminalreporter.write_sep("=", title)
                for line in lines:
                    terminalreporter.write_line(line.text, **line.markup())
        if self.data.baseline is not None or self.data.baseline_error:
            terminalreporter.write_sep("=", "agent eval baseline")
            for line in baseline_lines(self.data):
                terminalreporter.write_line(line.text, **line.markup())
        written = (
            ("markdown", self.written.markdown),
            ("html", self.written.html),
            ("results", self.written.results),
        )
        for label, path in written:
            if path is not None:
                note = " (no eval test ran)" if self.data.nothing_ran else ""
                terminalreporter.write_sep("-", f"agent eval {label} report: {path}{note}")
        for label, path in self.written.kept:
            terminalreporter.write_sep(
                "-", f"agent eval {label} report: {path} kept (no eval test ran in this session)"
            )
        if self.write_error:
            terminalreporter.write_line(self.write_error, red=True, bold=True)

    def selection(self, *, shard: bool = True) -> tuple[str, ...]:
        """How this session chose a subset of the evals, as its options read; empty when it
        ran every eval it collected. ``shard=False`` leaves out ``--agent-eval-shard`` (what
        every shard of one merge must share). A replayed session (``agent-eval merge``) has
        the selection its sources had."""
        replayed = self.config.stash.get(replayed_key, None)
        if replayed is not None:
            return replayed.selection
        option = self.config.option
        chosen: list[str] = []
        if getattr(option, "keyword", ""):
            chosen.append(f"-k {option.keyword}")
        if getattr(option, "markexpr", ""):
            chosen.append(f"-m {option.markexpr}")
        tags = self.config.getoption("agent_eval_tags", None) or []
        if tags:
            chosen.append("--agent-eval-tags " + ",".join(tags))
        deselected = self.deselected - shard_deselected(self.config)
        if deselected > 0 and not chosen:
            chosen.append(f"{deselected} deselected")
        named = self._named_tests()
        if named and not chosen:
            shown = " ".join(named[:3]) + (f" (+{len(named) - 3})" if len(named) > 3 else "")
            chosen.append(f"paths {shown}")
        words = self.shard_words()
        if shard and words:
            chosen.append(words)
        return tuple(chosen)

    def _named_tests(self) -> list[str]:
        """The files and node ids named on the command line (``pytest a.yaml``,
        ``tests/x.py::test_y``): a selection, as ``-k`` is. Directories are not: ``pytest
        tests`` runs the suite, and a must_pass entry missing from it must still fail."""
        if self.config.args_source != pytest.Config.ArgsSource.ARGS:
            return []
        here = self.config.invocation_params.dir
        return [arg for arg in self.config.args if "::" in arg or (here / arg).is_file()]

    def shard_words(self) -> str | None:
        """``--agent-eval-shard 2/4`` in a shard session, else None."""
        shard = parse_shard(self.config.getoption("agent_eval_shard", None))
        return None if shard is None else f"--agent-eval-shard {shard[0]}/{shard[1]}"

    def shard_document(self) -> dict[str, Any] | None:
        """What this session's results file carries for ``agent-eval merge`` (a shard
        session), or None."""
        shard = parse_shard(self.config.getoption("agent_eval_shard", None))
        if shard is None:
            return None
        return shard_document(
            self.config,
            index=shard[0],
            count=shard[1],
            selection=self.selection(shard=False),
            groups=self.settings.groups,
        )

    def build(self, exitstatus: int, *, stopped_early: bool = False) -> ReportData:
        """Gather the records, judge the groups and decide the exit status."""
        session = self.collector.build()
        selection = self.selection()
        gates_mode = self.settings.subset_gates if selection else "strict"
        shard = self.shard_words()
        if shard and gates_mode == "strict":
            gates_mode = "report-only"  # a shard's groups hold a share of their members
        groups = () if gates_mode == "skip" else self.settings.groups
        gates = evaluate_gates(groups, session, partial=bool(selection))
        decision = None
        if groups and gates_mode == "strict":
            decision = decide_exit(exitstatus, session, gates, stopped_early=stopped_early)
        replayed = self.config.stash.get(replayed_key, None)
        return ReportData(
            package_version=package_version(),
            frameworks=framework_versions(),
            seeds=_seeds(self.settings),
            selection=selection,
            gates_note=_gates_note(gates_mode, bool(self.settings.groups), shard),
            prices=self.settings.prices,
            currency=self.settings.currency,
            exit_status=exitstatus,
            session=session,
            gates=gates,
            decision=decision,
            generated_at=datetime.now(UTC),
            duration_s=(
                replayed.duration_s if replayed is not None else time.monotonic() - self._started
            ),
            rootdir=self.settings.rootdir,
            merged_from=replayed.merged_from if replayed is not None else (),
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

    def keeps(self, option: str, path: Path | None, data: ReportData) -> bool:
        """True when the report at ``path`` is left alone: it came from pyproject.toml (not
        the command line), it exists, and this session ran no eval (a unit-test step of the
        same CI job, ``--co``): replacing it would lose what the eval step wrote."""
        if path is None or self.config.getoption(option, None):
            return False
        return data.nothing_ran and not data.interrupted and path.exists()

    def with_baseline(self, data: ReportData) -> ReportData:
        """``data`` compared with ``--agent-eval-baseline``, when one was given."""
        given = self.config.getoption("agent_eval_baseline", None)
        if not given or data.nothing_ran:
            return data
        path = resolve_report_path(given, self.config.invocation_params.dir)
        try:
            baseline = load_baseline(path)
        except BaselineError as exc:
            return replace(data, baseline_error=str(exc))
        return replace(data, baseline=compare_with_baseline(data.ran, baseline, given))

    def write(self, data: ReportData) -> WrittenReports:
        """Write the markdown and HTML reports and the CI step summary that are asked for."""
        rootdir = self.settings.rootdir
        full: str | None = None
        kept: list[tuple[str, Path]] = []
        markdown_path = self.report_path("agent_eval_report", self.settings.report_path)
        if self.keeps("agent_eval_report", markdown_path, data):
            kept.append(("markdown", markdown_path))  # type: ignore[arg-type]
            markdown_path = None
        if markdown_path is not None:
            full = render_markdown(data)
            write_atomic(markdown_path, full)
        html_path = self.report_path("agent_eval_html", self.settings.html_report_path)
        if self.keeps("agent_eval_html", html_path, data):
            kept.append(("html", html_path))  # type: ignore[arg-type]
            html_path = None
        if html_path is not None:
            write_atomic(html_path, render_html(data, rootdir=rootdir, report_dir=html_path.parent))
        step = None
        if data.records or data.interrupted:
            # Only sessions that had eval tests write to the job summary, so a plain unit-test
            # step in the same job does not add an empty report.
            step = append_step_summary(
                full if full is not None else lambda: render_markdown(data),
                lambda: render_summary_markdown(data),  # rendered only when needed
                reports=[p for p in (markdown_path, html_path) if p is not None],
            )
        results_path = self.report_path("agent_eval_results", self.settings.results_path)
        if self.keeps("agent_eval_results", results_path, data):
            kept.append(("results", results_path))  # type: ignore[arg-type]
            results_path = None
        if results_path is not None:
            document = json.dumps(results_document(data), indent=1, ensure_ascii=False)
            write_atomic(results_path, document + "\n")
        return WrittenReports(
            markdown=markdown_path,
            html=html_path,
            results=results_path,
            step_summary=step,
            kept=tuple(kept),
        )
