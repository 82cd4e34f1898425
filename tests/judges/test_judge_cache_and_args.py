"""The verdict cache, ToolCallArgsJudgeEvaluator, and the judge over the real OpenAI wire."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from types import ModuleType

from judge_models import JudgeCall, ScriptedJudge
from pydantic_ai.exceptions import ModelHTTPError

from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval.evaluators.judge import JudgeEvaluator, ToolCallArgsJudgeEvaluator
from pytest_agent_eval.models import EvalResult, ToolCall, TurnContext

RUBRIC = "The reply must give a booking reference number."


def ctx(reply: str = "Booked, BK-1.", calls: list[ToolCall] | None = None) -> TurnContext:
    return TurnContext(
        user="Book Friday 10am",
        reply=reply,
        tool_calls=calls if calls is not None else [],
        history=[{"role": "user", "content": "Book Friday 10am"}],
    )


def run(evaluator: object, context: TurnContext) -> EvalResult:
    return asyncio.run(evaluator.evaluate(context))  # type: ignore[attr-defined]


def cache_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.json"))


# ------------------------------------------------------------------------------------------
# Verdict cache
# ------------------------------------------------------------------------------------------


def test_cache_reuses_verdicts_for_an_identical_conversation(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda c: (True, "has a reference"))
    settings = JudgeSettings(cache_dir=tmp_path / "cache")
    first = run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx())
    second = run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx())
    assert len(judge.calls) == 1
    assert first.usage is not None
    assert (second.passed, second.errored) == (True, False)
    assert second.reasoning == "has a reference (cached verdict)"
    assert second.usage is None  # nothing was spent
    (entry,) = cache_files(tmp_path / "cache")
    data = json.loads(entry.read_text())
    assert data["passed"] is True
    assert data["model"] == "function:scripted-judge"
    assert not list((tmp_path / "cache").rglob(".tmp-*"))


def test_cache_key_covers_reply_rubric_model_and_tool_calls(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda c: (True, "ok"))
    settings = JudgeSettings(cache_dir=tmp_path)
    run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx())
    run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx(reply="Booked, BK-2."))
    run(JudgeEvaluator(RUBRIC + " Be polite.", judge.model, settings=settings), ctx())
    run(
        JudgeEvaluator(RUBRIC, judge.model, settings=settings),
        ctx(calls=[ToolCall("book", {"t": "10am"})]),
    )
    other = ScriptedJudge(lambda c: (True, "ok"))
    other_model = other.model
    other_model._model_name = "other-judge"  # type: ignore[attr-defined]
    run(JudgeEvaluator(RUBRIC, other_model, settings=settings), ctx())
    assert len(judge.calls) == 4
    assert len(other.calls) == 1
    assert len(cache_files(tmp_path)) == 5


def test_cache_never_stores_errors(tmp_path: Path) -> None:
    outcomes: list[object] = [ModelHTTPError(500, "m", body="down"), (False, "no reference")]

    def script(call: JudgeCall) -> tuple[bool, str]:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome  # type: ignore[return-value]

    judge = ScriptedJudge(script)
    settings = JudgeSettings(cache_dir=tmp_path, retries=0)
    assert run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx()).errored
    assert cache_files(tmp_path) == []
    again = run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx())
    assert (again.passed, again.errored) == (False, False)
    assert len(judge.calls) == 2
    assert len(cache_files(tmp_path)) == 1


def test_corrupt_cache_entry_is_a_miss(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda c: (True, "ok"))
    settings = JudgeSettings(cache_dir=tmp_path)
    run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx())
    (entry,) = cache_files(tmp_path)
    entry.write_text("{not json")
    assert run(JudgeEvaluator(RUBRIC, judge.model, settings=settings), ctx()).reasoning == "ok"
    assert len(judge.calls) == 2
    assert json.loads(entry.read_text())["passed"] is True


def test_no_cache_dir_means_no_cache(tmp_path: Path) -> None:
    judge = ScriptedJudge(lambda c: (True, "ok"))
    for _ in range(2):
        run(JudgeEvaluator(RUBRIC, judge.model, settings=JudgeSettings()), ctx())
    assert len(judge.calls) == 2


# ------------------------------------------------------------------------------------------
# ToolCallArgsJudgeEvaluator
# ------------------------------------------------------------------------------------------


def args_judge(call: JudgeCall) -> tuple[bool, str]:
    start = call.user_prompt.index("<tool_arguments_")
    args = json.loads(
        call.user_prompt[
            call.user_prompt.index("\n", start) + 1 : call.user_prompt.index("\n</tool_arguments_")
        ]
    )
    hour = int(args["time"].rstrip("apm"))
    return 9 <= hour <= 17, f"time {args['time']}"


def test_args_judge_passes_when_any_call_passes() -> None:
    judge = ScriptedJudge(args_judge)
    calls = [
        ToolCall("lookup", {"q": "x"}),
        ToolCall("book_slot", {"time": "23"}),
        ToolCall("book_slot", {"time": "10"}),
    ]
    evaluator = ToolCallArgsJudgeEvaluator("book_slot", "Time within business hours.", judge.model)
    result = run(evaluator, ctx(calls=calls))
    assert (result.passed, result.errored) == (True, False)
    assert result.reasoning == "book_slot call 2/2: time 10"
    assert result.name == "tool_args_judge[book_slot]"
    assert len(judge.calls) == 2
    assert result.usage is not None
    assert result.usage.requests == 2
    assert "Time within business hours." in judge.calls[0].instructions
    assert "[user] Book Friday 10am" in judge.calls[0].user_prompt


def test_args_judge_fails_with_every_reason() -> None:
    judge = ScriptedJudge(args_judge)
    evaluator = ToolCallArgsJudgeEvaluator("book_slot", "Business hours.", judge.model)
    result = run(
        evaluator, ctx(calls=[ToolCall("book_slot", {"time": "23"}), ToolCall("book_slot")])
    )
    assert (result.passed, result.errored) == (False, False)
    assert "book_slot call 1/2: time 23" in result.reasoning
    assert "book_slot call 2/2: arguments were not captured" in result.reasoning


def test_args_judge_without_a_call_to_the_tool_fails_clearly() -> None:
    judge = ScriptedJudge(args_judge)
    evaluator = ToolCallArgsJudgeEvaluator("book_slot", "Business hours.", judge.model)
    result = run(evaluator, ctx(calls=[ToolCall("lookup", {"q": "x"})]))
    assert not result.passed
    assert not result.errored
    assert result.reasoning == "no call to 'book_slot' in this turn (calls made: lookup)"
    assert run(evaluator, ctx(calls=[])).reasoning.endswith("(calls made: none)")
    assert judge.calls == []


def test_args_judge_errored_when_the_judge_fails(no_sleep) -> None:
    def down(call: JudgeCall) -> tuple[bool, str]:
        raise ModelHTTPError(503, "m", body="down")

    judge = ScriptedJudge(down)
    evaluator = ToolCallArgsJudgeEvaluator(
        "book_slot",
        "Business hours.",
        judge.model,
        settings=JudgeSettings(retries=1),
        sleep=no_sleep,
    )
    result = run(evaluator, ctx(calls=[ToolCall("book_slot", {"time": "10"})]))
    assert (result.passed, result.errored) == (False, True)
    assert "judge errored" in result.reasoning
    assert len(judge.calls) == 2


# ------------------------------------------------------------------------------------------
# Over the wire: pydantic-ai's OpenAI model against a loopback Chat Completions server
# ------------------------------------------------------------------------------------------


def verdict_completion(loopback: ModuleType, body: dict, passed: bool, reasoning: str) -> dict:
    tool = body["tools"][0]["function"]["name"]
    return loopback.tool_call_completion([(tool, {"passed": passed, "reasoning": reasoning}, "c1")])


def openai_judge_model(base_url: str) -> object:
    from openai import AsyncOpenAI
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    client = AsyncOpenAI(base_url=base_url, api_key="loopback", max_retries=0)
    return OpenAIChatModel("local-judge", provider=OpenAIProvider(openai_client=client))


def test_judge_over_openai_wire_retries_429_and_drops_rejected_temperature(
    loopback: ModuleType, no_sleep
) -> None:
    script = ["429", "temperature", "ok"]

    def respond(body: dict) -> object:
        step = script.pop(0)
        if step == "429":
            return 429, loopback.error_body(
                "slow down", type_="rate_limit_error", code="rate_limit_exceeded"
            )
        if step == "temperature":
            assert "temperature" in body
            return 400, loopback.error_body(
                "Unsupported parameter: 'temperature' is not supported with this model.",
                code="unsupported_parameter",
            )
        assert "temperature" not in body
        return verdict_completion(loopback, body, True, "reference given")

    with loopback.ChatServer(respond) as server:
        evaluator = JudgeEvaluator(
            RUBRIC,
            openai_judge_model(server.base_url),
            settings=JudgeSettings(retries=1),
            sleep=no_sleep,
        )
        result = run(evaluator, ctx())
    assert (result.passed, result.errored, result.reasoning) == (True, False, "reference given")
    assert len(server.requests) == 3
    assert len(no_sleep.delays) == 1
    assert result.usage is not None
    assert result.usage.input_tokens == 13
    system = server.requests[-1]["messages"][0]
    assert system["role"] == "system"
    assert RUBRIC in system["content"]
    assert "Booked, BK-1." in server.requests[-1]["messages"][-1]["content"]


def test_judge_over_openai_wire_errors_after_repeated_5xx(loopback: ModuleType, no_sleep) -> None:
    with loopback.ChatServer(
        lambda body: (502, loopback.error_body("bad gateway", type_="server_error"))
    ) as server:
        evaluator = JudgeEvaluator(
            RUBRIC,
            openai_judge_model(server.base_url),
            settings=JudgeSettings(retries=2),
            sleep=no_sleep,
        )
        result = run(evaluator, ctx())
    assert (result.passed, result.errored) == (False, True)
    assert "502" in result.reasoning
    assert "3 attempts" in result.reasoning
    assert len(server.requests) == 3
