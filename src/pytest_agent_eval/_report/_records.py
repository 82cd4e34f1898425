"""What every renderer takes (`ReportData`): the session's records, the gates' verdicts, the
exit decision and the facts of the session.

The records themselves, and the collector that gathers them from pytest reports, have one home
below the gates and the reports: `pytest_agent_eval._records`. Their names are re-exported
here, where the earlier versions had them. Nothing here renders anything; `terminal`,
`markdown` and `html` do that.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._records import (
    EvalRecord,
    EvalVerdict,
    RecordCollector,
    SessionRecords,
    TestOutcome,
    iter_results,
    read_record,
    serialized_records,
)
from ..models import TranscriptResult, Usage, sum_usage

if TYPE_CHECKING:
    from .._gates import ExitDecision, GateResult
    from ._baseline import BaselineComparison

__all__ = [
    "EvalRecord",
    "EvalVerdict",
    "RecordCollector",
    "ReportData",
    "SessionRecords",
    "TestOutcome",
    "iter_results",
    "read_record",
    "serialized_records",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class ReportData:
    """What the renderers take: the records, the gates' verdicts and the exit decision."""

    session: SessionRecords
    gates: tuple[GateResult, ...] = ()
    decision: ExitDecision | None = None
    generated_at: datetime | None = None
    duration_s: float | None = None
    rootdir: Path | None = None
    """Paths under it are shown relative to it."""
    interrupted: bool = False
    """The session was stopped (Ctrl-C) before every test ran: the reports say so."""
    not_run: tuple[str, ...] = ()
    """Node ids of the evals that were collected but never finished (an interrupted session)."""
    load_errors: tuple[tuple[str, str], ...] = ()
    """Files that failed to collect (a transcript that did not load), as (node id, the error),
    in the order pytest reported them: their evals did not run."""
    exit_status: int | None = None
    """The session's exit status (after the gates' decision, when groups are configured)."""
    stopped: str | None = None
    """How the session was cut short, in words (``"by Ctrl-C"``, ``"after the first failure
    (-x / --maxfail)"``), or None when it ran to the end: every report says whether it was
    complete."""
    package_version: str = ""
    """The pytest-agent-eval version that wrote the report."""
    frameworks: tuple[tuple[str, str], ...] = ()
    """The agent frameworks installed, as ``(distribution, version)`` (`_frameworks`)."""
    seeds: tuple[tuple[str, int], ...] = ()
    """Seeds in force, by what they seed (``("voice", 7)``)."""
    baseline: BaselineComparison | None = None
    """This session compared with ``--agent-eval-baseline``, when one was given."""
    baseline_error: str | None = None
    """Why the baseline could not be compared (a missing file, another schema), or None."""
    prices: tuple[tuple[str, float, float], ...] = ()
    """Per model id, the price of a million input and output tokens (``[tool.agent_eval.prices]``)."""
    currency: str = "USD"
    gates_note: str = ""
    """Why the gates were not applied as configured (a subset run), or empty."""
    selection: tuple[str, ...] = ()
    """How the session chose a subset of the evals (``-k booking``, ``--agent-eval-tags
    smoke``), empty when it ran every collected eval."""
    shard: Mapping[str, Any] | None = None
    """A shard's plan and every test report it saw (``--agent-eval-shard``): what
    ``agent-eval merge`` needs, written to the results file; None in any other session."""
    merged_from: tuple[Mapping[str, Any], ...] = ()
    """The shards a merged session was built from (``agent-eval merge``), one entry each."""

    @property
    def complete(self) -> bool:
        """True when the session ran to its end (no Ctrl-C, no -x stop)."""
        return self.stopped is None and not self.interrupted

    @property
    def agent_models(self) -> tuple[str, ...]:
        """Ids of the models that answered the agents' turns, as the adapters reported them."""
        return tuple(
            dict.fromkeys(
                turn.model
                for res in self.results
                for run in res.runs
                for turn in run.turns
                if turn.model
            )
        )

    def _price_of(self, model: str | None) -> tuple[float, float] | None:
        if not model:
            return None
        bare = model.split(":", 1)[-1]
        for name, per_in, per_out in self.prices:
            key = name.split(":", 1)[-1]
            # Exact, or a dated snapshot of the priced model (gpt-4o-mini-2024-07-18).
            if bare == key or bare.startswith(key + "-"):
                return per_in, per_out
        return None

    @property
    def costs(self) -> tuple[dict[str, float], int]:
        """The cost in ``currency`` per ``"agent MODEL"``, ``"judge MODEL"`` and ``"caller
        MODEL"`` (a simulated caller), and the tokens that could not be priced (no model id reported, or a model without a price)."""
        cost: dict[str, float] = {}
        unpriced = 0

        def add(who: str, model: str | None, usage: Usage | None) -> None:
            nonlocal unpriced
            if usage is None:
                return
            price = self._price_of(model)
            if price is None:
                unpriced += usage.total_tokens
                return
            key = f"{who} {model}"
            cost[key] = (
                cost.get(key, 0.0)
                + (usage.input_tokens * price[0] + usage.output_tokens * price[1]) / 1_000_000
            )

        for res in self.results:
            for run in res.runs:
                for turn in run.turns:
                    add("agent", turn.model, turn.usage)
                for ev in (
                    *run.greeting_evaluations,
                    *(e for turn in run.turns for e in turn.evaluations),
                    *run.evaluations,
                ):
                    add("judge", ev.model, ev.usage)
                if run.simulation is not None:
                    add("caller", run.simulation.model, run.simulation.usage)
        return cost, unpriced

    @property
    def judge_models(self) -> tuple[str, ...]:
        """Ids of the models that gave the judges' verdicts."""
        return tuple(
            dict.fromkeys(
                ev.model
                for res in self.results
                for run in res.runs
                for ev in (
                    *run.greeting_evaluations,
                    *(e for turn in run.turns for e in turn.evaluations),
                    *run.evaluations,  # a simulation's criteria, judged on the whole call
                )
                if ev.model
            )
        )

    def show_path(self, path: str) -> str:
        """``path`` relative to the rootdir when it is under it, else as given."""
        if self.rootdir is None:
            return path
        try:
            return Path(path).relative_to(self.rootdir).as_posix()
        except ValueError:
            return path

    @property
    def records(self) -> tuple[EvalRecord, ...]:
        """Every eval, skipped ones included."""
        return self.session.records

    @property
    def ran(self) -> tuple[EvalRecord, ...]:
        """The evals that ran."""
        return self.session.ran

    @property
    def nothing_ran(self) -> bool:
        """True when no eval ran at all (all skipped, deselected, or none collected)."""
        return not self.session.ran

    @property
    def passed_count(self) -> int:
        """Evals that ran and passed."""
        return sum(r.verdict == "passed" for r in self.ran)

    @property
    def skipped_count(self) -> int:
        """Evals that were skipped."""
        return len(self.records) - len(self.ran)

    @property
    def results(self) -> tuple[TranscriptResult, ...]:
        """The results of the evals that ran (an errored eval may have none)."""
        return tuple(res for _, res in iter_results(self.ran))

    @property
    def run_count(self) -> int:
        """Runs over every eval that ran."""
        return sum(len(res.runs) for res in self.results)

    @property
    def agent_usage(self) -> Usage | None:
        """Tokens the agents spent over every eval that ran; None when none reported any."""
        return sum_usage(res.agent_usage for res in self.results)

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens the judges spent over every eval that ran; None when none reported any."""
        return sum_usage(res.judge_usage for res in self.results)

    @property
    def caller_usage(self) -> Usage | None:
        """Tokens the simulated callers spent over every simulation that ran; None when no
        simulation ran or every caller turn came from the cache."""
        return sum_usage(res.caller_usage for res in self.results)

    @property
    def has_latency(self) -> bool:
        """True when some eval measured turn latency: the tables then get a latency column."""
        return any(res.p95_latency_s is not None for res in self.results)

    @property
    def has_tokens(self) -> bool:
        """True when an agent, a judge or a simulated caller reported tokens: the tables then
        get token columns and the totals a tokens line."""
        return any(
            res.agent_usage is not None
            or res.judge_usage is not None
            or res.caller_usage is not None
            for res in self.results
        )
