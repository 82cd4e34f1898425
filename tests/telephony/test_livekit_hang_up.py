"""Hang-ups on an in-process LiveKit phone call (``call_ended``): an agent that ends the call
the way LiveKit's docs do it (``ctx.shutdown()``, ``ctx.delete_room()`` on its job context)
ends it in that turn and not before; an adapter that cannot see hang-ups makes the check
error, never pass."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import (
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.evaluators._keypad import CallEndedEvaluator
from pytest_agent_eval.loader import load_transcript_text
from pytest_agent_eval.models import AgentReply, Transcript, Turn, TurnContext


class GoodbyeAgent(Agent):
    def __init__(self, how: str) -> None:
        super().__init__(instructions="You answer a pharmacy's phone line.")
        self.how = how

    @function_tool()
    async def end_call(self, context: RunContext) -> str:
        """End the call when the caller says goodbye."""
        ctx = get_job_context()
        if self.how == "shutdown":
            ctx.shutdown(reason="caller said goodbye")
        elif self.how == "delete_room":
            await ctx.delete_room()
        return "ended"


def converse(how: str) -> list[AgentReply]:
    def make_session() -> tuple[AgentSession, Agent]:
        llm = ScriptedLLM(
            [Rule(r"goodbye", tool="end_call", reply="Goodbye!")],
            default_reply="Pharmacy, how can I help?",
        )
        return AgentSession(llm=llm, **eval_session_kwargs()), GoodbyeAgent(how)

    script = Transcript(id="hang_up", turns=[Turn("Hello?"), Turn("Thanks, goodbye.")])
    adapter = LiveKitAdapter(make_session, timeout_s=30.0)

    async def run() -> list[AgentReply]:
        await adapter.prepare(script)
        conversation: Any = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            return [await conversation.respond(TurnInput.of(script, i, 0)) for i in range(2)]
        finally:
            await conversation.aclose()

    return asyncio.run(run())


def verdict(reply: AgentReply, ended: bool) -> tuple[bool, bool]:
    ctx = TurnContext(
        user="", reply=reply.reply, tool_calls=[], history=[], call_ended=reply.call_ended
    )
    result = asyncio.run(CallEndedEvaluator(ended).evaluate(ctx))
    return result.passed, result.errored


@pytest.mark.parametrize(
    ("how", "seen"), [("shutdown", "ctx.shutdown"), ("delete_room", "ctx.delete_room")]
)
def test_the_agent_ends_the_call_in_the_turn_it_hangs_up(how: str, seen: str) -> None:
    hello, goodbye = converse(how)
    assert hello.call_ended is False and goodbye.call_ended is True
    assert goodbye.metadata["hang_up"].startswith(seen)
    assert verdict(hello, False) == (True, False) and verdict(goodbye, True) == (True, False)
    assert verdict(hello, True) == (False, False)


def test_an_agent_that_never_hangs_up_fails_call_ended() -> None:
    _, goodbye = converse("never")
    assert goodbye.call_ended is False
    assert verdict(goodbye, True) == (False, False)


def test_an_adapter_that_cannot_see_hang_ups_errors() -> None:
    assert verdict(AgentReply(reply="Goodbye!"), True) == (False, True)


def test_call_ended_is_a_boolean_in_yaml() -> None:
    text = 'id: t\nturns:\n  - user: "bye"\n    expect:\n      call_ended: true\n'
    transcript = load_transcript_text(text, path=Path("t.yaml"))
    assert transcript.turns[0].expect.call_ended is True
    with pytest.raises(TranscriptError, match=r"t\.yaml:5.*call_ended"):
        load_transcript_text(text.replace("true", '"yes"'), path=Path("t.yaml"))
