"""The failure account printed under a failing eval."""

from __future__ import annotations

from pytest_agent_eval._report._account import format_account, format_score_line
from pytest_agent_eval.models import EvalResult, RunResult, ToolCall, TranscriptResult, TurnResult


def failing_turn(reply: str) -> TurnResult:
    return TurnResult(
        0,
        "Book a table",
        reply=reply,
        tool_calls=[ToolCall("book", {"n": 2}, is_error=True)],
        evaluations=[
            EvalResult(True, "fine", name="tool_calls"),
            EvalResult(False, "reply contains none of ['booked']", name="reply"),
            EvalResult(False, "judge errored: timed out after 30s", name="judge", errored=True),
        ],
    )


def test_account_lists_failed_checks_folds_identical_runs_and_says_errored_once() -> None:
    runs = [
        RunResult(0, [failing_turn("sorry")]),
        RunResult(1, [failing_turn("sorry")]),
        RunResult(2, [failing_turn("no tables")]),
        RunResult(
            3, [TurnResult(0, "Book a table", reply="booked", evaluations=[EvalResult(True)])]
        ),
    ]
    result = TranscriptResult(False, 0.25, 0.8, runs, transcript_id="t", planned_runs=6)
    text = format_account(result)
    lines = text.splitlines()
    assert lines[0] == format_score_line(result)
    assert "early stop: 2 of 6 runs not started" in lines[0]
    assert "  run 2: FAILED (0.00s) same as run 1" in lines
    assert "      reply: 'no tables'" in lines
    assert '      tools: book({"n": 2}) [error]' in lines
    assert "      - reply fail: reply contains none of ['booked']" in lines
    assert "      - judge errored: timed out after 30s" in lines
    assert "fine" not in text  # passing checks stay quiet unless verbose
    assert "  run 4: passed (0.00s)" in lines
    assert "fine" in format_account(result, verbose=True)
