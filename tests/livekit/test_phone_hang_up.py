"""Hang-ups and transfers on an in-process LiveKit phone call (``call_ended``): an agent that
ends the call the way LiveKit's docs do it (``ctx.shutdown()``, ``ctx.delete_room()``,
``ctx.api.room.delete_room(...)`` on its job context, ``session.shutdown()``, LiveKit's
``EndCallTool``) ends it in that turn and not before, with its goodbye, and a turn after it
errors saying the agent hung up; a cold transfer (``ctx.transfer_sip_participant``,
``ctx.api.sip.transfer_sip_participant``) is recorded with where it went; an adapter that
cannot see hang-ups makes the check error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from livekit import api
from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context
from livekit.agents.beta.tools import EndCallTool

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import (
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.errors import AdapterError, TranscriptError
from pytest_agent_eval.evaluators._keypad import CallEndedEvaluator
from pytest_agent_eval.models import AgentReply, PhoneCall, Transcript, Turn, TurnContext


class GoodbyeAgent(Agent):
    def __init__(self, how: str) -> None:
        super().__init__(instructions="You answer a pharmacy's phone line.")
        self.how = how

    @function_tool()
    async def end_call(self, context: RunContext) -> str:
        """End the call when the caller says goodbye."""
        ctx = get_job_context()
        if self.how == "session":
            context.session.shutdown()
        elif self.how == "shutdown":
            ctx.shutdown(reason="caller said goodbye")
        elif self.how == "delete_room":
            await ctx.delete_room()
        elif self.how == "api":
            await ctx.api.room.delete_room(api.DeleteRoomRequest(room=ctx.room.name))
        return "ended"

    @function_tool()
    async def transfer_to_pharmacist(self, context: RunContext) -> str:
        """Transfer the caller to the pharmacist."""
        ctx = get_job_context()
        caller = next(iter(ctx.room.remote_participants.values()))
        if self.how == "api":
            await ctx.api.sip.transfer_sip_participant(
                api.TransferSIPParticipantRequest(
                    room_name=ctx.room.name,
                    participant_identity=caller.identity,
                    transfer_to="tel:+15550111",
                    play_dialtone=True,
                )
            )
        else:
            await ctx.transfer_sip_participant(caller, "tel:+15550111")
        return "transferred"


class EndCallAgent(Agent):
    """Hangs up with LiveKit's own ``EndCallTool`` (it closes the session after its goodbye)."""

    def __init__(self) -> None:
        super().__init__(instructions="You answer a pharmacy's phone line.", tools=[EndCallTool()])

    @function_tool()
    async def transfer_to_pharmacist(self, context: RunContext) -> str:
        """Transfer the caller to the pharmacist."""
        ctx = get_job_context()
        caller = next(iter(ctx.room.remote_participants.values()))
        await ctx.transfer_sip_participant(caller, "tel:+15550111")
        return "transferred"


def converse(how: str) -> list[AgentReply | AdapterError]:
    """Hello, the pharmacist, goodbye, hello again: each turn's reply, or its error."""

    def make_session() -> tuple[AgentSession, Agent]:
        llm = ScriptedLLM(
            [
                Rule(r"goodbye", tool="end_call", reply="Goodbye!"),
                Rule(r"pharmacist", tool="transfer_to_pharmacist", reply="Transferring you."),
            ],
            default_reply="Pharmacy, how can I help?",
        )
        agent = EndCallAgent() if how == "end_call_tool" else GoodbyeAgent(how)
        return AgentSession(llm=llm, **eval_session_kwargs()), agent

    turns = [
        Turn("Hello?"),
        Turn("The pharmacist, please."),
        Turn("Thanks, goodbye."),
        Turn("Hello again?"),
    ]
    script = Transcript(id="hang_up", turns=turns, phone=PhoneCall())  # a phone call
    adapter = LiveKitAdapter(make_session, timeout_s=30.0)

    async def run() -> list[AgentReply | AdapterError]:
        await adapter.prepare(script)
        conversation: Any = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        replies: list[AgentReply | AdapterError] = []
        try:
            for index in range(len(turns)):
                try:
                    replies.append(await conversation.respond(TurnInput.of(script, index, 0)))
                except AdapterError as exc:
                    replies.append(exc)
        finally:
            await conversation.aclose()
        return replies

    return asyncio.run(run())


def verdict(reply: AgentReply | AdapterError, ended: bool) -> tuple[bool, bool]:
    assert isinstance(reply, AgentReply), reply
    ctx = TurnContext(
        user="", reply=reply.reply, tool_calls=[], history=[], call_ended=reply.call_ended
    )
    result = asyncio.run(CallEndedEvaluator(ended).evaluate(ctx))
    return result.passed, result.errored


@pytest.mark.parametrize(
    ("how", "seen"),
    [
        ("shutdown", "ctx.shutdown"),
        ("delete_room", "ctx.delete_room"),
        ("api", "ctx.api.room.delete_room"),
        ("session", "session.shutdown()"),
        ("end_call_tool", "session.shutdown()"),
    ],
)
def test_the_agent_ends_the_call_in_the_turn_it_hangs_up(how: str, seen: str) -> None:
    hello, transfer, goodbye, after = converse(how)
    assert isinstance(hello, AgentReply) and isinstance(goodbye, AgentReply)
    assert isinstance(transfer, AgentReply) and transfer.call_ended is False
    assert hello.call_ended is False and goodbye.call_ended is True
    assert goodbye.metadata["hang_up"].startswith(seen)
    assert goodbye.reply == "Goodbye!"
    assert verdict(hello, False) == (True, False) and verdict(goodbye, True) == (True, False)
    assert verdict(hello, True) == (False, False) and verdict(goodbye, False) == (False, False)
    assert isinstance(after, AdapterError)
    assert "turn 4: the agent hung up in turn 3 (" in str(after)


def test_an_agent_that_never_hangs_up_fails_call_ended() -> None:
    *_, goodbye, after = converse("never")
    assert isinstance(goodbye, AgentReply) and goodbye.call_ended is False
    assert verdict(goodbye, True) == (False, False)
    assert isinstance(after, AgentReply) and after.call_ended is False


@pytest.mark.parametrize("how", ["helper", "api"])
def test_a_cold_transfer_is_recorded_with_where_it_went(how: str) -> None:
    hello, transfer, *_ = converse(how)
    assert isinstance(hello, AgentReply) and isinstance(transfer, AgentReply)
    assert hello.metadata["sip_transfers"] == []
    (made,) = transfer.metadata["sip_transfers"]
    assert made["to"] == "tel:+15550111" and made["participant"] == "sip_+15550100"
    assert made["play_dialtone"] is (how == "api")


def test_an_adapter_that_cannot_see_hang_ups_errors() -> None:
    assert verdict(AgentReply(reply="Goodbye!"), True) == (False, True)


def test_call_ended_is_a_boolean_in_yaml() -> None:
    text = 'id: t\nturns:\n  - user: "bye"\n    expect:\n      call_ended: true\n'
    transcript = load_transcript_text(text, path=Path("t.yaml"))
    assert transcript.turns[0].expect.call_ended is True
    with pytest.raises(TranscriptError, match=r"t\.yaml:5.*call_ended"):
        load_transcript_text(text.replace("true", '"yes"'), path=Path("t.yaml"))
