"""Hang-ups and transfers on an in-process LiveKit phone call (``call_ended``): an agent that
ends the call the way LiveKit's docs do it (``ctx.shutdown()``, ``ctx.delete_room()``,
``ctx.api.room.delete_room(...)`` on its job context) ends it in that turn and not before; a
cold transfer (``ctx.transfer_sip_participant``, ``ctx.api.sip.transfer_sip_participant``) is
recorded with where it went; an adapter that cannot see hang-ups makes the check error."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from livekit import api
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
from pytest_agent_eval.models import AgentReply, PhoneCall, Transcript, Turn, TurnContext


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


def converse(how: str) -> list[AgentReply]:
    def make_session() -> tuple[AgentSession, Agent]:
        llm = ScriptedLLM(
            [
                Rule(r"goodbye", tool="end_call", reply="Goodbye!"),
                Rule(r"pharmacist", tool="transfer_to_pharmacist", reply="Transferring you."),
            ],
            default_reply="Pharmacy, how can I help?",
        )
        return AgentSession(llm=llm, **eval_session_kwargs()), GoodbyeAgent(how)

    turns = [Turn("Hello?"), Turn("Thanks, goodbye."), Turn("The pharmacist, please.")]
    script = Transcript(id="hang_up", turns=turns, phone=PhoneCall())  # a phone call
    adapter = LiveKitAdapter(make_session, timeout_s=30.0)

    async def run() -> list[AgentReply]:
        await adapter.prepare(script)
        conversation: Any = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            return [await conversation.respond(TurnInput.of(script, i, 0)) for i in range(3)]
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
    ("how", "seen"),
    [
        ("shutdown", "ctx.shutdown"),
        ("delete_room", "ctx.delete_room"),
        ("api", "ctx.api.room.delete_room"),
    ],
)
def test_the_agent_ends_the_call_in_the_turn_it_hangs_up(how: str, seen: str) -> None:
    hello, goodbye, _ = converse(how)
    assert hello.call_ended is False and goodbye.call_ended is True
    assert goodbye.metadata["hang_up"].startswith(seen)
    assert verdict(hello, False) == (True, False) and verdict(goodbye, True) == (True, False)
    assert verdict(hello, True) == (False, False)


def test_an_agent_that_never_hangs_up_fails_call_ended() -> None:
    _, goodbye, _ = converse("never")
    assert goodbye.call_ended is False
    assert verdict(goodbye, True) == (False, False)


@pytest.mark.parametrize("how", ["helper", "api"])
def test_a_cold_transfer_is_recorded_with_where_it_went(how: str) -> None:
    hello, _, transfer = converse(how)
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
