"""The end-of-session summary table and gate lines, as plain lines for the terminal reporter."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .._sanitize import strip_controls
from ..gates import GateResult
from ._format import (
    fmt_interval,
    fmt_latency,
    fmt_rate,
    fmt_runs,
    fmt_score,
    fmt_usage,
    fmt_usage_per_run,
    verdict_label,
)
from .markdown import interrupted_lines
from .records import EvalRecord, ReportData

__all__ = ["TerminalLine", "format_table", "gate_line", "summary_lines"]

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


def _row(record: EvalRecord, *, latency: bool, tokens: bool) -> list[str]:
    result = record.result
    name = strip_controls(record.transcript_id)
    if result is None:
        cells = [name, "–", "–", "–", "–", verdict_label(record)]
    else:
        cells = [
            name,
            fmt_runs(result),
            str(result.passed_run_count),
            f"{fmt_score(result.score)} {fmt_interval(result.interval)}",
            fmt_score(result.threshold),
            verdict_label(record),
        ]
    if latency:
        cells.append(fmt_latency(result))
    if tokens:
        runs = len(result.runs) if result else 0
        cells.append(fmt_usage_per_run(result.agent_usage if result else None, runs))
        cells.append(fmt_usage_per_run(result.judge_usage if result else None, runs))
    return cells


def gate_line(gate: GateResult) -> TerminalLine:
    """``group booking: PASSED 4/5 (80%) >= 80%`` and why it failed, if it did."""
    enforced = " [enforced]" if gate.config.enforce else ""
    counts = f"{gate.passed_count}/{gate.total} ({fmt_rate(gate.rate)})"
    if gate.passed:
        must = f"; must_pass ok ({len(gate.config.must_pass)})" if gate.config.must_pass else ""
        text = (
            f"group {gate.name}: PASSED {counts} >= threshold "
            f"{gate.config.threshold:.0%}{must}{enforced}"
        )
        return TerminalLine(text, "green")
    text = f"group {gate.name}: FAILED {counts}; " + "; ".join(gate.problems) + enforced
    return TerminalLine(text, "red" if gate.config.enforce else "yellow")


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
        header.append("p95 latency")
    if tokens:
        header += ["agent tokens", "judge tokens"]
    rows = [_row(r, latency=latency, tokens=tokens) for r in ran]
    table = format_table(header, rows)

    lines = [*notice, TerminalLine(table[0], bold=True), TerminalLine(table[1])]
    for record, text in zip(ran, table[2:], strict=True):
        lines.append(TerminalLine(text, _VERDICT_COLOR[verdict_label(record)]))

    skipped = data.skipped_count
    tail = f", {skipped} skipped" if skipped else ""
    lines.append(TerminalLine(f"{data.passed_count}/{len(ran)} evals passed{tail}", bold=True))
    if tokens:
        lines.append(
            TerminalLine(
                f"tokens: agent {fmt_usage(data.agent_usage)}; judges {fmt_usage(data.judge_usage)}"
            )
        )
    lines.extend(gate_line(g) for g in data.gates)
    decision = data.decision
    if decision is not None and data.gates:
        color = "red" if decision.enforced_failures else ("green" if decision.forgiven else None)
        lines.append(TerminalLine(decision.summary(), color, bold=decision.changed))
    return lines
