"""The agent of the import round trips: the example's restaurant agent, greeting the caller.

Imported by the call that is recorded (in-process, and by the room worker), and by the pytest
projects that replay the imported transcript, so every side runs the same agent. Also the
deliberately changed agents the replays must catch. The example's folder is put on sys.path
here, so this file works wherever it is imported from.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"
if str(EXAMPLE_DIR) not in sys.path:
    sys.path.insert(0, str(EXAMPLE_DIR))

from booking_agent import RULES, VAD, RestaurantAgent  # noqa: E402
from livekit.agents import Agent, AgentSession, RunContext, function_tool  # noqa: E402

from pytest_agent_eval.adapters.livekit import (  # noqa: E402
    Rule,
    ScriptedLLM,
    WhisperSTT,
    eval_session_kwargs,
)

__all__ = [
    "BILLING_INTRO",
    "GREETING",
    "VAD",
    "BillingDesk",
    "ChangedReference",
    "FrontDesk",
    "GreeterRestaurant",
    "desk_session",
    "forgetful_rules",
    "make_replay_session",
]

GREETING = "Welcome to Chez Pytest! How can I help?"


class GreeterRestaurant(RestaurantAgent):
    """The restaurant agent, greeting the caller as soon as the session starts."""

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")


class ChangedReference(GreeterRestaurant):
    """A regression in the booking tool: references now start at BK-201."""

    @function_tool
    async def book_table(self, ctx: RunContext, party_size: int, time: str, name: str) -> str:
        """Book a table.

        Args:
            party_size: Number of guests.
            time: Time of the booking, 24-hour HH:MM.
            name: Name the booking is under.
        """
        reference = f"BK-{200 + len(self.bookings) + 1}"
        self.bookings.append(reference)
        return f"table for {party_size} at {time} under {name}, reference {reference}"


def forgetful_rules() -> list[Rule]:
    """The rules with a regression in the answer to "what name": it no longer recalls it."""
    return [
        Rule(r"\bwhat name\b", reply="I don't have a booking for you yet.")
        if str(rule.pattern).startswith(r"\bwhat name")
        else rule
        for rule in RULES
    ]


def make_session(rules: list[Rule] | None = None, **extra: Any) -> AgentSession:
    """A session as the deployed agent runs it: offline Whisper, Silero, the scripted LLM."""
    return AgentSession(
        stt=WhisperSTT(),
        vad=VAD,
        llm=ScriptedLLM(rules if rules is not None else RULES, greeting=GREETING),
        **eval_session_kwargs(),
        **extra,
    )


def make_replay_session(variant: str = "same") -> tuple[AgentSession, RestaurantAgent]:
    """The session and agent a replay runs: ``same``, ``changed_reference`` (turn 1 changes)
    or ``forgetful`` (turn 2 changes)."""
    if variant == "same":
        return make_session(), GreeterRestaurant()
    if variant == "changed_reference":
        return make_session(), ChangedReference()
    if variant == "forgetful":
        return make_session(forgetful_rules()), GreeterRestaurant()
    raise ValueError(f"unknown variant {variant!r}")


BILLING_INTRO = "Billing here. How can I help with your bill?"


class BillingDesk(Agent):
    """Entered by a handoff; introduces itself; its refund tool fails for cards on file."""

    def __init__(self, *, refunds_work: bool = False) -> None:
        super().__init__(instructions="You are the billing assistant.")
        self.refunds_work = refunds_work

    async def on_enter(self) -> None:
        self.session.say(BILLING_INTRO)

    @function_tool
    async def refund(self, ctx: RunContext, charge: str) -> str:
        """Refund a charge.

        Args:
            charge: Which charge, for example "duplicate".
        """
        if not self.refunds_work:
            raise RuntimeError("the card on file has expired")
        return f"refunded the {charge} charge"


class FrontDesk(Agent):
    """Hands billing questions over to `BillingDesk`."""

    def __init__(self, *, refunds_work: bool = False) -> None:
        super().__init__(instructions="You are the front desk. Transfer billing questions.")
        self.refunds_work = refunds_work

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to billing."""
        return BillingDesk(refunds_work=self.refunds_work)


DESK_RULES = [
    Rule(r"\bbill\b", tool="transfer_to_billing"),
    Rule(
        r"charged twice",
        tool="refund",
        args={"charge": "duplicate"},
        reply=lambda ctx: (
            "Sorry, I could not refund it: please update your card."
            if ctx.tool_error
            else f"Done: {ctx.tool_output}."
        ),
    ),
]


def desk_session(refunds_work: bool = False) -> tuple[AgentSession, FrontDesk]:
    """The two-desk agent, offline; ``refunds_work`` is the deliberate change."""
    session = AgentSession(
        stt=WhisperSTT(), vad=VAD, llm=ScriptedLLM(DESK_RULES), **eval_session_kwargs()
    )
    return session, FrontDesk(refunds_work=refunds_work)
