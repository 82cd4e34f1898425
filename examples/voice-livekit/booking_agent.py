"""A small LiveKit restaurant agent with tools, driven offline by a scripted LLM.

Swap `make_session`'s STT and LLM for real ones (and keep the rest) to evaluate a production
agent with the same transcripts.
"""

from __future__ import annotations

import re

from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    Rule,
    ScriptContext,
    ScriptedLLM,
    eval_session_kwargs,
    parse_number,
)

__all__ = ["RULES", "VAD", "RestaurantAgent", "make_session", "to_24h"]

# Plugins must be imported, and the VAD loaded, on the main thread: do it at import time.
# The Silero model ships inside its wheel; one instance is shared by every session.
VAD = silero.VAD.load()

MENU = {
    "vegan": "mushroom risotto and lentil curry",
    "gluten": "grilled fish and polenta",
}


class RestaurantAgent(Agent):
    """Books tables and answers menu questions; its bookings live as long as the session."""

    def __init__(self) -> None:
        super().__init__(
            instructions=(
                "You are the booking assistant of Chez Pytest. Book tables with book_table, "
                "answer diet questions with check_menu, and keep replies short."
            )
        )
        self.bookings: list[str] = []

    @function_tool
    async def book_table(self, ctx: RunContext, party_size: int, time: str, name: str) -> str:
        """Book a table.

        Args:
            party_size: Number of guests.
            time: Time of the booking, 24-hour HH:MM.
            name: Name the booking is under.
        """
        reference = f"BK-{100 + len(self.bookings) + 1}"
        self.bookings.append(reference)
        return f"table for {party_size} at {time} under {name}, reference {reference}"

    @function_tool
    async def check_menu(self, ctx: RunContext, diet: str) -> str:
        """Dishes that suit a diet.

        Args:
            diet: The diet, for example "vegan".
        """
        dishes = MENU.get(diet.lower())
        if dishes is None:
            raise ValueError(f"no information about {diet!r} dishes")
        return dishes


def to_24h(spoken: str) -> str:
    """``"seven pm"``, ``"7 p.m."`` or ``"7:30pm"`` -> ``"19:00"`` / ``"19:30"``."""
    text = spoken.lower().replace(".", "").replace(" ", "")
    m = re.match(r"(\d{1,2}|[a-z]+?)(?::(\d{2}))?(am|pm)?$", text)
    if m is None:
        return spoken
    hour = parse_number(m.group(1))
    if hour is None:
        return spoken
    if m.group(3) == "pm" and hour < 12:
        hour += 12
    elif m.group(3) == "am" and hour == 12:
        hour = 0
    return f"{hour:02d}:{m.group(2) or '00'}"


INTRODUCTION = r"\b(?:i am|i'm|my name is|this is) (\w+)"


def _introduced_name(ctx: ScriptContext) -> str | None:
    """The name the user gave in this message or, failing that, an earlier one."""
    if m := re.search(INTRODUCTION, ctx.user, re.IGNORECASE):
        return m.group(1)
    return ctx.recall(INTRODUCTION)


def _booking_args(ctx: ScriptContext) -> dict[str, object]:
    name = ctx.group("name") or _introduced_name(ctx)
    return {
        "party_size": parse_number(ctx.group("party")) or 0,
        "time": to_24h(ctx.group("time") or ""),
        "name": (name or "guest").capitalize(),
    }


def _booking_name(ctx: ScriptContext) -> str:
    # Only the conversation kept by the session can answer this: the scripted LLM sees the
    # earlier turns solely through the context the session hands it.
    name = ctx.recall(r"\bunder (?:the name )?(\w+)") or ctx.recall(INTRODUCTION)
    if name is None:
        return "I don't have a booking for you yet."
    return f"The booking is under {name.capitalize()}."


TIME = r"(?P<time>(?:\d{1,2}|[a-z]+)(?::\d{2})?\s*(?:[ap]\.?\s?m\.?)?)"

RULES = [
    Rule(
        rf"table for (?P<party>\w+) at {TIME}(?:.*?\bunder (?:the name )?(?P<name>\w+))?",
        tool="book_table",
        args=_booking_args,
        reply="You're all set: {output}.",
    ),
    Rule(
        r"\b(?P<diet>vegan|gluten)",
        tool="check_menu",
        args={"diet": "{diet}"},
        reply=lambda ctx: (
            "Sorry, I could not check the menu."
            if ctx.tool_error
            else f"Yes, we have {ctx.tool_output}."
        ),
    ),
    Rule(r"\bwhat name\b|\bwho is the booking\b", reply=_booking_name),
    Rule(r"\b(hello|hi)\b", reply="Hello! How can I help you?"),
]
"""What the scripted LLM does; a real LLM would decide this from the instructions and tools."""


def make_session(stt: object | None = None) -> tuple[AgentSession, RestaurantAgent]:
    """A fresh session and agent: the fixture-text STT and the scripted LLM, unless given."""
    session: AgentSession = AgentSession(
        stt=stt if stt is not None else FixtureTextSTT(),
        vad=VAD,
        llm=ScriptedLLM(RULES),
        **eval_session_kwargs(),
    )
    return session, RestaurantAgent()
