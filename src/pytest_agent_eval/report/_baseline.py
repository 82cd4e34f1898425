"""This session compared with an earlier one: each eval's score then and now, and whether the
difference is a change.

``--agent-eval-baseline PATH`` reads a results file back (`report._results_file.load_baseline`)
and this module compares each eval, matched by its ``key`` (the node id, plus the transcript id
for a Python test), with this session's: score then and now with their 95% intervals, and a
verdict decided by **Fisher's exact test** (two-sided, on passed / failed runs then and now, at
p < 0.05): ``regressed`` or ``improved`` when the difference is significant, ``unchanged``
(within noise) otherwise. A few runs rarely make a difference significant: that is the honest
answer, not a defect.

Apart from the results file and the report data, which hold a comparison but are not needed
to make one: it reads only the session's records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._records import EvalRecord
from ..models import wilson_interval

__all__ = [
    "SIGNIFICANCE",
    "BaselineComparison",
    "BaselineError",
    "EvalChange",
    "compare_with_baseline",
    "fisher_exact_p",
]

SIGNIFICANCE = 0.05
"""A difference in pass rate counts as a change when Fisher's exact test gives p below this."""

Change = Literal["regressed", "improved", "unchanged", "not comparable"]


class BaselineError(Exception):
    """The baseline file cannot be used (missing, not JSON, another schema version)."""


def fisher_exact_p(a_pass: int, a_fail: int, b_pass: int, b_fail: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2x2 table [[a_pass, a_fail],
    [b_pass, b_fail]]: the probability, with the margins fixed, of a table at most as likely
    as the one observed."""
    row_a, col_pass = a_pass + a_fail, a_pass + b_pass
    total = row_a + b_pass + b_fail
    if total == 0:
        return 1.0
    denominator = math.comb(total, col_pass)

    def probability(x: int) -> float:
        return math.comb(row_a, x) * math.comb(total - row_a, col_pass - x) / denominator

    observed = probability(a_pass)
    low, high = max(0, col_pass - (total - row_a)), min(row_a, col_pass)
    p = sum(
        prob
        for prob in (probability(x) for x in range(low, high + 1))
        if prob <= observed * (1 + 1e-7)
    )
    return min(1.0, p)


@dataclass(frozen=True, slots=True)
class EvalChange:
    """One eval then and now."""

    key: str
    label: str
    change: Change
    p_value: float | None = None
    then_score: float | None = None
    then_ci: tuple[float, float] | None = None
    then_runs: str = "–"
    now_score: float | None = None
    now_ci: tuple[float, float] | None = None
    now_runs: str = "–"
    latency_delta_s: float | None = None
    """p95 latency now minus then (voice), when both were measured."""
    tokens_delta_per_run: float | None = None
    """Agent tokens per run now minus then, when both were reported."""


@dataclass(frozen=True, slots=True)
class BaselineComparison:
    """This session against an earlier results file."""

    path: str
    generated_at: str | None
    changes: tuple[EvalChange, ...]
    new: tuple[str, ...]
    """Evals of this session the baseline does not have."""
    removed: tuple[str, ...]
    """Evals of the baseline this session did not run."""

    def count(self, change: Change) -> int:
        """How many evals had this change."""
        return sum(c.change == change for c in self.changes)

    @property
    def headline(self) -> str:
        """``2 regressed, 1 improved, 5 unchanged within noise, 1 new, 0 removed``."""
        return (
            f"{self.count('regressed')} regressed, {self.count('improved')} improved, "
            f"{self.count('unchanged')} unchanged within noise, "
            f"{self.count('not comparable')} not comparable, {len(self.new)} new, "
            f"{len(self.removed)} removed (Fisher's exact test, p < {SIGNIFICANCE})"
        )


def _tokens_per_run(tokens: Any, runs: Any) -> float | None:
    if not isinstance(tokens, Mapping) or not isinstance(runs, int) or runs <= 0:
        return None
    total = tokens.get("total")
    return total / runs if isinstance(total, int | float) else None


def _change(record: EvalRecord, then: Mapping[str, Any]) -> EvalChange:
    res = record.result
    then_runs, then_passed = then.get("runs"), then.get("passed_runs")
    usable_then = isinstance(then_runs, int) and isinstance(then_passed, int) and then_runs > 0
    then_score = then_passed / then_runs if usable_then else None  # type: ignore[operator]
    then_ci = wilson_interval(then_passed, then_runs) if usable_then else None  # type: ignore[arg-type]
    common = {
        "key": record.key,
        "label": record.label,
        "then_score": then_score,
        "then_ci": then_ci,
        "then_runs": f"{then_passed}/{then_runs}" if usable_then else "–",
    }
    comparable = usable_then and res is not None and res.runs and record.verdict != "error"
    comparable = comparable and then.get("verdict") != "error"
    if not comparable or res is None:
        return EvalChange(change="not comparable", **common)  # type: ignore[arg-type]
    now_passed, now_runs = res.passed_run_count, len(res.runs)
    p = fisher_exact_p(
        then_passed,  # type: ignore[arg-type]
        then_runs - then_passed,  # type: ignore[operator]
        now_passed,
        now_runs - now_passed,
    )
    change: Change = "unchanged"
    if p < SIGNIFICANCE:
        change = "regressed" if res.score < (then_score or 0.0) else "improved"
    latency_then = then.get("p95_latency_s")
    latency_delta = (
        res.p95_latency_s - latency_then
        if res.p95_latency_s is not None and isinstance(latency_then, int | float)
        else None
    )
    tokens_then = _tokens_per_run(then.get("agent_tokens"), then_runs)
    tokens_now = res.agent_usage.total_tokens / now_runs if res.agent_usage else None
    tokens_delta = (
        tokens_now - tokens_then if tokens_now is not None and tokens_then is not None else None
    )
    return EvalChange(
        change=change,
        p_value=p,
        now_score=res.score,
        now_ci=res.interval,
        now_runs=f"{now_passed}/{now_runs}",
        latency_delta_s=latency_delta,
        tokens_delta_per_run=tokens_delta,
        **common,  # type: ignore[arg-type]
    )


def compare_with_baseline(
    ran: Iterable[EvalRecord], baseline: Mapping[str, Any], path: str
) -> BaselineComparison:
    """Compare the evals that ran in this session (``ran``) with the baseline's, by key."""
    ran = list(ran)
    earlier = {
        e["key"]: e
        for e in baseline.get("evals", [])
        if isinstance(e, Mapping) and isinstance(e.get("key"), str)
    }
    changes, new = [], []
    for record in ran:
        then = earlier.get(record.key)
        if then is None or then.get("verdict") == "skipped":
            new.append(record.label)
        else:
            changes.append(_change(record, then))
    now_keys = {r.key for r in ran}
    removed = tuple(
        str(e.get("label") or key)
        for key, e in earlier.items()
        if key not in now_keys and e.get("verdict") != "skipped"
    )
    generated = baseline.get("generated_at")
    return BaselineComparison(
        path=path,
        generated_at=generated if isinstance(generated, str) else None,
        changes=tuple(changes),
        new=tuple(new),
        removed=removed,
    )
