"""Evaluators as users of the earlier package (0.3.0) import, build and await them."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import pkgutil
from dataclasses import dataclass

import pytest

import pytest_agent_eval
from pytest_agent_eval import (
    ContainsEvaluator,
    EvalResult,
    Evaluator,
    ToolCall,
    ToolCallArgsEvaluator,
    ToolCallEvaluator,
    TurnContext,
)
from pytest_agent_eval.evaluators import evaluate_safely


def ctx(reply: str, calls: list[str] | None = None) -> TurnContext:
    return TurnContext("Book me in", reply, [ToolCall(c) for c in calls or []], [])


def verdict(evaluator: object, context: TurnContext) -> EvalResult:
    return asyncio.run(evaluator.evaluate(context))  # type: ignore[attr-defined]


def test_the_earlier_modules_offer_the_classes_users_imported() -> None:
    from pytest_agent_eval.evaluators import EvalResult as FromEvaluators
    from pytest_agent_eval.evaluators import ToolCall as ToolCallFromEvaluators
    from pytest_agent_eval.evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator

    assert FromEvaluators is EvalResult and ToolCallFromEvaluators is ToolCall
    assert JudgeEvaluator is pytest_agent_eval.JudgeEvaluator
    assert ToolCallArgsJudgeEvaluator is pytest_agent_eval.ToolCallArgsJudgeEvaluator
    # The earlier package's other evaluator modules are old paths now (issue 33): they import,
    # each name with a DeprecationWarning naming pytest_agent_eval.evaluators.
    earlier = {
        ("base", "Evaluator"): Evaluator,
        ("contains", "ContainsEvaluator"): ContainsEvaluator,
        ("tool_call", "ToolCallEvaluator"): ToolCallEvaluator,
        ("tool_call", "ToolCallArgsEvaluator"): ToolCallArgsEvaluator,
    }
    for (module, name), new in earlier.items():
        imported = importlib.import_module(f"pytest_agent_eval.evaluators.{module}")
        with pytest.warns(
            DeprecationWarning, match=r"import it from pytest_agent_eval\.evaluators$"
        ):
            value = getattr(imported, name)
        assert value is new, f"evaluators.{module}.{name}"
    assert Evaluator is pytest_agent_eval.Evaluator


def _evaluator_classes() -> list[type]:
    """Every class with an ``evaluate`` method defined in our evaluators and expectations."""
    found: dict[str, type] = {}
    for package in ("pytest_agent_eval.evaluators", "pytest_agent_eval._expectations"):
        module = importlib.import_module(package)
        names = [package] + [f"{package}.{m.name}" for m in pkgutil.iter_modules(module.__path__)]
        for name in names:
            for value in vars(importlib.import_module(name)).values():
                if (
                    inspect.isclass(value)
                    and value.__module__.startswith("pytest_agent_eval")
                    and callable(getattr(value, "evaluate", None))
                    and value is not Evaluator
                ):
                    found[f"{value.__module__}.{value.__qualname__}"] = value
    return list(found.values())


def test_every_evaluator_we_ship_is_awaited() -> None:
    classes = _evaluator_classes()
    names = {c.__name__ for c in classes}
    assert {"ContainsEvaluator", "ToolCallEvaluator", "JudgeEvaluator"} <= names
    sync = [c.__name__ for c in classes if not inspect.iscoroutinefunction(c.evaluate)]
    assert sync == [], f"evaluate must be async def (as in the earlier package): {sync}"


def test_await_contains_evaluator() -> None:
    result = verdict(ContainsEvaluator(any_of=["confirmed", "booked"]), ctx("Booking CONFIRMED"))
    assert isinstance(result, EvalResult) and result.passed


def test_case_sensitive_matching_when_asked() -> None:
    strict = ContainsEvaluator(all_of=["Booking"], case_sensitive=True)
    assert verdict(strict, ctx("Booking confirmed")).passed
    missed = verdict(strict, ctx("booking confirmed"))
    assert not missed.passed and "missing ['Booking']" in missed.reasoning
    assert verdict(ContainsEvaluator(all_of=["Booking"]), ctx("booking confirmed")).passed
    regex = ContainsEvaluator(matches_any=[r"BK-\d+"], case_sensitive=True)
    assert verdict(regex, ctx("ref BK-12")).passed
    assert not verdict(regex, ctx("ref bk-12")).passed
    assert not verdict(ContainsEvaluator(any_of=["OK"], case_sensitive=True), ctx("ok")).passed


def test_case_sensitive_is_the_fifth_position_as_before() -> None:
    assert ContainsEvaluator([], ["Booking"], [], [], True).case_sensitive is True


def test_tool_call_evaluator_takes_the_earlier_keywords() -> None:
    ev = ToolCallEvaluator(must_include=["create_booking"], must_exclude=["cancel_booking"])
    assert (ev.must_include, ev.must_exclude) == (["create_booking"], ["cancel_booking"])
    assert (ev.include, ev.exclude) == (["create_booking"], ["cancel_booking"])
    assert verdict(ev, ctx("ok", ["create_booking"])).passed
    forbidden = verdict(ev, ctx("ok", ["create_booking", "cancel_booking"]))
    assert not forbidden.passed and "forbidden tool calls made: ['cancel_booking']" in (
        forbidden.reasoning
    )
    ordered = ToolCallEvaluator(must_include=["auth", "fetch"], ordered=True)
    assert verdict(ordered, ctx("ok", ["auth", "x", "fetch"])).passed
    assert not verdict(ordered, ctx("ok", ["fetch", "auth"])).passed
    # positional, in the earlier order: must_include, must_exclude, ordered
    positional = ToolCallEvaluator(["a"], ["b"], True)
    assert (positional.include, positional.exclude, positional.ordered) == (["a"], ["b"], True)


def test_one_list_under_both_names_is_refused() -> None:
    with pytest.raises(TypeError, match="both include= and must_include="):
        ToolCallEvaluator(include=["a"], must_include=["b"])
    with pytest.raises(TypeError, match="not one string"):
        ToolCallEvaluator(must_include="create_booking")  # type: ignore[arg-type]


def test_a_user_evaluator_written_to_the_earlier_protocol_runs() -> None:
    @dataclass
    class Tone:
        word: str

        async def evaluate(self, ctx: TurnContext) -> EvalResult:
            ok = self.word in ctx.reply.lower()
            return EvalResult(passed=ok, reasoning="" if ok else "Expected tone not found")

    assert isinstance(Tone("please"), Evaluator)
    result = asyncio.run(evaluate_safely(Tone("please"), ctx("Yes, please")))
    assert result.passed and result.name == "Tone"


def test_a_subclass_overriding_evaluate_is_called_by_the_runner() -> None:
    class Lenient(ContainsEvaluator):
        async def evaluate(self, ctx: TurnContext) -> EvalResult:
            return EvalResult(True, "overridden")

    result = asyncio.run(evaluate_safely(Lenient(any_of=["absent"]), ctx("nothing")))
    assert result.passed and result.reasoning == "overridden"
    plain = asyncio.run(evaluate_safely(ContainsEvaluator(any_of=["absent"]), ctx("nothing")))
    assert not plain.passed


def test_a_bad_pattern_is_a_value_error_as_before_and_still_a_re_error() -> None:
    import re

    with pytest.raises(ValueError, match="missing \\), unterminated subpattern") as info:
        ContainsEvaluator(matches_any=["("])
    assert isinstance(info.value, re.error) and info.value.pattern == "("


def test_a_python_api_judge_without_settings_takes_the_configured_ones() -> None:
    from pytest_agent_eval import Expect, JudgeEvaluator
    from pytest_agent_eval._config import JudgeSettings
    from pytest_agent_eval._expectations import build_evaluators

    mine = JudgeEvaluator("Confirms the booking")
    pinned = JudgeEvaluator("Polite", settings=JudgeSettings(model="test", retries=0))
    configured = JudgeSettings(model="anthropic:claude-sonnet-4-5", retries=4, timeout_s=9.0)
    built = build_evaluators(Expect(evaluators=[mine, pinned, "custom"]), configured)

    assert built[0] is not mine and built[0].model_id == "anthropic:claude-sonnet-4-5"
    assert (built[0].judge_settings.retries, built[0].judge_settings.timeout_s) == (4, 9.0)
    assert mine.settings is None  # the user's object is untouched
    assert built[1] is pinned and built[2] == "custom"
    # its own retries= still wins over the configured ones
    own = build_evaluators(Expect(evaluators=[JudgeEvaluator("r", retries=1)]), configured)[0]
    assert own.judge_settings.retries == 1
