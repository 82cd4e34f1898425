"""Records, in one home: what a test ran, one eval's record, the session's records, and the
collector that gathers them from pytest reports; the data both the gates and the reports read.

A test keeps each eval it ran as an `EvalRecord` on its item (the result, its file, description
and notes; the item's own fields are filled in when its report is made); the plugin writes it
onto each test report in serialized form (plain JSON, by the one typed serializer) and the
`RecordCollector` reads it back on the controller, also across xdist workers; that is
the only form in which results travel. Below `_gates` and `_report/` (which both import it), so
`gates` takes records without importing the report package. Nothing here renders.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from ._serialize import from_json, to_json
from .models import TranscriptResult, Verdict
from .models._turn_taking import TurnTakingRecord

if TYPE_CHECKING:
    import pytest

__all__ = [
    "EvalRecord",
    "EvalVerdict",
    "RecordCollector",
    "SessionRecords",
    "TestOutcome",
    "iter_results",
    "put_records",
    "read_record",
    "serialized_records",
]

EvalVerdict = Literal[Verdict, "skipped"]
"""What happened to one eval: a run's `models.Verdict` (its threshold met or missed, the agent
crashed in a run, a FAIL no gate absorbs, or it could not run), or it was skipped."""

TestOutcome = Literal["passed", "failed", "error", "skipped"]
"""The pytest outcome of a whole test: ``failed`` in the call phase, ``error`` in setup/teardown."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EvalRecord:
    """One eval (a YAML transcript, or one ``agent_eval.run`` of a Python test) and its outcome."""

    nodeid: str
    """The pytest node id of the test that ran the eval."""
    transcript_id: str
    """The transcript id (for Python tests, what the plugin reported)."""
    kind: str = "yaml"
    """``"yaml"``, ``"python"``, or ``"plain"`` for a plain test that is a group member."""
    markers: tuple[str, ...] = ()
    """Names of the pytest markers on the test."""
    tags: tuple[str, ...] = ()
    """The transcript's tags."""
    path: str | None = None
    """File the transcript or test came from."""
    result: TranscriptResult | None = None
    """The runs; None when the eval did not run (skipped, or the test errored before it)."""
    not_live: bool = False
    """True when the eval was skipped because evals are not live."""
    test_outcome: TestOutcome = "passed"
    """The pytest outcome of the whole test (shared by every eval of a Python test); filled
    in by the collector from the test's reports."""
    index: int = 0
    """Position among the evals of its test; filled in by the collector."""
    param: str | None = None
    """The test's parametrization id (``fast`` of ``booking[fast]``: a param of a
    parametrized ``llm_eval_agent``), or None. Reports show it after the transcript id."""
    description: str = ""
    """The transcript's ``description``."""
    error: str | None = None
    """Why the eval produced no result (a missing or stale fixture, any setup error: the
    failure's own text, with its fix), or None."""
    threshold: float | None = None
    """The threshold the eval was to meet, also when it produced no result."""
    planned_runs: int | None = None
    """Runs asked for, also when the eval produced no result."""
    notes: tuple[str, ...] = ()
    """Remarks on the eval's inputs worth showing, not failures (a voice fixture made by the
    earlier package, with the command that gives it full provenance)."""
    turn_taking: TurnTakingRecord | None = None
    """A turn-taking item's metrics and budgets (the results file's ``turn_taking``), or
    None for any other eval."""
    duration_s: float | None = None
    """Seconds its test's call phase took (what balances shards); filled in by the collector.
    Fixture setup is left out: a session-scoped fixture would weigh on one test only."""
    _verdict: EvalVerdict | None = field(default=None, init=False, repr=False, compare=False)
    """`verdict` once worked out (not serialized): gates and reports ask for it thousands of
    times in a large session, and a record does not change once built."""

    def to_dict(self) -> dict[str, Any]:
        """The serialized record: plain JSON types."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalRecord:
        """Inverse of `to_dict`."""
        return from_json(cls, data)

    @property
    def test_name(self) -> str:
        """The last part of the node id, e.g. ``test_booking[fast]`` or ``book_slot``."""
        return self.nodeid.rsplit("::", 1)[-1]

    @property
    def label(self) -> str:
        """The transcript id with the parametrization id, ``booking[fast]``: what reports show,
        so two agents running one transcript are told apart."""
        param = self.param
        if not param or self.transcript_id.endswith(f"[{param}]"):
            return self.transcript_id
        return f"{self.transcript_id}[{param}]"

    @property
    def key(self) -> str:
        """What identifies the eval across sessions (results files, baselines): the node id,
        plus the transcript id for a Python test (which may run several evals)."""
        if self.kind == "yaml":
            return self.nodeid
        return f"{self.nodeid}::{self.transcript_id}"

    @property
    def verdict(self) -> EvalVerdict:
        """The eval's own verdict, independent of anything else the test asserted.

        ``error`` when the agent could not be evaluated: a run of its result could not
        (`TranscriptResult.verdict`), or the eval produced no result because our code refused
        to run it (a missing fixture, bad input) or its test's setup or teardown failed.
        """
        verdict = self._verdict
        if verdict is None:
            verdict = self._judge()
            object.__setattr__(self, "_verdict", verdict)  # a cache on a frozen record
        return verdict

    def _judge(self) -> EvalVerdict:
        if self.result is not None:
            return self.result.verdict
        outcome = self.test_outcome
        if outcome == "skipped" or outcome == "passed" or outcome == "failed":
            # An eval test that ran no agent_eval.run (a marker-only test that checks the agent
            # its own way): its test's outcome is its verdict (a failed assertion is a FAIL).
            return outcome
        # A setup or teardown that failed, or our code refused to run the eval (its test is
        # then a pytest error too).
        return "error"

    @property
    def reason(self) -> str | None:
        """Why the verdict is ``error``, in words; None otherwise."""
        if self.verdict != "error":
            return None
        if self.result is not None:
            return self.result.error_reason
        return self.error or "the test failed before the eval produced a result"

    @property
    def crash_reason(self) -> str | None:
        """How the agent crashed, when the verdict is ``crashed``; None otherwise."""
        if self.verdict != "crashed" or self.result is None:
            return None
        return self.result.crash_reason

    @property
    def ran(self) -> bool:
        """True unless skipped: errors count as having run (and not passed)."""
        return self.verdict != "skipped"

    def matches_name(self, name: str) -> bool:
        """True when a ``must_pass`` entry names this eval.

        An entry may be the transcript id, the full node id, or the test name with or without
        its parametrization (``test_booking`` matches ``test_booking[fast]``). For a transcript
        expanded into variants, its id names one variant (``booking[phone]``) and its id before
        expansion names them all (``booking``).
        """
        test_name = self.test_name
        base_id = self.result.base_id if self.result is not None else None
        return name in (
            self.transcript_id,
            self.nodeid,
            test_name,
            test_name.split("[", 1)[0],
            base_id,
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionRecords:
    """Everything the collector saw, in the order tests finished."""

    records: tuple[EvalRecord, ...] = ()
    """Every eval, including skipped ones."""
    failed_nodeids: tuple[str, ...] = ()
    """Every test (eval or not) with a failed phase, plus collection errors, in order."""
    eval_nodeids: frozenset[str] = frozenset()
    """Node ids of tests that carried eval data."""
    failed_in_call: frozenset[str] = frozenset()
    """Tests whose failure happened in the call phase (the only kind a gate may absorb)."""
    errored_nodeids: frozenset[str] = frozenset()
    """Tests that are pytest errors (an ERROR eval, a failed setup or teardown)."""
    plain: tuple[EvalRecord, ...] = ()
    """Plain tests (not evals) that are members of a group (``kind == "plain"``): the gates
    count them, the eval reports do not list them."""

    @property
    def ran(self) -> tuple[EvalRecord, ...]:
        """The evals that ran (not skipped)."""
        return tuple(r for r in self.records if r.ran)

    @property
    def skipped(self) -> tuple[EvalRecord, ...]:
        """The evals that were skipped."""
        return tuple(r for r in self.records if not r.ran)


def put_records(report: Any, records: Sequence[EvalRecord]) -> None:
    """Attach serialized ``records`` to a pytest report: ``report.agent_eval_all`` (every eval
    the test ran) and ``report.agent_eval`` (the first); xdist carries both unchanged."""
    serialized = [r.to_dict() for r in records]
    report.agent_eval_all = serialized
    report.agent_eval = serialized[0] if serialized else None


def serialized_records(report: Any) -> list[Mapping[str, Any]]:
    """The serialized records on a report; empty for a test that is not an eval.

    Reads ``agent_eval_all`` (list) and falls back to ``agent_eval`` (one dict), so either form
    is understood.
    """
    records = getattr(report, "agent_eval_all", None)
    if isinstance(records, list | tuple):
        return [r for r in records if isinstance(r, Mapping)]
    single = getattr(report, "agent_eval", None)
    if isinstance(single, Mapping):
        return [single]
    return []


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


def iter_results(records: Iterable[EvalRecord]) -> Iterable[tuple[EvalRecord, TranscriptResult]]:
    """The records that have a result, paired with it."""
    for record in records:
        if record.result is not None:
            yield record, record.result
