"""The results file holds what each run did, turn by turn (issue 32: to compare two sessions,
users parsed the markdown report). Read back from a real session, with a pydantic-ai agent on a
FunctionModel calling a real tool."""

from __future__ import annotations

import json

from .conftest import Project

AGENT = """
import pytest
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.messages import (
    ModelResponse, RetryPromptPart, TextPart, ToolCallPart, ToolReturnPart,
)
from pydantic_ai.models.function import FunctionModel

from pytest_agent_eval.adapters.pydantic_ai import PydanticAIAdapter


def model(messages, info):
    last = messages[-1].parts[-1]
    if isinstance(last, ToolReturnPart):
        return ModelResponse(parts=[TextPart(f"Booked: {last.content}.")])
    if isinstance(last, RetryPromptPart):
        return ModelResponse(parts=[TextPart("I could not find that booking.")])
    text = last.content
    if "table" in text:
        return ModelResponse(parts=[ToolCallPart("book", {"party": 2, "time": "19:00"})])
    if "cancel" in text:
        return ModelResponse(parts=[ToolCallPart("cancel", {"reference": "BK-9"})])
    return ModelResponse(parts=[TextPart("Hello! How can I help?")])


agent = Agent(FunctionModel(model))


@agent.tool_plain
def book(party: int, time: str) -> str:
    return f"table for {party} at {time}, reference BK-1"


@agent.tool_plain
def cancel(reference: str) -> str:
    raise ModelRetry(f"no booking {reference}")


@pytest.fixture
def llm_eval_agent():
    return PydanticAIAdapter(agent)
"""

TRANSCRIPT = """
id: captured
runs: 2
turns:
  - user: "Hi there"
    expect:
      reply_contains_any: ["How can I help"]
  - user: "A table for two at seven, please"
    expect:
      tool_calls_include: [book]
      reply_contains_any: ["reference BK-1"]
  - user: "Please cancel BK-9"
    expect:
      reply_contains_any: ["cancelled"]
"""


def test_the_results_file_holds_each_runs_turns(project: Project) -> None:
    (project.path / "tests" / "conftest.py").parent.mkdir(parents=True, exist_ok=True)
    (project.path / "tests" / "conftest.py").write_text(AGENT)
    project.transcript("captured", TRANSCRIPT)

    result = project.run_live("--agent-eval-results=r.json")
    result.assert_outcomes(failed=1)

    document = json.loads((project.path / "r.json").read_text())
    (entry,) = document["evals"]
    runs = entry["captures"]
    assert [r["run"] for r in runs] == [1, 2]
    first = runs[0]
    assert first["verdict"] == "failed" and first["error"] is None and first["crash"] is None
    assert first["greeting"] is None  # a text agent does not greet
    hello, booking, cancel = first["turns"]

    assert hello["turn"] == 1 and hello["user"] == "Hi there"
    assert hello["reply"] == "Hello! How can I help?" and hello["verdict"] == "passed"
    assert hello["tool_calls"] == [] and hello["heard"] is None and hello["audio"] is None
    assert [c["key"] for c in hello["checks"]] == ["turns[0].expect.reply_contains_any"]

    assert booking["reply"] == "Booked: table for 2 at 19:00, reference BK-1."
    assert booking["tool_calls"] == [
        {
            "name": "book",
            "args": {"party": 2, "time": "19:00"},
            "outcome": "ok",
            "output": "table for 2 at 19:00, reference BK-1",
            "error": None,
        }
    ]

    (call,) = cancel["tool_calls"]
    assert (call["name"], call["args"], call["outcome"]) == (
        "cancel",
        {"reference": "BK-9"},
        "error",
    )
    assert cancel["verdict"] == "failed"
    (check,) = cancel["checks"]
    assert check["passed"] is False and check["errored"] is False
    assert "cancelled" in check["reason"] and check["location"].endswith("captured.yaml:13")

    for turn in first["turns"]:
        # Every documented key is there, also when it has nothing to say.
        assert set(turn) == {
            "turn", "user", "audio", "conditions", "verdict", "error", "crash", "reply", "heard",
            "agent", "handoffs", "tool_calls", "tool_calls_unobserved", "latency_s",
            "first_audio_latency_s", "duration_s", "speed", "timeline", "checks",
        }  # fmt: skip
        assert turn["duration_s"] >= 0 and turn["speed"] is None  # a text agent streams nothing
        assert turn["timeline"] is None  # nor has a voice turn's timeline

    # Both runs did the same, so their captures compare equal but for times.
    def timeless(run: dict[str, object]) -> str:
        return json.dumps(
            {
                **run,
                "run": 0,
                "duration_s": 0,
                "turns": [{**t, "duration_s": 0} for t in run["turns"]],
            },  # type: ignore[attr-defined]
            sort_keys=True,
        )

    assert timeless(runs[0]) == timeless(runs[1])
