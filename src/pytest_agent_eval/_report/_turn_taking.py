"""The turn-taking conformance table (docs/turn-taking.md): one row per metric of each
turn-taking item, with its value, 95% interval, count, budget and the budget's verdict; the
same rows in the terminal, the markdown and the HTML report."""

from __future__ import annotations

import html
from collections.abc import Sequence

from .._records import EvalRecord
from ..models._turn_taking import BudgetVerdict, Metric

__all__ = ["CONFORMANCE_HEADER", "conformance_html", "conformance_rows"]

CONFORMANCE_HEADER = ("eval", "metric", "value", "95% interval", "n", "budget", "verdict")

_VERDICT = {"passed": "PASS", "failed": "FAIL", "error": "ERROR"}


def _number(value: float, unit: str) -> str:
    return f"{value:g} ms" if unit == "ms" else f"{value:.2f}"


def _count(metric: Metric) -> str:
    if metric.hits is not None and metric.value is not None:
        return f"{metric.hits}/{metric.count}"
    return str(metric.count)


def _row(label: str, metric: Metric, budgets: Sequence[BudgetVerdict]) -> list[str]:
    low_high = metric.interval
    return [
        label,
        metric.name,
        "unmeasured" if metric.value is None else _number(metric.value, metric.unit),
        "–" if low_high is None else "–".join(_number(v, metric.unit) for v in low_high),
        _count(metric),
        ", ".join(b.text for b in budgets) or "–",
        ", ".join(_VERDICT[b.verdict] for b in budgets),
    ]


def conformance_rows(records: Sequence[EvalRecord]) -> list[list[str]]:
    """The table's rows, `CONFORMANCE_HEADER`'s columns, for every turn-taking record."""
    rows = []
    for record in records:
        taken = record.turn_taking
        if taken is None:
            continue
        for metric in taken.metrics:
            budgets = [b for b in taken.budgets if b.metric == metric.name]
            rows.append(_row(record.label, metric, budgets))
    return rows


def conformance_html(records: Sequence[EvalRecord]) -> str:
    """The table as an HTML section, "" when no turn-taking item ran."""
    rows = conformance_rows(records)
    if not rows:
        return ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in CONFORMANCE_HEADER)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return (
        '<section id="turn-taking"><h2>Turn-taking conformance</h2>'
        f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )
