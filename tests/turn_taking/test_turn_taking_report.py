"""The turn-taking conformance table in the terminal, markdown and HTML reports, and the record
under ``turn_taking`` in the results file, from a record as a turn-taking item leaves it."""

from __future__ import annotations

from pytest_agent_eval._records import EvalRecord, SessionRecords
from pytest_agent_eval._report._markdown import render_markdown
from pytest_agent_eval._report._records import ReportData
from pytest_agent_eval._report._results_file import _eval_entry
from pytest_agent_eval._report._terminal import turn_taking_lines
from pytest_agent_eval._report._turn_taking import conformance_html, conformance_rows
from pytest_agent_eval.models import EvalResult, RunResult, TranscriptResult, TurnResult
from pytest_agent_eval.models._turn_taking import BudgetVerdict, Metric, TurnTakingRecord


def _record() -> EvalRecord:
    budget = BudgetVerdict(
        key="pause_takeover_rate_max",
        metric="pause_takeover_rate",
        bound="max",
        limit=0.1,
        value=0.5,
        verdict="failed",
        reason="pause_takeover_rate = 0.5 (2 of 4), budget <= 0.1: over budget",
        location="turns.yaml:7",
    )
    taken = TurnTakingRecord(
        spec_id="turns",
        category="pause",
        framework="livekit",
        clock="virtual",
        stimuli=4,
        seeds=(0,),
        voices=("hibari/heart",),
        metrics=(
            Metric(
                name="pause_takeover_rate",
                value=0.5,
                count=4,
                hits=2,
                interval=(0.15, 0.85),
                unit="ratio",
            ),
            Metric(name="end_of_turn_latency_ms_p95", value=None, count=0, unit="ms"),
        ),
        budgets=(budget,),
    )
    turn = TurnResult(index=0, user="4 pause stimuli", evaluations=[budget.check()])
    result = TranscriptResult(
        passed=False, score=0.0, threshold=1.0, runs=[RunResult(index=0, turns=[turn])]
    )
    return EvalRecord(
        nodeid="evals/turns.yaml::turns[pause]",
        transcript_id="turns[pause]",
        result=result,
        turn_taking=taken,
    )


def test_a_row_per_metric_with_value_interval_count_budget_and_verdict() -> None:
    rows = conformance_rows([_record()])
    assert rows == [
        ["turns[pause]", "pause_takeover_rate", "0.50", "0.15–0.85", "2/4", "<= 0.1", "FAIL"],
        ["turns[pause]", "end_of_turn_latency_ms_p95", "unmeasured", "–", "0", "–", ""],
    ]
    plain = EvalRecord(nodeid="t.yaml::t", transcript_id="t")
    assert conformance_rows([plain]) == []
    assert conformance_html([plain]) == ""


def test_the_terminal_table_colours_a_broken_budget_red() -> None:
    data = ReportData(session=SessionRecords(records=(_record(),)))
    lines = turn_taking_lines(data)
    assert lines[0].text.split() == [
        "eval",
        "metric",
        "value",
        "95%",
        "interval",
        "n",
        "budget",
        "verdict",
    ]
    assert lines[2].color == "red" and "FAIL" in lines[2].text
    assert lines[3].color is None
    markdown = render_markdown(data)
    assert "## Turn-taking conformance" in markdown
    assert "| turns[pause] | pause_takeover_rate | 0.50 | 0.15–0.85 | 2/4 | <= 0.1 | FAIL |" in (
        markdown
    )


def test_the_html_section_escapes_its_cells() -> None:
    section = conformance_html([_record()])
    assert section.startswith('<section id="turn-taking">')
    assert "<td>&lt;= 0.1</td>" in section


def test_the_record_travels_through_serialization_into_the_results_file() -> None:
    record = EvalRecord.from_dict(_record().to_dict())  # as xdist carries it
    assert record.turn_taking == _record().turn_taking
    entry = _eval_entry(record)
    taken = entry["turn_taking"]
    assert taken["category"] == "pause" and taken["clock"] == "virtual"
    assert taken["metrics"][0]["interval"] == [0.15, 0.85]
    assert taken["budgets"][0]["verdict"] == "failed"
    assert "turn_taking" not in _eval_entry(EvalRecord(nodeid="t.yaml::t", transcript_id="t"))


def test_a_budget_check_is_a_check_of_the_result() -> None:
    check = _record().result.runs[0].turns[0].evaluations[0]  # type: ignore[union-attr]
    assert isinstance(check, EvalResult)
    assert check.key == "turn_taking.budgets.pause_takeover_rate_max"
    assert check.location == "turns.yaml:7" and not check.passed and not check.errored
