"""The machine-readable results file, and the comparison of a session with an earlier one.

``--agent-eval-results PATH`` (or ``results_path``) writes one JSON document per session, with
a ``schema_version`` that changes only when a field changes meaning or goes away (fields may be
added within a version). ``--agent-eval-baseline PATH`` reads such a file back and compares each
eval, matched by its ``key`` (the node id, plus the transcript id for a Python test), with this
session's: score then and now with their 95% intervals, and a verdict decided by **Fisher's
exact test** (two-sided, on passed / failed runs then and now, at p < 0.05): ``regressed`` or
``improved`` when the difference is significant, ``unchanged`` (within noise) otherwise. A few
runs rarely make a difference significant: that is the honest answer, not a defect.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..models import Usage, wilson_interval
from .records import EvalRecord, ReportData

__all__ = [
    "BASELINE_HEADER",
    "RATE_DECIMALS",
    "RESULTS_SCHEMA_VERSION",
    "SECONDS_DECIMALS",
    "SIGNIFICANCE",
    "BaselineComparison",
    "BaselineError",
    "EvalChange",
    "baseline_rows",
    "compare_with_baseline",
    "fisher_exact_p",
    "load_baseline",
    "results_document",
]

RESULTS_SCHEMA_VERSION = 1
"""The version of the results file's schema (docs/reports.md describes every field)."""

SIGNIFICANCE = 0.05
"""A difference in pass rate counts as a change when Fisher's exact test gives p below this."""

Change = Literal["regressed", "improved", "unchanged", "not comparable"]


class BaselineError(Exception):
    """The baseline file cannot be used (missing, not JSON, another schema version)."""


def _usage(usage: Usage | None) -> dict[str, int | None] | None:
    if usage is None:
        return None
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "total": usage.total_tokens,
        "requests": usage.requests,
    }


RATE_DECIMALS = 4
"""Scores and interval ends in the results file: 4 decimals (``0.6667``), enough to tell any
two pass rates of up to 10,000 runs apart."""
SECONDS_DECIMALS = 3
"""Durations and latencies in the results file: milliseconds."""


def _round(value: float | None, decimals: int) -> float | None:
    return None if value is None else round(value, decimals)


def _eval_entry(record: EvalRecord) -> dict[str, Any]:
    res = record.result
    entry: dict[str, Any] = {
        "key": record.key,
        "nodeid": record.nodeid,
        "transcript_id": record.transcript_id,
        "param": record.param,
        "label": record.label,
        "description": record.description,
        "tags": list(record.tags),
        "verdict": record.verdict,
        "reason": record.reason,
        "notes": list(record.notes),
        "threshold": res.threshold if res is not None else record.threshold,
        "planned_runs": (res.planned_runs or len(res.runs)) if res else record.planned_runs,
        "runs": None,
        "passed_runs": None,
        "score": None,
        "ci": None,
        "p95_latency_s": None,
        "agent_tokens": None,
        "judge_tokens": None,
        "duration_s": record.duration_s,
    }
    if res is not None:
        entry.update(
            runs=len(res.runs),
            passed_runs=res.passed_run_count,
            score=_round(res.score, RATE_DECIMALS),
            ci=[_round(end, RATE_DECIMALS) for end in res.interval],
            p95_latency_s=_round(res.p95_latency_s, SECONDS_DECIMALS),
            agent_tokens=_usage(res.agent_usage),
            judge_tokens=_usage(res.judge_usage),
        )
    return entry


def results_document(data: ReportData) -> dict[str, Any]:
    """The results file's content: the session's facts and one entry per eval (skipped ones
    too, with verdict ``skipped``)."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "package_version": data.package_version,
        "generated_at": data.generated_at.isoformat() if data.generated_at else None,
        "duration_s": _round(data.duration_s, SECONDS_DECIMALS),
        "complete": data.complete,
        "stopped": data.stopped,
        "exit_status": data.exit_status,
        "selection": list(data.selection),
        "agent_models": list(data.agent_models),
        "judge_models": list(data.judge_models),
        "seeds": {what: value for what, value in data.seeds},
        "load_errors": [{"nodeid": nodeid, "error": error} for nodeid, error in data.load_errors],
        "evals": [_eval_entry(r) for r in data.records],
        "shard": dict(data.shard) if data.shard is not None else None,
        "merged_from": [dict(m) for m in data.merged_from],
    }


def load_baseline(path: Path) -> dict[str, Any]:
    """Read an earlier results file.

    Raises:
        BaselineError: naming the file and what to do.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(
            f"baseline {path}: cannot be read ({exc.strerror or exc}); give the results file "
            "an earlier session wrote with --agent-eval-results"
        ) from None
    except ValueError as exc:
        raise BaselineError(f"baseline {path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("evals"), list):
        raise BaselineError(f"baseline {path}: not a results file (no 'evals' list)")
    version = document.get("schema_version")
    if version != RESULTS_SCHEMA_VERSION:
        raise BaselineError(
            f"baseline {path}: schema_version {version!r}, this version reads "
            f"{RESULTS_SCHEMA_VERSION}; write a new baseline with --agent-eval-results"
        )
    return document


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
    data: ReportData, baseline: Mapping[str, Any], path: str
) -> BaselineComparison:
    """Compare the evals that ran in this session with the baseline's, by key."""
    earlier = {
        e["key"]: e
        for e in baseline.get("evals", [])
        if isinstance(e, Mapping) and isinstance(e.get("key"), str)
    }
    changes, new = [], []
    for record in data.ran:
        then = earlier.get(record.key)
        if then is None or then.get("verdict") == "skipped":
            new.append(record.label)
        else:
            changes.append(_change(record, then))
    now_keys = {r.key for r in data.ran}
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


BASELINE_HEADER = (
    "Transcript",
    "Then",
    "Now",
    "Change",
    "p",
    "Δ p95 latency",
    "Δ agent tokens/run",
)
"""The columns of the baseline table in every report."""


def _score_text(score: float | None, ci: tuple[float, float] | None, runs: str) -> str:
    if score is None or ci is None:
        return "–"
    return f"{score:.2f} [{ci[0]:.2f}–{ci[1]:.2f}] ({runs})"


def baseline_rows(comparison: BaselineComparison) -> list[list[str]]:
    """One row per compared eval, in the order of `BASELINE_HEADER`; regressions first."""
    order = {"regressed": 0, "not comparable": 1, "improved": 2, "unchanged": 3}
    rows = []
    for c in sorted(comparison.changes, key=lambda c: order[c.change]):
        latency = "–" if c.latency_delta_s is None else f"{c.latency_delta_s:+.2f} s"
        tokens = "–" if c.tokens_delta_per_run is None else f"{c.tokens_delta_per_run:+,.0f}"
        rows.append(
            [
                c.label,
                _score_text(c.then_score, c.then_ci, c.then_runs),
                _score_text(c.now_score, c.now_ci, c.now_runs),
                "unchanged within noise" if c.change == "unchanged" else c.change,
                "–" if c.p_value is None else f"{c.p_value:.3f}",
                latency,
                tokens,
            ]
        )
    return rows
