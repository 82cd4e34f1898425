"""What one turn-taking item measured and how each budget fared: the record reports and the
results file show (under ``turn_taking``), carried on the item's `EvalRecord` (so it travels
with the report, through xdist too). Plain data, in models: `_records` imports nothing above
them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ._results import EvalResult

__all__ = ["BudgetVerdict", "Metric", "TurnTakingRecord"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Metric:
    """One turn-taking figure."""

    name: str
    value: float | None
    """None when no stimulus could measure it."""
    count: int
    """How many observations it is computed over (the denominator, or the latencies)."""
    hits: int | None = None
    """The numerator, for a rate."""
    interval: tuple[float, float] | None = None
    """95% interval, when there is one."""
    unit: str = ""

    @property
    def measured(self) -> bool:
        return self.value is not None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "value": self.value,
            "count": self.count,
            "hits": self.hits,
            "interval": list(self.interval) if self.interval is not None else None,
            "unit": self.unit,
        }


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
