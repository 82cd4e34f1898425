"""The data every report is built from: one record per eval, gathered from pytest reports.

The plugin attaches ``report.agent_eval_all`` (a list of JSON-friendly dicts, one per eval the test
ran) and ``report.agent_eval`` (its first element) to each phase's `pytest.TestReport`. Those
attributes travel through xdist unchanged, so the controller rebuilds exactly what a single process
sees. Nothing here renders anything; `terminal`, `markdown` and `html` do that.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ..models import TranscriptResult

if TYPE_CHECKING:
    import pytest

    from ..gates import ExitDecision, GateResult

__all__ = [
    "EvalRecord",
    "RecordCollector",
    "ReportData",
    "SessionRecords",
    "TestOutcome",
    "Verdict",
    "eval_entries",
    "iter_results",
    "record_from_entry",
]

Verdict = Literal["passed", "failed", "error", "skipped"]
"""What happened to one eval: its threshold met or missed, could not run, or was skipped."""

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
    """``"yaml"`` or ``"python"``."""
    markers: tuple[str, ...] = ()
    """Names of the pytest markers on the test."""
    tags: tuple[str, ...] = ()
    """The transcript's tags."""
    path: str | None = None
    """File the transcript or test came from."""
    result: TranscriptResult | None = None
    """The runs; None when the eval did not run (skipped, or the test errored before it)."""
    test_outcome: TestOutcome = "passed"
    """The pytest outcome of the whole test (shared by every eval of a Python test)."""
    index: int = 0
    """Position among the evals of its test."""

    @property
    def test_name(self) -> str:
        """The last part of the node id, e.g. ``test_booking[fast]`` or ``book_slot``."""
        return self.nodeid.rsplit("::", 1)[-1]

    @property
    def verdict(self) -> Verdict:
        """The eval's own verdict, independent of anything else the test asserted."""
        if self.result is not None:
            return "passed" if self.result.passed else "failed"
        if self.test_outcome == "skipped":
            return "skipped"
        if self.test_outcome == "passed":
            # A test that reported an eval but never ran it and still passed: nothing to judge.
            return "skipped"
        return "error"

    @property
    def ran(self) -> bool:
        """True unless skipped: errors count as having run (and not passed)."""
        return self.verdict != "skipped"

    def matches_name(self, name: str) -> bool:
        """True when a ``must_pass`` entry names this eval.

        An entry may be the transcript id, the full node id, or the test name with or without
        its parametrization (``test_booking`` matches ``test_booking[fast]``).
        """
        test_name = self.test_name
        return name in (self.transcript_id, self.nodeid, test_name, test_name.split("[", 1)[0])


def eval_entries(report: Any) -> list[Mapping[str, Any]]:
    """The eval dicts the plugin attached to a report; empty for a test that is not an eval.

    Reads ``agent_eval_all`` (list) and falls back to ``agent_eval`` (one dict), so either form
    the plugin sets is understood.
    """
    entries = getattr(report, "agent_eval_all", None)
    if isinstance(entries, list | tuple):
        return [e for e in entries if isinstance(e, Mapping)]
    single = getattr(report, "agent_eval", None)
    if isinstance(single, Mapping):
        return [single]
    return []


def record_from_entry(
    entry: Mapping[str, Any], *, outcome: TestOutcome, index: int = 0
) -> EvalRecord:
    """Build an `EvalRecord` from one dict of ``report.agent_eval_all``."""
    raw = entry.get("result")
    result = TranscriptResult.from_dict(raw) if isinstance(raw, Mapping) else None
    nodeid = str(entry.get("nodeid", ""))
    transcript_id = str(
        entry.get("transcript_id") or (result.transcript_id if result else "") or nodeid
    )
    tags = entry.get("tags")
    if tags is None and result is not None:
        tags = result.tags
    return EvalRecord(
        nodeid=nodeid,
        transcript_id=transcript_id,
        kind=str(entry.get("kind", "yaml")),
        markers=tuple(str(m) for m in entry.get("markers") or ()),
        tags=tuple(str(t) for t in tags or ()),
        path=None if entry.get("path") is None else str(entry.get("path")),
        result=result,
        test_outcome=outcome,
        index=index,
    )


@dataclass
class _TestState:
    """What the collector has seen of one test across its phases."""

    outcome: TestOutcome = "passed"
    call_entries: list[Mapping[str, Any]] | None = None
    other_entries: list[Mapping[str, Any]] | None = None


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

    @property
    def ran(self) -> tuple[EvalRecord, ...]:
        """The evals that ran (not skipped)."""
        return tuple(r for r in self.records if r.ran)

    @property
    def skipped(self) -> tuple[EvalRecord, ...]:
        """The evals that were skipped."""
        return tuple(r for r in self.records if not r.ran)


class RecordCollector:
    """Collects `EvalRecord` s from test reports, on the xdist controller or a single process.

    Feed it every `pytest.TestReport` (``pytest_runtest_logreport``) and every failed
    `pytest.CollectReport`, then call `build`.
    """

    def __init__(self) -> None:
        self._tests: dict[str, _TestState] = {}
        self._failed: list[str] = []

    def add_test_report(self, report: pytest.TestReport) -> None:
        """Take one phase's report into account."""
        if report.outcome == "rerun":  # type: ignore[comparison-overlap]
            # pytest-rerunfailures: only the final attempt counts.
            return
        entries = eval_entries(report)
        state = self._tests.get(report.nodeid)
        if state is None:
            state = self._tests[report.nodeid] = _TestState()
        if entries:
            if report.when == "call":
                state.call_entries = entries
            elif state.other_entries is None:
                state.other_entries = entries
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
        eval_ids: set[str] = set()
        failed_in_call: set[str] = set()
        for nodeid, state in self._tests.items():
            if state.outcome == "failed":
                failed_in_call.add(nodeid)
            entries = state.call_entries or state.other_entries
            if not entries:
                continue
            eval_ids.add(nodeid)
            for index, entry in enumerate(entries):
                record = record_from_entry(entry, outcome=state.outcome, index=index)
                if not record.nodeid:
                    record = _with_nodeid(record, nodeid)
                records.append(record)
        # Sorted, so a report reads the same whatever order (xdist) tests finished in.
        records.sort(key=lambda r: (r.nodeid, r.index))
        return SessionRecords(
            records=tuple(records),
            failed_nodeids=tuple(self._failed),
            eval_nodeids=frozenset(eval_ids),
            failed_in_call=frozenset(failed_in_call),
        )


def _with_nodeid(record: EvalRecord, nodeid: str) -> EvalRecord:
    return EvalRecord(
        nodeid=nodeid,
        transcript_id=record.transcript_id or nodeid,
        kind=record.kind,
        markers=record.markers,
        tags=record.tags,
        path=record.path,
        result=record.result,
        test_outcome=record.test_outcome,
        index=record.index,
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


def iter_results(records: Iterable[EvalRecord]) -> Iterable[tuple[EvalRecord, TranscriptResult]]:
    """The records that have a result, paired with it."""
    for record in records:
        if record.result is not None:
            yield record, record.result
