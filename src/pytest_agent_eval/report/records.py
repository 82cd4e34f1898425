"""The data every report is built from: one record per eval, gathered from pytest reports.

The plugin attaches each eval's serialized `EvalRecord` to each phase's `pytest.TestReport`
(``report.agent_eval_all``, see `put_records`). Those attributes travel through xdist unchanged,
so the controller rebuilds exactly what a single process sees. Nothing here renders anything;
`terminal`, `markdown` and `html` do that. The record types themselves live in
`pytest_agent_eval._records` (the gates read them too) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._records import EvalRecord, SessionRecords, TestOutcome, Verdict, serialized_records
from ..models import TranscriptResult, Usage, sum_usage

if TYPE_CHECKING:
    import pytest

    from ..gates import ExitDecision, GateResult
    from ._baseline import BaselineComparison

__all__ = [
    "EvalRecord",
    "RecordCollector",
    "ReportData",
    "SessionRecords",
    "TestOutcome",
    "Verdict",
    "iter_results",
    "read_record",
    "serialized_records",
]


def read_record(
    data: Mapping[str, Any],
    *,
    outcome: TestOutcome,
    index: int = 0,
    duration_s: float | None = None,
) -> EvalRecord:
    """An `EvalRecord` from its serialized form, with the test's outcome, its position and
    how long its call phase took."""
    return replace(
        EvalRecord.from_dict(data), test_outcome=outcome, index=index, duration_s=duration_s
    )


@dataclass
class _TestState:
    """What the collector has seen of one test across its phases."""

    outcome: TestOutcome = "passed"
    call_records: list[Mapping[str, Any]] | None = None
    """Serialized records of the call phase (the eval ran)."""
    other_records: list[Mapping[str, Any]] | None = None
    """Serialized records of the first other phase that had some (skipped or errored)."""
    duration_s: float | None = None
    """How long the phase that ran the eval took (the call, or the setup it is reported as)."""


class RecordCollector:
    """Collects `EvalRecord` s from test reports, on the xdist controller or a single process.

    Feed it every `pytest.TestReport` (``pytest_runtest_logreport``) and every failed
    `pytest.CollectReport`, then call `build`.
    """

    def __init__(self) -> None:
        self._tests: dict[str, _TestState] = {}
        self._failed: list[str] = []
        self.finished: set[str] = set()
        """Tests that reached a verdict: a call phase, or a setup that failed or skipped."""

    def add_test_report(self, report: pytest.TestReport) -> None:
        """Take one phase's report into account."""
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]
            # pytest-rerunfailures: only the final attempt counts.
            return
        if report.when == "call" or (report.when == "setup" and not report.passed):
            self.finished.add(report.nodeid)
        serialized = serialized_records(report)
        state = self._tests.get(report.nodeid)
        if state is None:
            state = self._tests[report.nodeid] = _TestState()
        if serialized:
            # An eval that could not evaluate the agent reports its call as a failed setup
            # (``eval_items.make_error``); its records are still the call's.
            if report.when == "call" or getattr(report, "agent_eval_error", None):
                state.call_records = serialized
                state.duration_s = getattr(report, "duration", None)
            elif state.other_records is None:
                state.other_records = serialized
        if report.failed:
            if state.outcome not in ("failed", "error"):
                self._failed.append(report.nodeid)
            state.outcome = "failed" if report.when == "call" else "error"
        elif report.skipped and state.outcome == "passed":
            state.outcome = "skipped"

    def add_collect_failure(self, nodeid: str) -> None:
        """Note a file or module that could not be collected (never absorbable)."""
        self._failed.append(nodeid or "<collection>")

    def build(self) -> SessionRecords:
        """The records gathered so far."""
        records: list[EvalRecord] = []
        plain: list[EvalRecord] = []
        eval_ids: set[str] = set()
        failed_in_call: set[str] = set()
        errored: set[str] = set()
        for nodeid, state in self._tests.items():
            if state.outcome == "failed":
                failed_in_call.add(nodeid)
            elif state.outcome == "error":
                errored.add(nodeid)
            serialized = state.call_records or state.other_records
            if not serialized:
                continue
            eval_ids.add(nodeid)
            for index, data in enumerate(serialized):
                record = read_record(
                    data, outcome=state.outcome, index=index, duration_s=state.duration_s
                )
                if not record.nodeid:
                    record = replace(
                        record, nodeid=nodeid, transcript_id=record.transcript_id or nodeid
                    )
                (plain if record.kind == "plain" else records).append(record)
        # Sorted, so a report reads the same whatever order (xdist) tests finished in.
        records.sort(key=lambda r: (r.nodeid, r.index))
        plain.sort(key=lambda r: r.nodeid)
        return SessionRecords(
            records=tuple(records),
            failed_nodeids=tuple(self._failed),
            eval_nodeids=frozenset(eval_ids),
            failed_in_call=frozenset(failed_in_call),
            errored_nodeids=frozenset(errored),
            plain=tuple(plain),
        )


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
        """The cost in ``currency`` per ``"agent MODEL"`` / ``"judge MODEL"``, and the tokens
        that could not be priced (no model id reported, or a model without a price)."""
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
                ):
                    add("judge", ev.model, ev.usage)
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
    def has_latency(self) -> bool:
        """True when some eval measured turn latency: the tables then get a latency column."""
        return any(res.p95_latency_s is not None for res in self.results)

    @property
    def has_tokens(self) -> bool:
        """True when an agent or a judge reported tokens: the tables then get token columns."""
        return any(
            res.agent_usage is not None or res.judge_usage is not None for res in self.results
        )


def iter_results(records: Iterable[EvalRecord]) -> Iterable[tuple[EvalRecord, TranscriptResult]]:
    """The records that have a result, paired with it."""
    for record in records:
        if record.result is not None:
            yield record, record.result
