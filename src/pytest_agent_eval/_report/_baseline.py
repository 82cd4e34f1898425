"""This session compared with an earlier one: each eval's score then and now, and whether the
difference is a change.

``--agent-eval-baseline PATH`` reads a results file back (`report._results_file.load_baseline`)
and this module compares each eval, matched by its ``key`` (the node id, plus the transcript id
for a Python test), with this session's: score then and now with their 95% intervals, and a
verdict decided by a two-sided exact test at p < 0.05: ``regressed`` or ``improved`` when the
difference is significant, ``unchanged`` (within noise) otherwise. When both sides ran the same
numbered runs (each run number has the same inputs: the same conditions' seed, the same
simulated caller's), the runs are paired by number and **McNemar's exact test** weighs the runs
whose verdict flipped; otherwise **Fisher's exact test** compares passed and failed runs then
and now. A few runs rarely make a difference significant: that is the honest answer, not a
defect.

Apart from the results file and the report data, which hold a comparison but are not needed
to make one: it reads only the session's records.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from .._records import EvalRecord
from ..errors import AgentEvalError
from ..models import wilson_interval

__all__ = [
    "SIGNIFICANCE",
    "BaselineComparison",
    "BaselineError",
    "EvalChange",
    "compare_results_files",
    "compare_with_baseline",
    "fisher_exact_p",
    "mcnemar_exact_p",
]

SIGNIFICANCE = 0.05
"""A difference in pass rate counts as a change when its exact test gives p below this."""

Change = Literal["regressed", "improved", "unchanged", "not comparable"]


class BaselineError(AgentEvalError):
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


def mcnemar_exact_p(lost: int, gained: int) -> float:
    """Two-sided p-value of McNemar's exact test on paired runs: ``lost`` pairs passed then
    and not now, ``gained`` the reverse (the pairs that agree say nothing of a change). Under
    no change each flip goes either way with even odds: the binomial tail of the rarer
    direction, doubled."""
    flips = lost + gained
    if flips == 0:
        return 1.0
    tail = sum(math.comb(flips, k) for k in range(min(lost, gained) + 1)) / (1 << flips)
    return min(1.0, 2 * tail)


Test = Literal["mcnemar", "fisher"]
"""Which exact test decided a change: runs paired by number, or two unpaired samples."""


@dataclass(frozen=True, slots=True)
class EvalChange:
    """One eval then and now."""

    key: str
    label: str
    change: Change
    p_value: float | None = None
    test: Test | None = None
    """The test that gave ``p_value`` (None when not comparable)."""
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
        """``2 regressed, 1 improved, 5 unchanged within noise, 1 new, 0 removed``, and the
        test that decided."""
        tests = {c.test for c in self.changes if c.test is not None}
        named = "Fisher's exact test"
        if "mcnemar" in tests:
            named = "McNemar's exact test on runs paired by number"
            if "fisher" in tests:
                named += ", Fisher's exact test where the runs differ"
        return (
            f"{self.count('regressed')} regressed, {self.count('improved')} improved, "
            f"{self.count('unchanged')} unchanged within noise, "
            f"{self.count('not comparable')} not comparable, {len(self.new)} new, "
            f"{len(self.removed)} removed ({named}, p < {SIGNIFICANCE})"
        )


def _tokens_per_run(tokens: Any, runs: Any) -> float | None:
    if not isinstance(tokens, Mapping) or not isinstance(runs, int) or runs <= 0:
        return None
    total = tokens.get("total")
    return total / runs if isinstance(total, int | float) else None


@dataclass(frozen=True, slots=True)
class _Side:
    """What the comparison reads of one eval on one side, from a record or a results file's
    entry alike."""

    runs: int | None
    passed: int | None
    verdict: str | None
    p95_latency_s: float | None
    tokens_per_run: float | None
    run_passed: Mapping[int, bool] | None = None
    """Each run's number and whether it passed, when known: what pairs the runs."""

    @property
    def usable(self) -> bool:
        return (
            isinstance(self.runs, int)
            and isinstance(self.passed, int)
            and self.runs > 0
            and self.verdict not in ("error", "skipped")
        )

    @property
    def score(self) -> float | None:
        return self.passed / self.runs if self.usable else None  # type: ignore[operator]

    @property
    def interval(self) -> tuple[float, float] | None:
        return wilson_interval(self.passed, self.runs) if self.usable else None  # type: ignore[arg-type]

    @property
    def runs_text(self) -> str:
        return f"{self.passed}/{self.runs}" if self.usable else "–"


def _side_of_entry(entry: Mapping[str, Any]) -> _Side:
    runs, passed = entry.get("runs"), entry.get("passed_runs")
    latency = entry.get("p95_latency_s")
    captures = entry.get("captures")
    run_passed: dict[int, bool] | None = None
    if isinstance(captures, list) and all(
        isinstance(c, Mapping) and isinstance(c.get("run"), int) for c in captures
    ):
        run_passed = {c["run"]: c.get("verdict") == "passed" for c in captures}
    return _Side(
        runs=runs if isinstance(runs, int) else None,
        passed=passed if isinstance(passed, int) else None,
        verdict=entry.get("verdict") if isinstance(entry.get("verdict"), str) else None,
        p95_latency_s=float(latency) if isinstance(latency, int | float) else None,
        tokens_per_run=_tokens_per_run(entry.get("agent_tokens"), runs),
        run_passed=run_passed,
    )


def _side_of_record(record: EvalRecord) -> _Side:
    res = record.result
    if res is None or not res.runs:
        return _Side(None, None, record.verdict, None, None)
    runs = len(res.runs)
    return _Side(
        runs=runs,
        passed=res.passed_run_count,
        verdict=record.verdict,
        p95_latency_s=res.p95_latency_s,
        tokens_per_run=res.agent_usage.total_tokens / runs if res.agent_usage else None,
        run_passed={run.index + 1: run.passed for run in res.runs},
    )


def _change(key: str, label: str, then: _Side, now: _Side) -> EvalChange:
    common = {
        "key": key,
        "label": label,
        "then_score": then.score,
        "then_ci": then.interval,
        "then_runs": then.runs_text,
    }
    if not (then.usable and now.usable):
        return EvalChange(change="not comparable", **common)  # type: ignore[arg-type]
    assert then.passed is not None and then.runs is not None
    assert now.passed is not None and now.runs is not None
    test: Test
    before, after = then.run_passed, now.run_passed
    if before is not None and after is not None and before.keys() == after.keys():
        lost = sum(ok and not after[run] for run, ok in before.items())
        gained = sum(not ok and after[run] for run, ok in before.items())
        test, p = "mcnemar", mcnemar_exact_p(lost, gained)
    else:
        test = "fisher"
        p = fisher_exact_p(then.passed, then.runs - then.passed, now.passed, now.runs - now.passed)
    change: Change = "unchanged"
    if p < SIGNIFICANCE:
        change = "regressed" if (now.score or 0.0) < (then.score or 0.0) else "improved"
    if now.verdict == "crashed" and then.verdict != "crashed":
        # A crash is never within noise: no gate absorbs one, and neither does a comparison.
        change = "regressed"
    latency_delta = (
        now.p95_latency_s - then.p95_latency_s
        if now.p95_latency_s is not None and then.p95_latency_s is not None
        else None
    )
    tokens_delta = (
        now.tokens_per_run - then.tokens_per_run
        if now.tokens_per_run is not None and then.tokens_per_run is not None
        else None
    )
    return EvalChange(
        change=change,
        p_value=p,
        test=test,
        now_score=now.score,
        now_ci=now.interval,
        now_runs=now.runs_text,
        latency_delta_s=latency_delta,
        tokens_delta_per_run=tokens_delta,
        **common,  # type: ignore[arg-type]
    )


def _entries(document: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """A results file's evals by key."""
    return {
        e["key"]: e
        for e in document.get("evals", [])
        if isinstance(e, Mapping) and isinstance(e.get("key"), str)
    }


def _compare(
    now: Iterable[tuple[str, str, _Side]], baseline: Mapping[str, Any], path: str
) -> BaselineComparison:
    """``now``'s evals (key, label, what ran) against the baseline's entries, by key."""
    earlier = _entries(baseline)
    changes, new, seen = [], [], set()
    for key, label, side in now:
        seen.add(key)
        then = earlier.get(key)
        if then is None or then.get("verdict") == "skipped":
            new.append(label)
        else:
            changes.append(_change(key, label, _side_of_entry(then), side))
    removed = tuple(
        str(e.get("label") or key)
        for key, e in earlier.items()
        if key not in seen and e.get("verdict") != "skipped"
    )
    generated = baseline.get("generated_at")
    return BaselineComparison(
        path=path,
        generated_at=generated if isinstance(generated, str) else None,
        changes=tuple(changes),
        new=tuple(new),
        removed=removed,
    )


def compare_with_baseline(
    ran: Iterable[EvalRecord], baseline: Mapping[str, Any], path: str
) -> BaselineComparison:
    """Compare the evals that ran in this session (``ran``) with the baseline's, by key."""
    return _compare(((r.key, r.label, _side_of_record(r)) for r in ran), baseline, path)


def compare_results_files(
    base: Mapping[str, Any], new: Mapping[str, Any], base_path: str
) -> BaselineComparison:
    """Compare two results files, eval by eval (by key), as a session is compared with its
    baseline: ``base`` is then, ``new`` is now (``agent-eval compare``); a skipped eval of
    ``new`` counts as absent."""
    ran = (
        (key, str(entry.get("label") or key), _side_of_entry(entry))
        for key, entry in _entries(new).items()
        if entry.get("verdict") != "skipped"
    )
    return _compare(ran, base, base_path)
