"""The gate rules as plain functions over records (no pytest run)."""

from __future__ import annotations

import pytest

from pytest_agent_eval._config import GateConfig
from pytest_agent_eval._gates import decide_exit, evaluate_gate, evaluate_gates, is_member
from pytest_agent_eval._report._records import EvalRecord, SessionRecords
from pytest_agent_eval.models import RunResult, TranscriptResult, TurnResult

OK = int(pytest.ExitCode.OK)
FAILED = int(pytest.ExitCode.TESTS_FAILED)


def _result(passed: bool) -> TranscriptResult:
    run = RunResult(index=0, turns=[TurnResult(index=0, user="hi", error=None if passed else "x")])
    return TranscriptResult(passed=passed, score=float(passed), threshold=1.0, runs=[run])


def _rec(
    nodeid: str,
    *,
    passed: bool | None = True,
    tags: tuple[str, ...] = (),
    markers: tuple[str, ...] = (),
    outcome: str | None = None,
    transcript_id: str | None = None,
    index: int = 0,
) -> EvalRecord:
    if outcome is None:
        outcome = "skipped" if passed is None else ("passed" if passed else "failed")
    return EvalRecord(
        nodeid=nodeid,
        transcript_id=transcript_id or nodeid.rsplit("::", 1)[-1],
        tags=tags,
        markers=markers,
        result=None if passed is None else _result(passed),
        test_outcome=outcome,  # type: ignore[arg-type]
        index=index,
    )


def _session(*records: EvalRecord, non_eval_failures: tuple[str, ...] = ()) -> SessionRecords:
    failed = [r.nodeid for r in records if r.test_outcome in ("failed", "error")]
    return SessionRecords(
        records=records,
        failed_nodeids=tuple(dict.fromkeys([*failed, *non_eval_failures])),
        eval_nodeids=frozenset(r.nodeid for r in records),
        failed_in_call=frozenset(
            [r.nodeid for r in records if r.test_outcome == "failed"] + list(non_eval_failures)
        ),
    )


def test_membership_by_tag_marker_and_name() -> None:
    gate = GateConfig(name="g", tags=("gate:a",), pytest_markers=("slow",), must_pass=("t_x",))
    assert is_member(_rec("e.yaml::one", tags=("gate:a", "other")), gate)
    assert is_member(_rec("test_m.py::test_m", markers=("slow",)), gate)
    assert is_member(_rec("e.yaml::t_x"), gate)
    assert is_member(
        _rec("test_p.py::test_p[fast]", transcript_id="x"),
        GateConfig(name="p", must_pass=("test_p",)),
    )
    assert not is_member(_rec("e.yaml::two", tags=("gate:b",), markers=("fast",)), gate)


def test_rate_leaves_errors_out_lists_them_and_ignores_skips() -> None:
    # An ERROR (verdict not reached) says nothing about the agent: it is not counted in the
    # rate but listed; the run still fails for it, since an error is never absorbed.
    gate = GateConfig(name="g", tags=("t",), threshold=0.75)
    result = evaluate_gate(
        gate,
        [
            _rec("a::a", tags=("t",)),
            _rec("b::b", passed=None, tags=("t",), outcome="error"),
            _rec("c::c", passed=None, tags=("t",)),  # skipped
        ],
    )
    assert (result.passed_count, result.total, len(result.skipped)) == (1, 1, 1)
    assert [r.nodeid for r in result.errored] == ["b::b"]
    assert result.rate == 1.0 and result.passed
    assert result.problems == ["errored (verdict not reached, not counted): b"]


def test_four_of_five_meets_a_threshold_of_eighty_percent() -> None:
    records = [_rec(f"t{i}::t{i}", passed=i != 0, tags=("t",)) for i in range(5)]
    assert evaluate_gate(GateConfig(name="g", tags=("t",), threshold=0.8), records).passed


def test_must_pass_missing_and_failed() -> None:
    gate = GateConfig(name="g", tags=("t",), threshold=0.0, must_pass=("a", "ghost", "b"))
    result = evaluate_gate(gate, [_rec("x::a", tags=("t",)), _rec("x::b", passed=False)])
    assert result.must_pass_missing == ("ghost",)
    assert result.must_pass_failed == ("b",)
    assert not result.passed
    assert result.problems == [
        "must_pass: ghost did not run (counts as FAILED)",
        "must_pass: b FAILED",
    ]
    # Under a selection (-k, tags, deselection), an entry that did not run was left out by it:
    # a warning, never a failure; the failed one still fails.
    partial = evaluate_gate(
        gate, [_rec("x::a", tags=("t",)), _rec("x::b", passed=False)], partial=True
    )
    assert partial.problems == [
        "WARNING: must_pass entry 'ghost' did not run",
        "must_pass: b FAILED",
    ]
    assert not partial.passed
    left_out = evaluate_gate(gate, [_rec("x::a", tags=("t",)), _rec("x::b")], partial=True)
    assert left_out.passed and left_out.status == "PASSED"


def test_group_matching_nothing_fails() -> None:
    result = evaluate_gate(GateConfig(name="g", tags=("nope",)), [_rec("a::a")])
    assert result.matched_nothing and not result.passed
    assert result.problems == ["WARNING: group 'g' matched no eval that ran"]
    # Left out by a selection: SKIPPED, which fails nothing.
    partial = evaluate_gate(GateConfig(name="g", tags=("nope",)), [_rec("a::a")], partial=True)
    assert partial.status == "SKIPPED" and partial.passed
    assert [line.text for line in partial.lines()] == [
        "g: SKIPPED (no member selected)",
        "  WARNING: group 'g' matched no eval that ran (left out by the selection)",
    ]


def test_a_group_whose_members_all_were_skipped_is_skipped() -> None:
    gate = GateConfig(name="booking", tags=("t",), enforce=True)
    result = evaluate_gate(
        gate, [_rec("a::a", passed=None, tags=("t",)), _rec("b::b", passed=None, tags=("t",))]
    )
    assert result.status == "SKIPPED" and result.passed
    assert result.lines()[0].text == "booking: SKIPPED (2 matched, all skipped)"


def test_absorb_turns_eval_failures_covered_by_passing_groups_into_exit_0() -> None:
    session = _session(_rec("a::a", tags=("t",)), _rec("b::b", passed=False, tags=("t",)))
    gates = evaluate_gates([GateConfig(name="g", tags=("t",), threshold=0.5)], session)
    decision = decide_exit(FAILED, session, gates)
    assert decision.exitstatus == OK and decision.forgiven
    assert decision.absorbed == ("b::b",)
    assert (
        decision.summary()
        == "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: b::b"
    )


def test_a_non_eval_failure_is_never_absorbed() -> None:
    session = _session(
        _rec("a::a", tags=("t",)),
        _rec("b::b", passed=False, tags=("t",)),
        non_eval_failures=("test_unit.py::test_x",),
    )
    gates = evaluate_gates([GateConfig(name="g", tags=("t",), threshold=0.5)], session)
    decision = decide_exit(FAILED, session, gates)
    assert decision.exitstatus == FAILED
    assert decision.unabsorbed == ("test_unit.py::test_x",)


def test_setup_errors_and_evals_outside_every_group_are_not_absorbed() -> None:
    gate = GateConfig(name="g", tags=("t",), threshold=0.0)
    for failing in (
        _rec("b::b", passed=None, tags=("t",), outcome="error"),  # setup error
        _rec("b::b", passed=False, tags=("other",)),  # not in any group
    ):
        session = _session(_rec("a::a", tags=("t",)), failing)
        decision = decide_exit(FAILED, session, evaluate_gates([gate], session))
        assert decision.exitstatus == FAILED, failing


def test_a_test_whose_evals_all_passed_failed_for_another_reason() -> None:
    # A Python test that ran a passing eval and then failed its own assert.
    session = _session(_rec("t.py::test_t", passed=True, tags=("t",), outcome="failed"))
    gates = evaluate_gates([GateConfig(name="g", tags=("t",), threshold=0.0)], session)
    assert decide_exit(FAILED, session, gates).exitstatus == FAILED


def test_a_failure_in_a_failing_group_is_not_absorbed_by_another_group() -> None:
    session = _session(
        _rec("a::a", tags=("loose", "strict")), _rec("b::b", passed=False, tags=("loose", "strict"))
    )
    gates = evaluate_gates(
        [
            GateConfig(name="loose", tags=("loose",), threshold=0.5),
            GateConfig(name="strict", tags=("strict",), threshold=1.0),
        ],
        session,
    )
    assert decide_exit(FAILED, session, gates).exitstatus == FAILED


def test_enforced_group_fails_a_green_session() -> None:
    session = _session(_rec("a::a", tags=("t",)))
    gates = evaluate_gates(
        [GateConfig(name="g", tags=("t",), must_pass=("ghost",), enforce=True)], session
    )
    decision = decide_exit(OK, session, gates)
    assert decision.exitstatus == FAILED
    assert decision.enforced_failures == ("g",)
    assert decision.summary() == "enforced group(s) failed: g (exit status 1)"


def test_unenforced_failing_group_leaves_exit_status_alone() -> None:
    session = _session(_rec("a::a", tags=("t",)))
    gates = evaluate_gates([GateConfig(name="g", tags=("nope",))], session)
    assert decide_exit(OK, session, gates).exitstatus == OK


def test_gates_are_not_evaluated_when_no_eval_ran() -> None:
    session = _session(_rec("a::a", passed=None, tags=("t",)))
    gates = evaluate_gates([GateConfig(name="g", tags=("nope",), enforce=True)], session)
    assert gates == ()
    decision = decide_exit(OK, session, gates)
    assert decision.exitstatus == OK and not decision.evaluated
    assert decision.summary() == "gates not evaluated: no eval test ran"


@pytest.mark.parametrize("status", [pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR])
def test_other_exit_statuses_are_never_changed(status: pytest.ExitCode) -> None:
    session = _session(_rec("a::a", tags=("t",)))
    gates = evaluate_gates([GateConfig(name="g", tags=("nope",), enforce=True)], session)
    assert decide_exit(int(status), session, gates).exitstatus == int(status)
