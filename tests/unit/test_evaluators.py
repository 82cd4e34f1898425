"""Deterministic evaluators and the Expect -> evaluators builder."""

from __future__ import annotations

import asyncio

import pytest

from pytest_agent_eval import ToolCall, TurnContext
from pytest_agent_eval.evaluators import (
    ContainsEvaluator,
    LatencyEvaluator,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
    build_evaluators,
    evaluate_safely,
)
from pytest_agent_eval.evaluators._tools import is_subsequence
from pytest_agent_eval.models import EvalResult, Expect, ToolCallArgsConfig


def ctx(reply: str = "", calls: list[ToolCall] | None = None, **kw: object) -> TurnContext:
    return TurnContext(user="u", reply=reply, tool_calls=calls or [], history=[], **kw)  # type: ignore[arg-type]


def verdict(evaluator: object, context: TurnContext) -> EvalResult:
    """``await evaluator.evaluate(context)``, from a sync test."""
    return asyncio.run(evaluator.evaluate(context))  # type: ignore[attr-defined]


def test_contains_is_case_insensitive_and_reports_every_failure() -> None:
    ev = ContainsEvaluator(
        any_of=["booked", "CONFIRMED"],
        all_of=["Tomorrow", "10", "pm"],
        matches_any=[r"BK-\d+"],
        matches_all=[r"ref(erence)?", r"\bxyz\b"],
    )
    ok = verdict(ev, ctx("Confirmed for tomorrow at 10 PM, reference BK-12 xyz"))
    assert ok.passed, ok.reasoning
    bad = verdict(ev, ctx("Sorry, nothing for today"))
    assert not bad.passed
    for fragment in (
        "contains none of ['booked', 'CONFIRMED']",
        "is missing ['Tomorrow', '10', 'pm']",
        "matches none of the patterns ['BK-\\d+']",
        "does not match ['ref(erence)?', '\\bxyz\\b']",
        "reply was 'Sorry, nothing for today'",
    ):
        assert fragment in bad.reasoning


def test_heard_target_needs_a_voice_adapter() -> None:
    ev = ContainsEvaluator(any_of=["table"], target="heard")
    assert verdict(ev, ctx("x", heard="book a TABLE")).passed
    missing = verdict(ev, ctx("x"))
    assert not missing.passed and "nothing was heard" in missing.reasoning
    assert missing.errored  # a text adapter did not observe it: not a "no"


def test_latency_budget() -> None:
    ev = LatencyEvaluator(500)
    assert verdict(ev, ctx(latency_s=0.2)).passed
    slow = verdict(ev, ctx(latency_s=0.75))
    assert not slow.passed and "750 ms > max_latency_ms 500" in slow.reasoning
    silent = verdict(ev, ctx())
    assert not silent.passed and not silent.errored  # no reply at all: a real failure
    assert silent.reasoning == "no latency was measured: the agent produced no reply text"
    unmeasured = verdict(ev, ctx("Booked."))
    assert not unmeasured.passed and unmeasured.errored  # the adapter does not measure it
    assert "needs an adapter that measures it" in unmeasured.reasoning


@pytest.mark.parametrize(
    ("wanted", "seen", "expected"),
    [
        (["a", "c"], ["a", "b", "c"], True),
        (["c", "a"], ["a", "b", "c"], False),
        (["a", "a"], ["a", "b"], False),
        (["a", "a"], ["a", "b", "a"], True),
        ([], ["x"], True),
    ],
)
def test_is_subsequence(wanted: list[str], seen: list[str], expected: bool) -> None:
    assert is_subsequence(wanted, seen) is expected


def test_tool_call_include_exclude_order() -> None:
    calls = [ToolCall("lookup", {"q": 1}), ToolCall("book"), ToolCall("notify")]
    assert verdict(
        ToolCallEvaluator(include=["lookup", "notify"], ordered=True), ctx("", calls)
    ).passed
    wrong_order = verdict(
        ToolCallEvaluator(include=["notify", "lookup"], ordered=True), ctx("", calls)
    )
    assert not wrong_order.passed
    assert "not in the order ['notify', 'lookup']" in wrong_order.reasoning
    both = verdict(ToolCallEvaluator(include=["cancel"], exclude=["book"]), ctx("", calls))
    assert "expected tool calls not made: ['cancel']" in both.reasoning
    assert "forbidden tool calls made: ['book']" in both.reasoning
    assert 'saw lookup({"q": 1}), book(), notify()' in both.reasoning


def test_tool_call_args_subset_exact_and_any_call() -> None:
    calls = [
        ToolCall("book", {"time": "9am", "party": 2}),
        ToolCall("book", {"time": "10am", "party": 2, "guest": {"name": "Ana", "vip": True}}),
    ]
    assert verdict(ToolCallArgsEvaluator("book", {"time": "10am"}), ctx("", calls)).passed
    assert verdict(ToolCallArgsEvaluator("book", {"guest": {"name": "Ana"}}), ctx("", calls)).passed
    assert verdict(
        ToolCallArgsEvaluator("book", {"time": "9am", "party": 2}, "exact"), ctx("", calls)
    ).passed
    miss = verdict(ToolCallArgsEvaluator("book", {"time": "10am"}, "exact"), ctx("", calls))
    assert not miss.passed
    assert miss.reasoning.startswith(
        "no call to book has matching arguments (exact): call 1: time: expected '10am', got "
        "'9am'; party: not expected (got 2); call 2: party: not expected (got 2); guest: not "
        "expected (got {'name': 'Ana', 'vip': True}) (saw book("
    )
    absent = verdict(ToolCallArgsEvaluator("cancel", {"id": 1}), ctx("", calls))
    assert "cancel was not called" in absent.reasoning
    blind = verdict(ToolCallArgsEvaluator("book", {"time": "10am"}), ctx("", [ToolCall("book")]))
    assert "arguments were not captured" in blind.reasoning


def test_wrong_tool_arguments_name_each_key_nested_ones_too() -> None:
    # What is wrong, key by key, before the calls seen (which are cut): a mismatch deep in
    # long arguments is never cut off.
    padding = {f"field_{i}": "x" * 40 for i in range(8)}
    call = ToolCall(
        "get_weather",
        {**padding, "city": "paris", "opts": {"unit": "c", "detail": {"lang": "fr"}}},
    )
    wanted = {"city": "Paris", "opts": {"unit": "c", "detail": {"lang": "en", "hourly": True}}}
    result = verdict(ToolCallArgsEvaluator("get_weather", wanted), ctx("", [call]))
    assert result.reasoning.startswith(
        "no call to get_weather has matching arguments (subset): city: expected 'Paris', got "
        "'paris'; opts.detail.lang: expected 'en', got 'fr'; opts.detail.hourly: missing "
        "(expected True) (saw get_weather("
    )
    items = ToolCall("order", {"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 3}]})
    wrong = verdict(
        ToolCallArgsEvaluator("order", {"items": [{"sku": "a", "qty": 1}, {"sku": "b", "qty": 2}]}),
        ctx("", [items]),
    )
    assert "items[1].qty: expected 2, got 3" in wrong.reasoning


def test_build_evaluators_follows_expect() -> None:
    expect = Expect(
        reply_contains_any=["a"],
        tool_calls_include=["t"],
        tool_calls_args=[ToolCallArgsConfig(tool="t", args={"x": 1})],
        heard_contains_all=["b"],
        max_latency_ms=100,
        evaluators=["custom"],
    )
    kinds = [type(e).__name__ for e in build_evaluators(expect)]
    assert kinds == [
        "ContainsEvaluator",
        "ToolCallEvaluator",
        "ToolCallArgsEvaluator",
        "ContainsEvaluator",
        "LatencyEvaluator",
        "str",
    ]
    assert build_evaluators(Expect()) == []


class Boom:
    def evaluate(self, ctx: TurnContext) -> EvalResult:
        raise RuntimeError("kaput")


class SyncBool:
    name = "truthy"

    def evaluate(self, ctx: TurnContext) -> bool:
        return True


class AsyncWrong:
    async def evaluate(self, ctx: TurnContext) -> str:
        return "yes"


def test_evaluate_safely_records_errors_and_accepts_sync_and_bool() -> None:
    boom = asyncio.run(evaluate_safely(Boom(), ctx()))
    assert (boom.passed, boom.errored, boom.name) == (False, True, "Boom")
    assert "evaluator raised RuntimeError: kaput" in boom.reasoning
    ok = asyncio.run(evaluate_safely(SyncBool(), ctx()))
    assert (ok.passed, ok.name) == (True, "truthy")
    wrong = asyncio.run(evaluate_safely(AsyncWrong(), ctx()))
    assert wrong.errored and "returned str, expected EvalResult" in wrong.reasoning
    assert ok.traceback is None and wrong.traceback is None


def test_an_evaluator_that_raises_keeps_its_traceback_in_the_record() -> None:
    """Issue 33: the errored verdict says where the evaluator broke (file, line, function),
    and the traceback survives the record's trip through the serializer (xdist, results)."""
    boom = asyncio.run(evaluate_safely(Boom(), ctx()))
    assert boom.traceback is not None
    assert boom.traceback.startswith("Traceback (most recent call last):")
    assert 'raise RuntimeError("kaput")' in boom.traceback
    assert "in evaluate" in boom.traceback and "test_evaluators.py" in boom.traceback
    assert boom.traceback.endswith("RuntimeError: kaput")
    assert EvalResult.from_dict(boom.to_dict()).traceback == boom.traceback
