"""YAML judges through the plugin: the llm_eval_judge_model fixture, errors, and the cache."""

from __future__ import annotations

import pytest

CONFTEST = """
import re
from pathlib import Path

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from pydantic_ai.messages import ModelResponse, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from pytest_agent_eval import AgentReply, ToolCall

LOG = Path(__file__).parent / "judge_calls.log"


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        return AgentReply(
            "Booked for Friday, reference BK-7.",
            [ToolCall("book_table", {"day": "friday", "time": "{time}"})],
        )
    return agent


def judge(messages, info):
    with LOG.open("a") as log:
        log.write("call\\n")
    if "{mode}" == "down":
        raise ModelHTTPError(503, "judge", body="overloaded")
    prompt = "\\n".join(
        str(p.content) for m in messages for p in m.parts if isinstance(p, UserPromptPart)
    )
    suffix = re.search(r"tags end in _(\\w+)", info.instructions).group(1)
    if "tool_arguments_" + suffix in prompt:
        passed = '"time": "19:00"' in prompt
    else:
        passed = "BK-" in prompt.split("<agent_reply_" + suffix)[1]
    verdict = {"passed": passed, "reasoning": "fixture judge: " + ("yes" if passed else "no")}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


@pytest.fixture
def llm_eval_judge_model():
    return FunctionModel(judge)
"""

TRANSCRIPT = """
id: judged
turns:
  - user: "Book Friday 19:00"
    expect:
      judge:
        rubric: The reply gives a booking reference.
      tool_calls_args:
        - tool: book_table
          judge:
            rubric: The time is in the evening.
"""


def project(
    pytester: pytest.Pytester, *, time: str = "19:00", mode: str = "ok", extra: str = ""
) -> None:
    pytester.makepyprojecttoml(f'[tool.agent_eval]\nyaml_dirs = ["evals"]\nretries = 0\n{extra}')
    pytester.makeconftest(CONFTEST.replace("{time}", time).replace("{mode}", mode))
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "judged.yaml").write_text(TRANSCRIPT)


def judge_calls(pytester: pytest.Pytester) -> int:
    log = pytester.path / "judge_calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_yaml_judges_use_the_judge_model_fixture(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert judge_calls(pytester) == 2  # the reply judge and the arguments judge


def test_yaml_args_judge_says_no(pytester: pytest.Pytester) -> None:
    project(pytester, time="07:00")
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*book_table call: fixture judge: no*"])


def test_an_unavailable_judge_is_reported_as_errored(pytester: pytest.Pytester) -> None:
    project(pytester, mode="down")
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*judge errored: *503*"])


def test_verdict_cache_across_sessions_and_the_switch(pytester: pytest.Pytester) -> None:
    project(pytester, extra="judge_cache = true\n")
    pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert judge_calls(pytester) == 2
    pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert judge_calls(pytester) == 2  # both verdicts came from the cache
    assert list((pytester.path / ".agent_eval_cache" / "judge").rglob("*.json"))
    pytester.runpytest(
        "--agent-eval-live", "--agent-eval-no-judge-cache", "-p", "no:cacheprovider"
    ).assert_outcomes(passed=1)
    assert judge_calls(pytester) == 4
