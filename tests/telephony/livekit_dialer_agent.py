"""A LiveKit outbound agent written from LiveKit's telephony docs ("Make outbound calls"): it
places its call with ``ctx.api.sip.create_sip_participant(api.CreateSIPParticipantRequest(...,
wait_until_answered=True))`` and, when the call fails (a busy line, nobody answering), its
``except api.TwirpError`` branch ends the job with LiveKit's reason. Once the callee
answers it waits for them to speak first, then reminds them of an appointment. The scripted
LLM stands in for a real model. ``DIALER_BUG=1`` plants the bug: the except-branch logs the
failure and never ends the call."""

from __future__ import annotations

import logging
import os

from livekit import api, rtc
from livekit.agents import Agent, AgentSession, get_job_context

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM, eval_session_kwargs

BUGGY = os.environ.get("DIALER_BUG") == "1"
PHONE_NUMBER = "+15550177"
OUTBOUND_TRUNK_ID = os.environ.get("DIALER_TRUNK_ID", "ST_outbound_trunk")

logger = logging.getLogger("dialer-agent")


class DialerAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You call patients to remind them of appointments.")
        self.callee: rtc.RemoteParticipant | None = None

    async def on_enter(self) -> None:
        ctx = get_job_context()
        try:
            await ctx.api.sip.create_sip_participant(
                api.CreateSIPParticipantRequest(
                    room_name=ctx.room.name,
                    sip_trunk_id=OUTBOUND_TRUNK_ID,
                    sip_call_to=PHONE_NUMBER,
                    participant_identity="phone_user",
                    wait_until_answered=True,
                )
            )
        except api.TwirpError as e:
            logger.warning(
                "error creating SIP participant: %s, SIP status: %s %s",
                e.message,
                e.metadata.get("sip_status_code"),
                e.metadata.get("sip_status"),
            )
            if not BUGGY:
                ctx.shutdown(reason=f"call failed: {e.message}")
            return
        self.callee = await ctx.wait_for_participant(identity="phone_user")


RULES = [
    Rule(r"works for me", reply="Great, we will see you on Tuesday at 3. Goodbye."),
    Rule(r"hello", reply="Hi, this is Doctor Lee's office. Can you make Tuesday at 3?"),
]


def make_session() -> tuple[AgentSession, Agent]:
    llm = ScriptedLLM(RULES, default_reply="Sorry, could you repeat that?")
    return AgentSession(llm=llm, **eval_session_kwargs()), DialerAgent()
