"""A tool call an interruption stopped before it returned: the ``cancelled`` outcome (issue 23).

The LiveKit barge-in test (tests/livekit/test_livekit_barge_in.py) shows it recorded on a real
AgentSession; these pin the record, the check and the YAML key without a session.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pytest_agent_eval import ToolCall, TurnContext
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.evaluators._tool_outcome import ToolOutcomeEvaluator
from pytest_agent_eval.models import ToolCallOutcomeConfig


def _ctx(*calls: ToolCall) -> TurnContext:
    return TurnContext(user="hi", reply="", tool_calls=list(calls), history=[])


def test_a_cancelled_call_reads_cancelled_never_pending_ok_or_error() -> None:
    assert ToolCall("x", done=False, cancelled=True).outcome == "cancelled"
    # Pipecat records a cancelled call as a failure with "cancelled" as its error.
    assert ToolCall("x", is_error=True, error="cancelled", cancelled=True).outcome == "cancelled"
    assert ToolCall("x", output="", cancelled=True).outcome == "cancelled"
    assert ToolCall("x", done=False).outcome == "pending"  # still running: not cancelled


def test_the_cancellation_survives_records_and_pickling() -> None:
    call = ToolCall("lookup", {}, call_id="c1", done=False, cancelled=True)
    assert call.to_dict()["cancelled"] is True
    again = ToolCall.from_dict(call.to_dict())
    assert again.outcome == "cancelled" and again.call_id == "c1"
    assert pickle.loads(pickle.dumps(call)).cancelled is True
    assert ToolCall.from_dict({"name": "old", "done": True}).outcome == "ok"  # earlier records


def test_status_cancelled_passes_on_a_cancelled_call_and_ok_fails_naming_it() -> None:
    ctx = _ctx(ToolCall("lookup", done=False, cancelled=True))
    passed = ToolOutcomeEvaluator("lookup", "cancelled")._check(ctx)
    assert passed.passed, passed.reasoning
    assert (
        passed.reasoning == "lookup was cancelled before it returned (an interruption stopped it)"
    )
    ok = ToolOutcomeEvaluator("lookup", "ok", ["ready"])._check(ctx)
    assert not ok.passed and not ok.errored
    assert ok.reasoning == (
        "lookup was cancelled before it returned (an interruption stopped it): expected it to "
        "return; it gave nothing back (it was cancelled)"
    )


def test_status_cancelled_fails_on_a_call_still_running_or_one_that_returned() -> None:
    for call, how in (
        (ToolCall("lookup", done=False), "was still running when the turn ended"),
        (ToolCall("lookup", output="ready", done=True), "returned 'ready'"),
    ):
        result = ToolOutcomeEvaluator("lookup", "cancelled")._check(_ctx(call))
        assert not result.passed and not result.errored
        assert result.reasoning == f"lookup {how}: expected it to be cancelled"


def test_the_yaml_key_takes_cancelled_and_names_it_for_a_wrong_word(tmp_path: Path) -> None:
    script = load_transcript_text(
        "id: t\nturns:\n  - user: hi\n    expect:\n      tool_calls_outcome:\n"
        "        - {tool: lookup, status: cancelled}\n",
        path=tmp_path / "t.yaml",
    )
    (entry,) = script.turns[0].expect.tool_calls_outcome
    assert entry.status == "cancelled"
    with pytest.raises(TranscriptError, match="cancelled"):
        load_transcript_text(
            "id: t\nturns:\n  - user: hi\n    expect:\n      tool_calls_outcome:\n"
            "        - {tool: lookup, status: stopped}\n",
            path=tmp_path / "t.yaml",
        )
    with pytest.raises(ValueError, match="'cancelled' \\(an interruption stopped it\\)"):
        ToolCallOutcomeConfig("lookup", status="stopped")  # type: ignore[arg-type]
