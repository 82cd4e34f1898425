"""A judge inside a real run sees the earlier turns' tool calls and results."""

from __future__ import annotations

import asyncio

from judge_models import ScriptedJudge

from pytest_agent_eval import AgentReply, ToolCall
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.evaluators.judge import JudgeEvaluator
from pytest_agent_eval.models import Expect, Transcript, Turn


async def agent(history: list) -> AgentReply:
    if len([m for m in history if m["role"] == "user"]) == 1:
        return AgentReply("Booked, BK-9.", [ToolCall("book", {"day": "friday"}, output="BK-9")])
    return AgentReply("Your reference is BK-9.")


def test_judge_sees_earlier_tool_calls_through_the_runner() -> None:
    judge = ScriptedJudge(lambda c: ("[tool result from book] BK-9" in c.user_prompt, "seen"))
    transcript = Transcript(
        id="t",
        turns=[
            Turn(user="Book Friday"),
            Turn(
                user="What is my reference?",
                expect=Expect(evaluators=[JudgeEvaluator("Recalls the reference.", judge.model)]),
            ),
        ],
    )
    result = asyncio.run(run_transcript(transcript, agent))
    assert result.passed
    prompt = judge.calls[0].user_prompt
    assert '[assistant called tool book] arguments: {"day": "friday"}' in prompt
    assert "[user] What is my reference?" in prompt


async def names_only(history: list) -> AgentReply:
    if len([m for m in history if m["role"] == "user"]) == 1:
        return AgentReply("Booked.", ["book"])  # a hand-written agent: tool names only
    return AgentReply("It is booked.")


def test_judge_is_not_told_of_arguments_an_agent_never_reported() -> None:
    judge = ScriptedJudge(lambda c: (True, "ok"))
    transcript = Transcript(
        id="t",
        turns=[
            Turn(user="Book Friday"),
            Turn(
                user="Is it booked?",
                expect=Expect(evaluators=[JudgeEvaluator("Confirms.", judge.model)]),
            ),
        ],
    )
    asyncio.run(run_transcript(transcript, names_only))
    prompt = judge.calls[0].user_prompt
    assert "[assistant called tool book] arguments: (not captured)" in prompt
    assert "arguments: {}" not in prompt
