"""The end-of-session summary table and the group summary, as plain lines for the terminal
reporter.

The group summary keeps the line format of the earlier package, which CI scripts grep:
``NAME: P/N passed (R%) >= T% required -- PASSED|FAILED``, then indented ``failures:`` and
``must_pass:`` lines, and ``exit code overridden to 0: ...`` when failures were absorbed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._sanitize import strip_controls
from ..gates import GateResult
from ._format import (
    cost_lines,
    fmt_interval,
    fmt_latency,
    fmt_planned_runs,
    fmt_record_score,
    fmt_runs,
    fmt_score,
    fmt_threshold,
    fmt_usage,
    fmt_usage_per_run,
    verdict_label,
)
from .markdown import interrupted_lines
from .records import EvalRecord, ReportData
from .results_file import BASELINE_HEADER, baseline_rows

__all__ = [
    "TerminalLine",
    "baseline_lines",
    "format_table",
    "gate_lines",
    "group_summary_lines",
    "summary_lines",
]

_VERDICT_COLOR = {"PASS": "green", "FAIL": "red", "ERROR": "red", "SKIP": "yellow"}


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


def _row(record: EvalRecord, *, latency: bool, tokens: bool, judge_tokens: bool) -> list[str]:
    result = record.result
    name = strip_controls(record.label)
    if result is None:
        cells = [
            name,
            fmt_planned_runs(record),
            "–",
            "–",
            fmt_threshold(record),
            verdict_label(record),
        ]
    else:
        cells = [
            name,
            fmt_runs(result),
            str(result.passed_run_count),
            f"{fmt_record_score(result)} {fmt_interval(result.interval)}",
            fmt_score(result.threshold),
            verdict_label(record),
        ]
    if latency:
        cells.append(fmt_latency(result))
    if tokens:
        runs = len(result.runs) if result else 0
        cells.append(fmt_usage_per_run(result.agent_usage if result else None, runs))
        if judge_tokens:
            cells.append(fmt_usage_per_run(result.judge_usage if result else None, runs))
    return cells


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


def summary_lines(data: ReportData) -> list[TerminalLine]:
    """The lines to print after the session; empty when no eval ran and none was cut off."""
    notice = [
        TerminalLine(strip_controls(t), "red", bold=i == 0)
        for i, t in enumerate(interrupted_lines(data))
    ]
    ran = data.ran
    if not ran:
        return notice
    latency, tokens = data.has_latency, data.has_tokens

    header = ["transcript", "runs", "passed", "score [95% CI]", "threshold", "verdict"]
    if latency:
        header.append("p50/p95 latency")
    judge_tokens = data.judge_usage is not None
    if tokens:
        header += ["agent tokens", "judge tokens"] if judge_tokens else ["agent tokens"]
    rows = [_row(r, latency=latency, tokens=tokens, judge_tokens=judge_tokens) for r in ran]
    table = format_table(header, rows)

    lines = [*notice, TerminalLine(table[0], bold=True), TerminalLine(table[1])]
    for record, text in zip(ran, table[2:], strict=True):
        lines.append(TerminalLine(text, _VERDICT_COLOR[verdict_label(record)]))

    skipped = data.skipped_count
    tail = f", {skipped} skipped" if skipped else ""
    lines.append(TerminalLine(f"{data.passed_count}/{len(ran)} evals passed{tail}", bold=True))
    lines += [
        TerminalLine(strip_controls(f"note: {record.label}: {note}"), "yellow")
        for record in ran
        for note in record.notes
    ]
    if tokens:
        # No judge ran: no "judges –" (as the table has no judge column then).
        judges = f"; judges {fmt_usage(data.judge_usage)}" if judge_tokens else ""
        lines.append(TerminalLine(f"tokens: agent {fmt_usage(data.agent_usage)}{judges}"))
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
