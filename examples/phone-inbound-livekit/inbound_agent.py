"""A LiveKit inbound agent written from LiveKit's telephony docs: it answers a bank's phone
line, greets the caller, collects their account number on the keypad with LiveKit's
``GetDtmfTask`` (four digits, ending in #; the task listens to the job room's
``sip_dtmf_received``), looks the account up with its ``lookup_account`` tool and reads the
balance back. The scripted LLM stands in for a real model.

``ACCOUNT_BUG=1`` plants the bug: the agent drops the last digit of the number before the
lookup, so it looks up account 452 when the caller typed 4521#."""

from __future__ import annotations

import os
from typing import Any

from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.agents.beta.workflows.dtmf_inputs import GetDtmfTask
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)

BUGGY = os.environ.get("ACCOUNT_BUG") == "1"

ACCOUNTS = {"4521": 42, "7730": 1250}
"""The bank's accounts: number -> balance in euros."""

_VAD: Any = None


class InboundAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You answer Lee Bank's phone line.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller and ask how you can help.")

    @function_tool()
    async def collect_account_number(self, context: RunContext) -> None:
        """Ask the caller for their 4-digit account number on the keypad, then look it up."""
        result = await GetDtmfTask(num_digits=4)
        digits = result.user_input.replace(" ", "")
        if BUGGY:
            digits = digits[:-1]
        # Returns nothing, so no reply of its own: the model is asked to look the number up
        # (tool_choice="auto": inside a tool, LiveKit's generate_reply offers no tools).
        self.session.generate_reply(
            instructions=f"The caller typed account number {digits}: look it up.",
            tool_choice="auto",
        )

    @function_tool()
    async def lookup_account(self, context: RunContext, account_number: str) -> str:
        """Look up an account by its number; returns its balance."""
        balance = ACCOUNTS.get(account_number)
        if balance is None:
            return f"I could not find account {account_number}. Please check the number."
        return f"Account {account_number}: your balance is {balance} euros."


RULES = [
    Rule(
        r"balance",
        tool="collect_account_number",
        preamble="Sure, I can help with your balance.",
    ),
]
INSTRUCTIONS = [
    Rule(r"greet", reply="Welcome to Lee Bank. How can I help you today?"),
    Rule(
        r"account number (?P<account>\d+)",
        tool="lookup_account",
        args={"account_number": "{account}"},
        reply="{output}",
    ),
]


def make_session() -> tuple[AgentSession, Agent]:
    global _VAD
    if _VAD is None:  # loaded once per process, on first use
        _VAD = silero.VAD.load()
    # GetDtmfTask starts with a context of its own (no user message yet) and asks for the
    # digits: the default reply is its prompt.
    llm = ScriptedLLM(
        RULES,
        instructions=INSTRUCTIONS,
        default_reply="Please enter your account number on the keypad, then press pound.",
    )
    session: AgentSession = AgentSession(
        stt=FixtureTextSTT(), vad=_VAD, llm=llm, **eval_session_kwargs()
    )
    return session, InboundAgent()
