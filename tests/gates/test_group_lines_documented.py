"""docs/migration.md lists every group-summary line the program prints: each kind of line is
rendered here from the gates themselves, in every state that prints it, and must be found in
the page word for word (so the page cannot fall behind the program)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._config import GateConfig
from pytest_agent_eval._gates import ExitDecision, GateResult, decide_exit, evaluate_gate
from pytest_agent_eval._report._records import EvalRecord, SessionRecords
from pytest_agent_eval._report._session import _gates_note
from pytest_agent_eval.models import Crash, RunResult, TranscriptResult, TurnResult

MIGRATION = Path(__file__).resolve().parents[2] / "docs" / "migration.md"


def _rec(name: str, verdict: str, *, tags: tuple[str, ...] = ("gate:booking",)) -> EvalRecord:
    nodeid = f"tests/evals/{name}.yaml::{name}"
    if verdict == "skipped":
        return EvalRecord(nodeid=nodeid, transcript_id=name, tags=tags, test_outcome="skipped")
    turn = TurnResult(index=0, user="hi", error=None if verdict == "passed" else "x")
    turn.errored = verdict == "error"
    if verdict == "crashed":
        turn.crash = Crash(type="RuntimeError", message="boom", where="agent.py:3 in respond")
    run = RunResult(index=0, turns=[turn])
    result = TranscriptResult(
        passed=verdict == "passed", score=float(verdict == "passed"), threshold=1.0, runs=[run]
    )
    outcome = {"passed": "passed", "failed": "failed", "crashed": "failed", "error": "error"}[
        verdict
    ]
    return EvalRecord(
        nodeid=nodeid,
        transcript_id=name,
        tags=tags,
        result=result,
        test_outcome=outcome,  # type: ignore[arg-type]
    )


def _gate_lines() -> list[str]:
    booking = GateConfig(name="booking", tags=("gate:booking",), threshold=0.6)
    four = [_rec(f"ok{i}", "passed") for i in range(3)] + [_rec("booking_flaky", "failed")]
    states: list[GateResult] = [
        evaluate_gate(booking, four),
        evaluate_gate(
            GateConfig(
                name="booking",
                tags=("gate:booking",),
                must_pass=("booking_ok", "booking_flaky", "bad_case"),
                enforce=True,
            ),
            [_rec("booking_ok", "passed"), _rec("booking_flaky", "failed")],
        ),
        evaluate_gate(
            GateConfig(
                name="booking", tags=("gate:booking",), must_pass=("bad_case",), threshold=0.6
            ),
            four,
            partial=True,
        ),
        evaluate_gate(
            GateConfig(name="booking", tags=("gate:booking",)),
            [_rec("ok", "passed"), _rec("booking_flaky", "failed"), _rec("booking_down", "error")],
        ),
        evaluate_gate(
            GateConfig(name="booking", tags=("gate:booking",), threshold=0.5),
            [_rec("ok", "passed"), _rec("booking_crashy", "crashed")],
        ),
        evaluate_gate(booking, [_rec("s1", "skipped"), _rec("s2", "skipped")]),
        evaluate_gate(booking, []),
        evaluate_gate(booking, [], partial=True),
    ]
    return [line.text for gate in states for line in gate.lines()]


def _last_lines() -> list[str]:
    ok = _rec("booking_ok", "passed")
    flaky = _rec("booking_flaky", "failed")
    down = _rec("booking_down", "error")
    crashy = _rec("booking_crashy", "crashed")

    def session(*records: EvalRecord, unit: bool = False) -> SessionRecords:
        failed = [r.nodeid for r in records if r.test_outcome in ("failed", "error")]
        extra = ["tests/test_unit.py::test_unit"] if unit else []
        return SessionRecords(
            records=records,
            failed_nodeids=(*failed, *extra),
            eval_nodeids=frozenset(r.nodeid for r in records),
            failed_in_call=frozenset(
                [r.nodeid for r in records if r.test_outcome == "failed"] + extra
            ),
            errored_nodeids=frozenset(r.nodeid for r in records if r.test_outcome == "error"),
        )

    def decide(
        gate: GateConfig, s: SessionRecords, status: int = 1, **kwargs: bool
    ) -> ExitDecision:
        gates = [evaluate_gate(gate, s.records)]
        return decide_exit(status, s, gates, **kwargs)

    loose = GateConfig(name="booking", tags=("gate:booking",), threshold=0.5)
    strict = GateConfig(name="booking", tags=("gate:booking",), enforce=True)
    unenforced = GateConfig(name="booking", tags=("gate:booking",))
    decisions = [
        decide(loose, session(ok, flaky)),
        decide(loose, session(ok), status=1),
        decide(strict, session(flaky)),
        decide(loose, session(ok, flaky, unit=True)),
        decide(loose, session(ok, flaky), stopped_early=True),
        decide(loose, session(ok, down)),
        decide(loose, session(ok, crashy)),
        decide(unenforced, session(flaky)),
        decide_exit(0, SessionRecords(records=(_rec("x", "skipped"),)), []),
    ]
    notes = [_gates_note("report-only", True), _gates_note("skip", True)]
    return [d.summary() for d in decisions] + notes


@pytest.mark.parametrize("kind", ["group", "last"])
def test_every_group_summary_line_is_in_the_migration_page(kind: str) -> None:
    page = MIGRATION.read_text(encoding="utf-8")
    lines = _gate_lines() if kind == "group" else _last_lines()
    missing = [line for line in dict.fromkeys(lines) if f"`{line}`" not in page]
    assert not missing, "docs/migration.md lacks:\n" + "\n".join(missing)
