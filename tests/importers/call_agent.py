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
from livekit.agents import AgentSession, RunContext, function_tool  # noqa: E402

from pytest_agent_eval.adapters.livekit import (  # noqa: E402
    Rule,
    ScriptedLLM,
    WhisperSTT,
    eval_session_kwargs,
)

__all__ = [
    "GREETING",
    "VAD",
    "ChangedReference",
    "GreeterRestaurant",
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
