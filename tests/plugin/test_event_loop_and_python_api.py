"""One event loop for a session's evals, so a shared async client works in every test; and
`Expect` built in Python takes the values YAML takes, or says clearly what is wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval import Expect, JudgeConfig, ToolCallArgsConfig, TranscriptError

from .conftest import Project

LOOPBACK_DIR = Path(__file__).resolve().parents[1] / "adapters"

CLIENT_CONFTEST = f"""
import sys

sys.path.insert(0, {str(LOOPBACK_DIR)!r})
from loopback_chat import ChatServer, text_completion
from openai import AsyncOpenAI


@pytest.fixture(scope="session")
def chat_server():
    reply = lambda body: text_completion("Booked for " + body["messages"][-1]["content"])
    with ChatServer(reply, keep_alive=True) as server:  # pooled connections, as in production
        yield server


@pytest.fixture(scope=SCOPE)
def client(chat_server):
    return AsyncOpenAI(base_url=chat_server.base_url, api_key="loopback", max_retries=0)


@pytest.fixture
def llm_eval_agent(client):
    async def agent(history):
        answer = await client.chat.completions.create(
            model="loopback-model", messages=[dict(m) for m in history]
        )
        return answer.choices[0].message.content
    return agent
"""

PYTHON_TESTS = """
async def test_async_python(agent_eval):
    result = await agent_eval.run(turns=[Turn("python async")])
    result.assert_threshold()


def test_sync_python(agent_eval):
    agent_eval.run_sync(turns=[Turn("python sync")]).assert_threshold()
"""


@pytest.mark.parametrize("scope", ["session", "function"])
def test_a_shared_async_client_works_in_every_eval(project: Project, scope: str) -> None:
    project.conftest(CLIENT_CONFTEST.replace("SCOPE", repr(scope)))
    for name in ("one", "two", "three"):
        project.transcript(
            name,
            f"id: {name}\nruns: 2\nturns:\n  - user: table {name}\n    expect:\n"
            "      reply_contains_any: [Booked]\n",
        )
    project.test_file("test_python.py", PYTHON_TESTS)
    result = project.pytester.runpytest_subprocess("-p", "no:cacheprovider", "--agent-eval-live")
    output = result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=5)
    assert "Event loop is closed" not in output
    assert "Task exception was never retrieved" not in output
    assert "Exception ignored" not in output


def test_expect_accepts_yaml_shaped_values() -> None:
    expect = Expect(
        tool_calls_args=[
            {"tool": "book", "args": {"time": "7pm"}},
            {"tool": "book", "judge": "The time is in the evening."},
        ],
        judge={"rubric": "Confirms the booking.", "model": "openai:gpt-4o-mini"},
        reply_contains_any=("booked",),
    )
    assert expect.tool_calls_args == [
        ToolCallArgsConfig("book", {"time": "7pm"}),
        ToolCallArgsConfig("book", judge=JudgeConfig("The time is in the evening.")),
    ]
    assert expect.judge == JudgeConfig("Confirms the booking.", "openai:gpt-4o-mini")
    assert expect.reply_contains_any == ["booked"]
    assert Expect(judge="Confirms the time.").judge == JudgeConfig("Confirms the time.")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"judge": 5}, "Expect(judge=...): a judge is a rubric string"),
        ({"judge": {"rubrik": "x"}}, "unknown judge field 'rubrik'"),
        ({"judge": {"model": "m"}}, "missing required field 'rubric'"),
        (
            {"tool_calls_args": [{"tool": "book"}]},
            "tool_calls_args entry for 'book' needs 'args' (deterministic check) or 'judge'",
        ),
        (
            {"tool_calls_args": [{"tool": "book", "args": "7pm"}]},
            "tool_calls_args=...): [0].args: expected dict or None",
        ),
        ({"reply_contains_any": "booked"}, "write reply_contains_any=['booked']"),
        ({"reply_contains_all": [1]}, "Expect(reply_contains_all=...): [0]: expected a string"),
        ({"max_latency_ms": "fast"}, "Expect(max_latency_ms=...)"),
    ],
)
def test_expect_rejects_bad_values_with_the_loaders_words(
    kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(TranscriptError) as info:
        Expect(**kwargs)  # type: ignore[arg-type]
    assert message in str(info.value)


def test_yaml_shaped_expectations_run_in_a_python_eval(project: Project) -> None:
    project.echo_agent("Booked at 7pm", "[ToolCall('book', {'time': '7pm', 'party': 2})]")
    project.test_file(
        "test_shapes.py",
        """
        def test_shapes(agent_eval):
            turn = Turn(
                "Book at 7",
                expect=Expect(tool_calls_args=[{"tool": "book", "args": {"time": "7pm"}}]),
            )
            agent_eval.run_sync(turns=[turn]).assert_threshold()
        """,
    )
    result = project.run_live()
    result.assert_outcomes(passed=1)
