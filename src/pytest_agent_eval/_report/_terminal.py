"""The end-of-session summary table and the group summary, as plain lines for the terminal
reporter.

The group summary keeps the line format of the earlier package, which CI scripts grep:
``NAME: P/N passed (R%) >= T% required -- PASSED|FAILED``, then indented ``failures:`` and
``must_pass:`` lines, and ``exit code overridden to 0: ...`` when failures were absorbed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._gates import GateResult
from .._records import EvalRecord
from .._sanitize import strip_controls
from ._baseline import BaselineComparison
from ._causes import cause_line
from ._format import (
    BASELINE_HEADER,
    baseline_rows,
    cost_lines,
    crash_lines,
    fmt_interval,
    fmt_latency,
    fmt_planned_runs,
    fmt_record_score,
    fmt_runs,
    fmt_score,
    fmt_threshold,
    fmt_usage,
    fmt_usage_per_run,
    interrupted_lines,
    replay_fact,
    replayed_runs,
    shorten,
    verdict_label,
)
from ._records import ReportData
from ._turn_taking import CONFORMANCE_HEADER, conformance_rows

__all__ = [
    "TerminalLine",
    "baseline_lines",
    "comparison_lines",
    "format_table",
    "gate_lines",
    "group_summary_lines",
    "summary_lines",
    "turn_taking_lines",
]

_VERDICT_COLOR = {
    "PASS": "green",
    "FAIL": "red",
    "CRASHED": "red",
    "ERROR": "red",
    "SKIP": "yellow",
}


@dataclass(frozen=True, slots=True)
class TerminalLine:
    """One line of the summary, with the markup the terminal reporter should apply."""

    text: str
    color: str | None = None
    bold: bool = False

    def markup(self) -> dict[str, bool]:
        """Keyword arguments for ``TerminalWriter.line``."""
        out: dict[str, bool] = {}
        if self.color:
            out[self.color] = True
        if self.bold:
            out["bold"] = True
        return out


def format_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Left-aligned columns separated by two spaces, with a rule under the header."""
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()

    return [line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)]


_LEVELS = 8
"""How far a summary table may be narrowed (see `_table`); the widest is level 0."""
_MIN_NAME = 12
"""A transcript name is never cut shorter than this, to fit a narrow terminal."""


def _cells(record: EvalRecord, level: int) -> dict[str, str]:
    """One eval's cells by column, as narrow as ``level`` asks."""
    result = record.result
    if result is None:
        runs, passed, score = fmt_planned_runs(record), "–", "–"
    else:
        runs, passed = fmt_runs(result), str(result.passed_run_count)
        score = fmt_record_score(result)
        if level < 2 and result.evaluated_run_count:
            score += f" {fmt_interval(result.interval)}"
    cells = {
        "transcript": strip_controls(record.label),
        "runs": runs,
        "passed": passed,
        "threshold": fmt_threshold(record) if result is None else fmt_score(result.threshold),
        "verdict": verdict_label(record),
        "latency": fmt_latency(result),
    }
    if level >= 6:  # runs and passed in one column: 2/3
        cells["passed"] = "–" if result is None else f"{passed}/{runs}"
    cells["score"] = score
    count = len(result.runs) if result else 0
    for column, usage in (
        ("agent tokens", result.agent_usage if result else None),
        ("judge tokens", result.judge_usage if result else None),
    ):
        per_run = fmt_usage_per_run(usage, count)
        cells[column] = per_run.split(" (", 1)[0] if level >= 1 else per_run
    return cells


def _table(
    records: Sequence[EvalRecord], level: int, *, latency: bool, tokens: bool, judge: bool
) -> tuple[list[str], list[list[str]]]:
    """The summary table at one of `_LEVELS` widths, each narrower than the one before:
    1 token totals without the per-run mean, 2 the score without its interval, 3 no judge
    tokens, 4 no agent tokens (both stay in the totals below the table), 5 a shorter latency
    heading, 6 runs and passes in one column, 7 no latency column. What is left out stays in
    the account of each failure and in the reports."""
    columns = ["transcript"]
    columns += ["passed"] if level >= 6 else ["runs", "passed"]
    columns += ["score [95% CI]" if level < 2 else "score", "threshold", "verdict"]
    if latency and level < 7:
        columns.append("p50/p95 latency" if level < 5 else "p50/p95")
    if tokens and level < 4:
        columns.append("agent tokens")
        if judge and level < 3:
            columns.append("judge tokens")
    key = {"score [95% CI]": "score", "p50/p95 latency": "latency", "p50/p95": "latency"}
    rows = []
    for record in records:
        cells = _cells(record, level)
        rows.append([cells[key.get(c, c)] for c in columns])
    return columns, rows


def _table_width(header: Sequence[str], rows: Sequence[Sequence[str]]) -> int:
    widths = [len(h) for h in header]
    for row in rows:
        widths = [max(w, len(c)) for w, c in zip(widths, row, strict=True)]
    return sum(widths) + 2 * (len(widths) - 1)


def _fit(
    records: Sequence[EvalRecord], width: int | None, **shown: bool
) -> tuple[list[str], list[list[str]]]:
    """The widest table that fits in ``width`` columns (None: the widest), transcript names
    cut with ``…`` as a last resort; a table that still does not fit wraps."""
    header, rows = _table(records, 0, **shown)
    if width is None:
        return header, rows
    for level in range(1, _LEVELS):
        if _table_width(header, rows) <= width:
            return header, rows
        header, rows = _table(records, level, **shown)
    over = _table_width(header, rows) - width
    if over > 0:
        longest = max(len(r[0]) for r in rows) if rows else 0
        keep = max(_MIN_NAME, len(header[0]), longest - over)
        rows = [[shorten(r[0], keep), *r[1:]] for r in rows]
    return header, rows


_GATE_COLOURS = {"ok": None, "warning": "yellow", "failure": "red"}


def gate_lines(gate: GateResult) -> list[TerminalLine]:
    """One group, in the words of `GateResult.lines`: a failure is red when the group is
    enforced (it fails the run) and yellow when it only reports; a passing headline green."""
    out = []
    for index, line in enumerate(gate.lines()):
        color = _GATE_COLOURS[line.level]
        if index == 0 and line.level == "ok":
            color = "green"
        elif index == 0 and line.level == "failure" and not gate.config.enforce:
            color = "yellow"
        out.append(TerminalLine(line.text, color))
    return out


def group_summary_lines(data: ReportData) -> list[TerminalLine]:
    """The ``group summary`` section; empty when no group is configured or no eval was
    collected."""
    decision = data.decision
    if not data.records:
        return []
    if decision is None:
        if not data.gates_note:
            return []
        gates = [line for gate in data.gates for line in gate_lines(gate)]
        return [*gates, TerminalLine(data.gates_note, "yellow", bold=True)]
    lines = [line for gate in data.gates for line in gate_lines(gate)]
    color = "red" if decision.enforced_failures else ("green" if decision.forgiven else None)
    lines.append(TerminalLine(decision.summary(), color, bold=decision.changed))
    return lines


def summary_lines(data: ReportData, *, width: int | None = None) -> list[TerminalLine]:
    """The lines to print after the session; empty when no eval ran and none was cut off.
    With ``width`` (the terminal's), the table is narrowed to fit it (see `_table`)."""
    notice = [
        TerminalLine(strip_controls(t), "red", bold=i == 0)
        for i, t in enumerate(interrupted_lines(data))
    ]
    ran = data.ran
    if not ran:
        return notice
    latency, tokens = data.has_latency, data.has_tokens

    judge_tokens = data.judge_usage is not None
    header, rows = _fit(ran, width, latency=latency, tokens=tokens, judge=judge_tokens)
    table = format_table(header, rows)

    lines = [*notice, TerminalLine(table[0], bold=True), TerminalLine(table[1])]
    for record, text in zip(ran, table[2:], strict=True):
        lines.append(TerminalLine(text, _VERDICT_COLOR[verdict_label(record)]))

    skipped = data.skipped_count
    tail = f", {skipped} skipped" if skipped else ""
    lines.append(TerminalLine(f"{data.passed_count}/{len(ran)} evals passed{tail}", bold=True))
    lines += [
        TerminalLine(strip_controls(f"crashed: {line}"), "red", bold=True)
        for line in crash_lines(ran)
    ]
    if (causes := cause_line(ran)) is not None:  # attribution ran (docs/attribution.md)
        lines.append(TerminalLine(causes, "yellow"))
    lines += [
        TerminalLine(strip_controls(f"note: {record.label}: {note}"), "yellow")
        for record in ran
        for note in record.notes
    ]
    replayed, _, _ = replayed_runs(data)
    if replayed and (fact := replay_fact(data)) is not None:
        lines.append(
            TerminalLine(f"{fact}; --agent-eval-refresh-caller-cache asks again", "yellow")
        )
    if tokens:
        # No judge ran: no "judges –" (as the table has no judge column then); likewise callers,
        # which only simulations have.
        judges = f"; judges {fmt_usage(data.judge_usage)}" if judge_tokens else ""
        caller = data.caller_usage
        callers = f"; callers {fmt_usage(caller)}" if caller is not None else ""
        lines.append(TerminalLine(f"tokens: agent {fmt_usage(data.agent_usage)}{judges}{callers}"))
    lines += [TerminalLine(line) for line in cost_lines(data)]
    return lines


_CHANGE_COLOR = {"regressed": "red", "improved": "green", "not comparable": "yellow"}


def baseline_lines(data: ReportData) -> list[TerminalLine]:
    """The ``agent eval baseline`` section: the headline, a row per eval, new and removed."""
    if data.baseline_error:
        return [TerminalLine(f"baseline not compared: {data.baseline_error}", "red", bold=True)]
    comparison = data.baseline
    if comparison is None:
        return []
    return comparison_lines(comparison)


def comparison_lines(comparison: BaselineComparison) -> list[TerminalLine]:
    """A comparison in the terminal: what it is against, the headline, a row per eval (each
    coloured by its change), new and removed; for the session's baseline section and for
    ``agent-eval compare``."""
    when = f" ({comparison.generated_at})" if comparison.generated_at else ""
    lines = [
        TerminalLine(f"against {strip_controls(comparison.path)}{when}"),
        TerminalLine(comparison.headline, bold=True),
    ]
    rows = [[strip_controls(c) for c in row] for row in baseline_rows(comparison)]
    if rows:
        table = format_table(BASELINE_HEADER, rows)
        lines += [TerminalLine(table[0], bold=True), TerminalLine(table[1])]
        lines += [
            TerminalLine(t, _CHANGE_COLOR.get(r[3])) for t, r in zip(table[2:], rows, strict=True)
        ]
    if comparison.new:
        lines.append(TerminalLine("new: " + ", ".join(strip_controls(n) for n in comparison.new)))
    if comparison.removed:
        lines.append(
            TerminalLine("removed: " + ", ".join(strip_controls(n) for n in comparison.removed))
        )
    return lines


def turn_taking_lines(data: ReportData) -> list[TerminalLine]:
    """The turn-taking conformance table (docs/turn-taking.md); empty when no turn-taking item
    ran. A row is coloured by its budget's verdict."""
    rows = [[strip_controls(c) for c in row] for row in conformance_rows(data.ran)]
    if not rows:
        return []
    table = format_table(CONFORMANCE_HEADER, rows)
    colors = {"PASS": "green", "FAIL": "red", "ERROR": "red"}
    return [
        TerminalLine(table[0], bold=True),
        TerminalLine(table[1]),
        *(
            TerminalLine(text, colors.get(row[-1].split(",")[0]))
            for text, row in zip(table[2:], rows, strict=True)
        ),
    ]
