"""A LiveKit phone agent written from LiveKit's docs (copied into each pytester project): it
collects an account number with LiveKit's ``GetDtmfTask`` (which listens to the job's room
for ``sip_dtmf_received``), hears keys pressed outside that task as the LLM's user input
("DTMF: 4521#" once the caller presses #, as Pipecat's ``DTMFAggregator`` hands them on), and
navigates a phone tree with LiveKit's ``send_dtmf_events``
tool (``publish_dtmf`` on the room's local participant). The scripted LLM stands in for a
real model. ``PHONE_AGENT_BUG=1`` plants the bug: the agent says it pressed the key and
never sends it."""

from __future__ import annotations

import os

from livekit import rtc
from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context
from livekit.agents.beta.tools import send_dtmf_events
from livekit.agents.beta.workflows.dtmf_inputs import GetDtmfTask

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM, eval_session_kwargs

BUGGY = os.environ.get("PHONE_AGENT_BUG") == "1"


class BankAgent(Agent):
    def __init__(self) -> None:
        super().__init__(
            instructions="You answer a bank's phone line.",
            tools=[] if BUGGY else [send_dtmf_events],
        )

    async def on_enter(self) -> None:
        ctx = get_job_context(required=False)
        if ctx is None:  # not on a phone call
            return
        keys: list[str] = []

        def on_key(ev: rtc.SipDTMF) -> None:
            if self.session.current_agent is not self:
                return  # a task (GetDtmfTask) is reading the keys
            keys.append(ev.digit)
            if ev.digit == "#":
                self.session.generate_reply(user_input="DTMF: " + "".join(keys))
                keys.clear()

        ctx.room.on("sip_dtmf_received", on_key)

    @function_tool()
    async def collect_account_number(self, context: RunContext) -> str:
        """Ask the caller for their 4-digit account number on the keypad."""
        result = await GetDtmfTask(num_digits=4)
        return result.user_input.replace(" ", "")


RULES = [
    Rule(r"DTMF: (?P<account>\d+)", reply="Account {account}: your balance is 42 euros."),
    Rule(
        r"balance",
        tool="collect_account_number",
        reply="Account {output}: your balance is 42 euros.",
    ),
    Rule(r"billing", reply="I pressed 2 for billing.")
    if BUGGY
    else Rule(
        r"billing",
        tool="send_dtmf_events",
        args={"events": ["2"]},
        reply="I pressed 2 for billing.",
    ),
]


def make_session() -> tuple[AgentSession, Agent]:
    llm = ScriptedLLM(
        RULES, default_reply="Please enter your account number on the keypad, then pound."
    )
    return AgentSession(llm=llm, **eval_session_kwargs()), BankAgent()
