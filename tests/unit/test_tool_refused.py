"""A tool call the framework refused before running anything: the ``refused`` outcome (issue 32).

A model may name a function it was not offered at that moment (a Pipecat Flows node without it)
or one the agent does not have; the framework answers it with an error and runs nothing. That is
not a call with those arguments: `tool_calls_args`, `tool_calls_include` and
`tool_calls_ordered` do not count it, and say it was refused. The Pipecat test
(tests/pipecat/test_pipecat_tool_truth.py) shows it recorded on a real pipeline; these pin the
record, the checks and the YAML key without one.
"""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from pytest_agent_eval import ToolCall, TurnContext
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.evaluators import ToolCallArgsEvaluator, ToolCallEvaluator
from pytest_agent_eval.evaluators._tool_calls import ToolOrderEvaluator
from pytest_agent_eval.evaluators._tool_outcome import ToolOutcomeEvaluator

WHY = "The function `book` is not currently available."


def _refused(name: str = "book", **args: object) -> ToolCall:
    return ToolCall(name, dict(args), output=WHY, is_error=True, error=WHY, done=True, refused=True)


def _ctx(*calls: ToolCall) -> TurnContext:
    return TurnContext(user="hi", reply="", tool_calls=list(calls), history=[])


def test_a_refused_call_reads_refused_and_survives_records_and_pickling() -> None:
    call = _refused(party=2)
    assert call.outcome == "refused"
    assert call.to_dict()["refused"] is True
    assert ToolCall.from_dict(call.to_dict()).outcome == "refused"
    assert pickle.loads(pickle.dumps(call)).refused is True
    assert ToolCall.from_dict({"name": "old", "is_error": True}).outcome == "error"


def test_tool_calls_args_does_not_count_a_refused_call_and_says_why() -> None:
    result = ToolCallArgsEvaluator("book", {"party": 2})._check(_ctx(_refused(party=2)))
    assert not result.passed and not result.errored
    assert "book was not called" in result.reasoning
    assert "the framework refused the call to book" in result.reasoning
    assert "not currently available" in result.reasoning
    # A call made beside the refused one still counts.
    made = ToolCall("book", {"party": 2}, output="ok", done=True)
    assert ToolCallArgsEvaluator("book", {"party": 2})._check(_ctx(_refused(party=2), made)).passed


def test_include_and_order_do_not_count_a_refused_call() -> None:
    ctx = _ctx(ToolCall("greet", {}, done=True), _refused())
    include = ToolCallEvaluator(include=["book"])._check(ctx)
    assert not include.passed
    assert "expected tool calls not made: ['book']" in include.reasoning
    assert "the framework refused the call to book" in include.reasoning
    assert "(saw greet(), book() [refused])" in include.reasoning
    order = ToolOrderEvaluator(["greet", "book"])._check(ctx)
    assert not order.passed and "refused" in order.reasoning
    # A forbidden tool the agent tried to call fails tool_calls_exclude even though the
    # framework refused to run it: the key checks what the agent decided.
    exclude = ToolCallEvaluator(exclude=["book"])._check(ctx)
    assert not exclude.passed
    assert "forbidden tool calls attempted: ['book']" in exclude.reasoning
    assert "the framework refused the call to book" in exclude.reasoning
    assert ToolCallEvaluator(exclude=["cancel"])._check(ctx).passed


def test_tool_calls_outcome_status_refused_and_error_are_told_apart() -> None:
    ctx = _ctx(_refused())
    refused = ToolOutcomeEvaluator("book", "refused", ["not currently available"])._check(ctx)
    assert refused.passed, refused.reasoning
    assert refused.reasoning.startswith("book was refused by the framework before it ran")
    failed = ToolOutcomeEvaluator("book", "error")._check(ctx)
    assert not failed.passed and "expected it to fail" in failed.reasoning


def test_the_yaml_key_takes_refused(tmp_path: Path) -> None:
    script = load_transcript_text(
        "id: t\nturns:\n  - user: hi\n    expect:\n      tool_calls_outcome:\n"
        "        - {tool: book, status: refused}\n",
        path=tmp_path / "t.yaml",
    )
    (entry,) = script.turns[0].expect.tool_calls_outcome
    assert entry.status == "refused"
    with pytest.raises(TranscriptError, match="refused"):
        load_transcript_text(
            "id: t\nturns:\n  - user: hi\n    expect:\n      tool_calls_outcome:\n"
            "        - {tool: book, status: denied}\n",
            path=tmp_path / "t.yaml",
        )


def test_a_judge_is_told_the_call_was_refused() -> None:
    from pytest_agent_eval.evaluators._judge_prompt import _render_calls

    shown = _render_calls([_refused(party=2)], 10_000, [])
    assert "refused, nothing ran: The function `book` is not currently available." in shown


def test_a_judged_tool_calls_args_does_not_judge_a_refused_call() -> None:
    """No judge is asked about arguments nothing ran with: the check fails saying so."""
    import asyncio

    from pytest_agent_eval.evaluators.judge import ToolCallArgsJudgeEvaluator

    judge = ToolCallArgsJudgeEvaluator("book", "The party is two people.", "test")
    result = asyncio.run(judge.evaluate(_ctx(_refused(party=2))))
    assert not result.passed and not result.errored
    assert "no call to 'book' in this turn (calls made: none)" in result.reasoning
    assert "the framework refused the call to book" in result.reasoning
