"""What one turn-taking item measured and how each budget fared: the record reports and the
results file show (under ``turn_taking``), and the checks its verdict comes from.

A budget whose metric the run could not measure (no stimulus counted toward it, or no latency
to take a percentile of) is an ERROR that says why, never a pass or a fail: the agent was not
evaluated on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..models import EvalResult
from ._metrics import Metric, Observation
from ._spec import METRIC_CATEGORIES, Budget
from ._stimulus import Category, Expected

__all__ = ["BudgetVerdict", "TurnTakingRecord", "judge_budgets", "unmeasured_reason"]


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetVerdict:
    """One budget, checked."""

    key: str
    """As written: ``pause_takeover_rate_max``."""
    metric: str
    bound: Literal["max", "min"]
    limit: float
    value: float | None
    verdict: Literal["passed", "failed", "error"]
    reason: str
    location: str = ""

    @property
    def text(self) -> str:
        """``<= 0.1``: how reports show the budget."""
        return f"{'<=' if self.bound == 'max' else '>='} {self.limit:g}"

    def check(self) -> EvalResult:
        """As a check of the item's result (what its verdict, gates and reports read)."""
        return EvalResult(
            passed=self.verdict == "passed",
            errored=self.verdict == "error",
            reasoning=self.reason,
            name=f"turn_taking.{self.key}",
            key=f"turn_taking.budgets.{self.key}",
            location=self.location or None,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnTakingRecord:
    """One category of a ``turn_taking:`` file played to the agent."""

    spec_id: str
    category: str
    framework: str
    """``livekit`` or ``pipecat``."""
    clock: str
    """``virtual``: the framework's timers ran in audio time."""
    stimuli: int
    seeds: tuple[int, ...] = ()
    voices: tuple[str, ...] = ()
    audio_s: float = 0.0
    """Seconds of stimulus audio played (clips and their tails)."""
    wall_s: float = 0.0
    """Wall seconds the category took."""
    metrics: tuple[Metric, ...] = ()
    """The metrics this category feeds, in report order."""
    budgets: tuple[BudgetVerdict, ...] = ()


def _format(metric: Metric) -> str:
    if metric.value is None:
        return "unmeasured"
    if metric.unit == "ms":
        return f"{metric.value:g} ms"
    return f"{metric.value:.3g}"


def unmeasured_reason(name: str, category: Category, observations: Sequence[Observation]) -> str:
    """Why ``name`` has no value over ``category``'s ``observations``."""
    if not observations:
        return f"no {category.value} stimulus was played"
    if name.startswith("barge_in_yield_latency"):
        return (
            f"the agent yielded to none of the {len(observations)} barge-ins, so there is no "
            "yield latency to take a percentile of"
        )
    if name.startswith("end_of_turn_latency"):
        answerable = [o for o in observations if o.expect is Expected.RESPOND]
        return (
            f"the agent answered none of the {len(answerable)} {category.value} stimuli after "
            "the caller was done (it never answered, or answered early)"
        )
    if name == "false_interruption_recovery_rate":
        return "the agent never stopped for a sound it should have talked over, so no recovery"
    if name == "overlap_ratio":
        return "the stimuli hold no caller speech to overlap"
    return f"no {category.value} stimulus counts toward {name}"


def judge_budgets(
    budgets: Sequence[Budget],
    metrics: Mapping[str, Metric],
    category: Category,
    observations: Sequence[Observation],
) -> list[BudgetVerdict]:
    """Each budget checked against ``metrics`` (those of ``category``'s ``observations``)."""
    out = []
    for budget in budgets:
        if category not in METRIC_CATEGORIES[budget.metric]:
            continue
        metric = metrics[budget.metric]
        base = {
            "key": budget.key,
            "metric": budget.metric,
            "bound": budget.bound,
            "limit": budget.limit,
            "value": metric.value,
            "location": budget.location,
        }
        if metric.value is None:
            why = unmeasured_reason(budget.metric, category, observations)
            out.append(
                BudgetVerdict(
                    **base,  # type: ignore[arg-type]
                    verdict="error",
                    reason=f"{budget.metric} could not be measured: {why}",
                )
            )
            continue
        held = budget.holds(metric.value)
        counted = f" ({metric.hits} of {metric.count})" if metric.hits is not None else ""
        out.append(
            BudgetVerdict(
                **base,  # type: ignore[arg-type]
                verdict="passed" if held else "failed",
                reason=(
                    f"{budget.metric} = {_format(metric)}{counted}, budget {budget.text}"
                    + ("" if held else f": {'over' if budget.bound == 'max' else 'under'} budget")
                ),
            )
        )
    return out
