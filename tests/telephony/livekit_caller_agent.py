"""A LiveKit inbound phone agent written from LiveKit's telephony docs (copied into each
pytester project): it greets the caller by the number LiveKit's SIP service put in the SIP
participant's attributes, found through the job's room. The scripted LLM stands in for a real
model."""

from __future__ import annotations

from livekit import rtc
from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM, eval_session_kwargs


class CallerAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You answer a pharmacy's phone line.")

    @function_tool()
    async def look_up_caller(self, context: RunContext) -> str:
        """Look up who is calling, by their phone number."""
        ctx = get_job_context()
        participant = await ctx.wait_for_participant(kind=rtc.ParticipantKind.PARTICIPANT_KIND_SIP)
        if participant.attributes.get("sip.callStatus") != "active":
            return "not connected"
        return participant.attributes["sip.phoneNumber"]


RULES = [
    Rule(r"prescription", tool="look_up_caller", reply="I see you are calling from {output}."),
]


def make_session() -> tuple[AgentSession, Agent]:
    llm = ScriptedLLM(RULES, default_reply="Pharmacy, how can I help?")
    return AgentSession(llm=llm, **eval_session_kwargs()), CallerAgent()
