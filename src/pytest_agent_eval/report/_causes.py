"""The suite's failed voice runs by cause, when attribution ran (docs/attribution.md)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .._records import EvalRecord

__all__ = ["cause_line"]


def cause_line(records: Sequence[EvalRecord]) -> str | None:
    """``3 failed runs: 2 hearing, 1 tool``: the attributed runs of ``records`` counted by
    cause, most first; None when no run was attributed."""
    causes = Counter(
        run.attribution.cause
        for record in records
        if record.result is not None
        for run in record.result.runs
        if run.attribution is not None
    )
    if not causes:
        return None
    total = sum(causes.values())
    counted = ", ".join(f"{n} {cause}" for cause, n in sorted(causes.items(), key=_most_first))
    return f"{total} failed run{'s' if total != 1 else ''}: {counted}"


def _most_first(item: tuple[str, int]) -> tuple[int, str]:
    return (-item[1], item[0])
