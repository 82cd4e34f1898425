"""Budgets checked against what a category measured.

A budget whose metric the run could not measure (no stimulus counted toward it, or no latency
to take a percentile of) is an ERROR that says why, never a pass or a fail: the agent was not
evaluated on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from .._turn_taking._metrics import Observation
from .._turn_taking._stimulus import Category, Expected
from ..models._turn_taking import BudgetVerdict, Metric
from ._spec import METRIC_CATEGORIES, MetricBudget

__all__ = ["judge_budgets", "unmeasured_reason"]


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
    budgets: Sequence[MetricBudget],
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
