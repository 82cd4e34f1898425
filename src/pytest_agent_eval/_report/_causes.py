"""The suite's failed voice runs by cause, when attribution ran (docs/attribution.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .._records import EvalRecord
from ..models._attribution import Attribution

__all__ = [
    "CAUSE_CHANGE_HEADER",
    "cause_change_rows",
    "cause_changes",
    "cause_counts",
    "cause_line",
    "cause_rows",
    "evidence_lines",
]

CAUSE_CHANGE_HEADER = ("cause", "base", "new", "change")


def cause_counts(records: Sequence[EvalRecord]) -> list[tuple[str, int]]:
    """The attributed runs of ``records`` counted by cause, most first (``[("hearing", 2),
    ("tool", 1)]``); empty when no run was attributed."""
    causes = Counter(
        run.attribution.cause
        for record in records
        if record.result is not None
        for run in record.result.runs
        if run.attribution is not None
    )
    return sorted(causes.items(), key=_most_first)


def cause_line(records: Sequence[EvalRecord]) -> str | None:
    """``3 failed runs: 2 hearing, 1 tool``: the attributed runs of ``records`` counted by
    cause, most first; None when no run was attributed."""
    causes = cause_counts(records)
    if not causes:
        return None
    total = sum(n for _, n in causes)
    counted = ", ".join(f"{n} {cause}" for cause, n in causes)
    return f"{total} failed run{'s' if total != 1 else ''}: {counted}"


def cause_rows(causes: Sequence[tuple[str, int]]) -> list[list[str]]:
    """The rows of the per-cause table: one per cause (``["hearing", "2"]``), then the
    total."""
    total = sum(n for _, n in causes)
    return [*([cause, str(n)] for cause, n in causes), ["total", str(total)]]


def evidence_lines(attribution: Attribution) -> list[str]:
    """Each piece of evidence in one line, in the order it was tried: ``fixture_hearing
    (passed): with the fixture's words as its STT, turn 1 passes (...)``."""
    return [
        f"{e.counterfactual} ({e.verdict}): {e.detail or e.error or ''}".rstrip(": ")
        for e in attribution.evidence
    ]


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])


def _document_causes(document: Mapping[str, Any]) -> dict[str, Counter[str]]:
    """Per eval of a results file (by its transcript id and variant), its runs' causes."""
    found: dict[str, Counter[str]] = {}
    for entry in document.get("evals", []):
        if not isinstance(entry, dict):
            continue
        # One transcript may run as several evals (a parametrized agent): each its own name,
        # and evals that still share one add up rather than replace each other.
        name = str(entry.get("transcript_id") or entry.get("nodeid") or "?")
        if entry.get("param"):
            name += f"[{entry['param']}]"
        causes = found.setdefault(name, Counter())
        for capture in entry.get("captures") or []:
            attribution = capture.get("attribution") if isinstance(capture, dict) else None
            if isinstance(attribution, dict) and attribution.get("cause"):
                causes[str(attribution["cause"])] += 1
    return found


def _counted(causes: Counter[str]) -> str:
    return ", ".join(f"{n} {c}" for c, n in sorted(causes.items(), key=_most_first)) or "none"


def cause_changes(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """How the failed runs' causes changed between two results files: the suite's counts,
    then each eval whose causes changed (``booking: 1 hearing -> 1 agent_logic``); empty when
    neither file has an attributed run."""
    then, now = _document_causes(base), _document_causes(new)
    total_then = sum(then.values(), Counter[str]())
    total_now = sum(now.values(), Counter[str]())
    if not total_then and not total_now:
        return []
    lines = [f"failure causes: {_counted(total_then)} -> {_counted(total_now)}"]
    for name in sorted(set(then) | set(now)):
        before, after = then.get(name, Counter()), now.get(name, Counter())
        if before != after:
            lines.append(f"  {name}: {_counted(before)} -> {_counted(after)}")
    return lines


def cause_change_rows(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[list[str]]:
    """The per-cause table of two results files: one row per cause either has, most failed
    runs now first (``["hearing", "2", "0", "-2"]``), then the total; empty when neither file
    has an attributed run."""
    then = sum(_document_causes(base).values(), Counter[str]())
    now = sum(_document_causes(new).values(), Counter[str]())
    if not then and not now:
        return []
    causes = sorted(set(then) | set(now), key=lambda c: (-now[c], -then[c], c))
    counted = [(c, then[c], now[c]) for c in causes]
    counted.append(("total", then.total(), now.total()))
    return [[c, str(a), str(b), f"{b - a:+d}" if b != a else "0"] for c, a, b in counted]
