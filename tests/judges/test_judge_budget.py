"""The judge owns its retry budget over the real OpenAI wire: SDK retries off, Retry-After
honoured up to the timeout, "rate limited" said when that is why, long input cut and said so,
and judges built in Python use the session's judge_model."""

from __future__ import annotations

import asyncio
import textwrap
from types import ModuleType

import pytest

from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval.evaluators.judge import JudgeEvaluator
from pytest_agent_eval.models import EvalResult, ToolCall, TurnContext

RUBRIC = "The reply must give a booking reference number."


def _chat_prefix() -> str:
    """The model-id prefix of OpenAI Chat Completions: ``openai-chat`` in pydantic-ai 2.x
    (where ``openai`` means the Responses API), ``openai`` in 1.x."""
    from pydantic_ai.models import infer_model

    try:
        infer_model("openai-chat:probe")
    except ValueError:
        return "openai"
    except Exception:  # a missing key: the prefix itself is known
        return "openai-chat"
    return "openai-chat"


CHAT = _chat_prefix()


def ctx(reply: str = "Booked, BK-1.", calls: list[ToolCall] | None = None) -> TurnContext:
    return TurnContext(
        user="Book Friday 10am",
        reply=reply,
        tool_calls=calls or [],
        history=[{"role": "user", "content": "Book Friday 10am"}],
    )


def run(evaluator: JudgeEvaluator, context: TurnContext) -> EvalResult:
    return asyncio.run(evaluator.evaluate(context))


def rate_limited(loopback: ModuleType, retry_after: float | None = None) -> object:
    headers = {"Retry-After": f"{retry_after:g}"} if retry_after is not None else {}
    body = loopback.error_body("slow down", type_="rate_limit_error", code="rate_limit_exceeded")
    return 429, body, headers


def verdict(loopback: ModuleType, body: dict, passed: bool, reasoning: str) -> dict:
    tool = body["tools"][0]["function"]["name"]
    return loopback.tool_call_completion([(tool, {"passed": passed, "reasoning": reasoning}, "c1")])


@pytest.fixture
def openai_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    monkeypatch.setenv("OPENAI_API_KEY", "loopback-key")
    return monkeypatch


def test_two_retries_mean_three_http_requests_not_nine(
    loopback: ModuleType, no_sleep, openai_env: pytest.MonkeyPatch
) -> None:
    # A judge model given by id: pydantic-ai builds the OpenAI client, whose SDK would retry
    # each 429 twice by itself (9 requests for retries=2 before the judge owned the budget).
    with loopback.ChatServer(lambda body: rate_limited(loopback)) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        evaluator = JudgeEvaluator(
            RUBRIC, f"{CHAT}:loopback-judge", settings=JudgeSettings(retries=2), sleep=no_sleep
        )
        result = run(evaluator, ctx())
    assert len(server.requests) == 3
    assert (result.passed, result.errored) == (False, True)
    assert "rate limited" in result.reasoning
    assert "3 attempts" in result.reasoning
    assert len(no_sleep.delays) == 2


def test_retry_after_is_honoured_up_to_the_timeout(
    loopback: ModuleType, no_sleep, openai_env: pytest.MonkeyPatch
) -> None:
    script = [rate_limited(loopback, 25), "ok"]

    def respond(body: dict) -> object:
        step = script.pop(0)
        return verdict(loopback, body, True, "has BK-1") if step == "ok" else step

    with loopback.ChatServer(respond) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        evaluator = JudgeEvaluator(
            RUBRIC,
            f"{CHAT}:loopback-judge",
            # 25 s is longer than the backoff cap (20 s) but within the timeout: waited in full.
            settings=JudgeSettings(retries=2, timeout_s=30),
            sleep=no_sleep,
        )
        result = run(evaluator, ctx())
    assert (result.passed, result.errored) == (True, False)
    assert no_sleep.delays == [25]
    assert len(server.requests) == 2


def test_retry_after_longer_than_the_timeout_gives_up_saying_rate_limited(
    loopback: ModuleType, no_sleep, openai_env: pytest.MonkeyPatch
) -> None:
    with loopback.ChatServer(lambda body: rate_limited(loopback, 120)) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        evaluator = JudgeEvaluator(
            RUBRIC,
            f"{CHAT}:loopback-judge",
            settings=JudgeSettings(retries=3, timeout_s=10),
            sleep=no_sleep,
        )
        result = run(evaluator, ctx())
    assert len(server.requests) == 1
    assert no_sleep.delays == []
    assert result.errored
    assert "rate limited, asked to wait 120s (more than timeout=10s)" in result.reasoning
    assert "no verdict within timeout" not in result.reasoning


def test_a_long_reply_is_cut_for_the_judge_and_the_verdict_says_so(
    loopback: ModuleType, no_sleep, openai_env: pytest.MonkeyPatch
) -> None:
    reply = "Booked, BK-1. " + "x" * 1_000_000
    with loopback.ChatServer(lambda body: verdict(loopback, body, True, "has BK-1")) as server:
        openai_env.setenv("OPENAI_BASE_URL", server.base_url)
        evaluator = JudgeEvaluator(
            RUBRIC, f"{CHAT}:loopback-judge", settings=JudgeSettings(max_chars=5000)
        )
        result = run(evaluator, ctx(reply=reply))
    sent = server.requests[0]["messages"][-1]["content"]
    assert len(sent) < 10_000
    assert "more characters)" in sent
    assert result.passed
    assert "the judge saw the reply (1,000,014 -> 5,000 characters), cut to fit" in result.reasoning


def test_python_judges_use_judge_model_from_the_config(
    loopback: ModuleType, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EVAL_LIVE", raising=False)
    with loopback.ChatServer(lambda body: verdict(loopback, body, True, "has BK-1")) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "loopback-key")
        pytester.makepyprojecttoml(
            f'[tool.agent_eval]\njudge_model = "{CHAT}:configured-judge"\n'
            f'model = "{CHAT}:not-this-one"\n'
        )
        pytester.makepyfile(
            test_python_judge=textwrap.dedent(
                """
                from pytest_agent_eval import Expect, JudgeEvaluator, Turn

                def agent(history):
                    return "Booked, BK-1."

                def test_judged(agent_eval):
                    turn = Turn("Book it", expect=Expect(evaluators=[JudgeEvaluator("ref given")]))
                    agent_eval.run_sync(agent=agent, turns=[turn]).assert_threshold()
                """
            )
        )
        result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert [r["model"] for r in server.requests] == ["configured-judge"]
