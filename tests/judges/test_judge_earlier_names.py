"""The judges take ``retries=`` and ``timeout=`` as the earlier package's did (positionally too),
and those win over the settings; real pydantic-ai FunctionModel judges, no network."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from judge_models import JudgeCall, ScriptedJudge
from pydantic_ai.exceptions import ModelHTTPError

from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval.evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator
from pytest_agent_eval.models import ToolCall, TurnContext

CTX = TurnContext(
    "Book Friday", "Booked.", [ToolCall("book_slot", {"day": "friday"})], [{"role": "user"}]
)


def _down(call: JudgeCall) -> tuple[bool, str]:
    raise ModelHTTPError(503, "scripted-judge", body={"error": "busy"})


@pytest.mark.parametrize("retries", [0, 3])
def test_retries_sets_the_number_of_attempts(retries: int, no_sleep) -> None:
    judge = ScriptedJudge(_down)
    # settings say 1 retry; the judge's own retries= wins
    evaluator = JudgeEvaluator(
        "Confirms", judge.model, retries=retries, settings=JudgeSettings(retries=1), sleep=no_sleep
    )
    result = asyncio.run(evaluator.evaluate(CTX))
    assert result.errored and not result.passed
    assert len(judge.calls) == retries + 1


def test_timeout_bounds_each_attempt(no_sleep) -> None:
    async def never(call: JudgeCall) -> tuple[bool, str]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    judge = ScriptedJudge(never)
    evaluator = JudgeEvaluator("Confirms", judge.model, 0, 0.05, sleep=no_sleep)
    result = asyncio.run(evaluator.evaluate(CTX))
    assert result.errored
    assert "no verdict within timeout=0.05s" in result.reasoning


def test_tool_args_judge_takes_the_same_arguments(no_sleep) -> None:
    judge = ScriptedJudge(_down)
    evaluator = ToolCallArgsJudgeEvaluator(
        "book_slot", "Friday only", judge.model, retries=2, timeout=5, sleep=no_sleep
    )
    assert (evaluator.judge_settings.retries, evaluator.judge_settings.timeout_s) == (2, 5.0)
    result = asyncio.run(evaluator.evaluate(CTX))
    assert result.errored
    assert len(judge.calls) == 3


def test_positions_follow_the_earlier_signature() -> None:
    judge = JudgeEvaluator("r", "openai:gpt-4o", 4, 12.5)
    assert (judge.rubric, judge.model, judge.retries, judge.timeout) == (
        "r",
        "openai:gpt-4o",
        4,
        12.5,
    )
    args = ToolCallArgsJudgeEvaluator("t", "r", None, 1, 2.0)
    assert (args.tool, args.rubric, args.model, args.retries, args.timeout) == (
        "t",
        "r",
        None,
        1,
        2.0,
    )


def test_without_them_the_settings_decide() -> None:
    judge = JudgeEvaluator("r", settings=JudgeSettings(retries=5, timeout_s=9.0))
    assert (judge.judge_settings.retries, judge.judge_settings.timeout_s) == (5, 9.0)
    assert (
        JudgeEvaluator("r").judge_settings.retries,
        JudgeEvaluator("r").judge_settings.timeout_s,
    ) == (2, 30.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"retries": -1}, "retries must be a whole number >= 0, got -1"),
        ({"retries": 1.5}, "retries must be a whole number >= 0, got 1.5"),
        ({"timeout": 0}, "timeout must be a number of seconds > 0, got 0"),
        ({"timeout": "30"}, "timeout must be a number of seconds > 0, got '30'"),
    ],
)
def test_bad_values_fail_at_construction(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(".", r"\.")):
        JudgeEvaluator("r", **kwargs)  # type: ignore[arg-type]


def test_evaluate_is_a_coroutine_function() -> None:
    assert inspect.iscoroutinefunction(JudgeEvaluator.evaluate)
    assert inspect.iscoroutinefunction(ToolCallArgsJudgeEvaluator.evaluate)
