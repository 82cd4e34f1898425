"""A hotel front desk on a realtime (speech-to-speech) model, with tools and a handoff.

In production `make_session()` is given the real model, e.g.
``make_session(openai.realtime.RealtimeModel(voice="alloy"))``: the agent has no STT, the model
hears the caller and takes the turns on its server. The evals give it a `ScriptedRealtimeModel`
instead, which answers from `RULES` offline, hears each fixture's text, and takes the turns
with its own VAD the way the provider's server does.
"""

from __future__ import annotations

from typing import Any

from livekit.agents import Agent, AgentSession, RunContext, function_tool

from pytest_agent_eval.adapters.livekit import Rule, ScriptedRealtimeModel

__all__ = ["RULES", "ConciergeAgent", "FrontDesk", "make_session", "scripted_model"]

ROOMS = {"single": "89 euros", "double": "129 euros", "suite": "240 euros"}


class ConciergeAgent(Agent):
    """Entered by a handoff: inherits the conversation and introduces itself."""

    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="You are the concierge.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Introduce yourself as the concierge.")

    @function_tool
    async def book_taxi(self, ctx: RunContext, time: str) -> str:
        """Book a taxi.

        Args:
            time: When the taxi should come, as the caller said it.
        """
        return f"a taxi at {time}, reference TX-7"


class FrontDesk(Agent):
    """Greets, quotes room prices, and hands taxi and restaurant requests to the concierge."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk of Hotel Pytest. Keep it short.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def room_price(self, ctx: RunContext, room: str) -> str:
        """The price of a room per night.

        Args:
            room: single, double or suite.
        """
        return ROOMS.get(room.lower(), "not available")

    @function_tool
    async def transfer_to_concierge(self, ctx: RunContext) -> Agent:
        """Transfer the caller to the concierge (taxis, restaurants, tours)."""
        return ConciergeAgent(chat_ctx=self.chat_ctx)


RULES = [
    Rule(
        r"what rooms",
        reply=(
            "We have single rooms at 89 euros, double rooms at 129 euros and the suite at 240 "
            "euros a night, all with breakfast, late checkout on request and a view of the old "
            "harbour."
        ),
    ),
    Rule(
        r"(?P<room>single|double|suite)",
        tool="room_price",
        args={"room": "{room}"},
        reply="A {room} room is {output} a night.",
    ),
    Rule(r"taxi|concierge", tool="transfer_to_concierge", preamble="Let me get the concierge."),
    Rule(
        r"at (?P<time>\w+(?: \w+)?)\W*$",
        tool="book_taxi",
        args={"time": "{time}"},
        reply="Booked: {output}.",
    ),
    Rule(r"\b(thanks|thank you)\b", reply="You are welcome. Goodbye!"),
]
"""What the scripted model says, as a real model would decide it."""

INSTRUCTIONS = [
    Rule(r"concierge", reply="Concierge here. When do you need the taxi?"),
]


def scripted_model(**options: Any) -> ScriptedRealtimeModel:
    """The offline stand-in for the production realtime model (one per session); ``options``
    go to `ScriptedRealtimeModel` (``hearing=WhisperSTT()``, ``can_disable_turn_detection``)."""
    return ScriptedRealtimeModel(
        RULES,
        greeting="Hotel Pytest, front desk. How can I help?",
        instructions=INSTRUCTIONS,
        **options,
    )


def make_session(model: Any = None) -> tuple[AgentSession[Any], Agent]:
    """A fresh session and its first agent; ``model`` is the realtime model (the scripted one
    by default). No STT and no turn-detection override: the model takes the turns."""
    session: AgentSession[Any] = AgentSession(llm=model if model is not None else scripted_model())
    return session, FrontDesk()
