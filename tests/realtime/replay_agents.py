"""The realtime agents of the record and replay tests: real LiveKit agents on the real
``livekit.plugins.openai.realtime.RealtimeModel``, as a user writes them (the model built in
the agent's own code, no base_url: the tests point ``OPENAI_BASE_URL`` at the scripted
provider while recording, and replay never reaches it).

Imported at collection, on the main thread: LiveKit plugins refuse to register from another.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.plugins.openai import realtime
from openai_provider import Call, Rule, Say, ScriptedProvider

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.models import AgentReply, Transcript, Turn

T = TypeVar("T")

STORY = (
    "Once upon a time a lighthouse keeper counted the ships every night, and every night the "
    "sea brought one more ship than the night before."
)

RULES: list[Rule] = [
    (r"\bstory\b", Say(STORY)),
    (r"greet the caller", Say("Welcome to the front desk!")),
    (r"introduce billing", Say("This is billing, how can I help?")),
    (r"\bhello\b", Say("Hi! How can I help?")),
    (r"\bbook\b", Call("book_table", {"party_size": 2, "time": "7pm"})),
    (r"\bcancel\b", Call("cancel_booking", {})),
    (r"\bbilling\b", Call("transfer_to_billing", {})),
    (r"\bbalance\b", Call("get_balance", {})),
]


def provider() -> ScriptedProvider:
    return ScriptedProvider(rules=RULES, after_tool=lambda name, output: f"Done: {output}.")


class Billing(Agent):
    def __init__(self, *, own_model: bool) -> None:
        if own_model:
            super().__init__(instructions="You handle billing.", llm=realtime.RealtimeModel())
        else:  # the session's model, shared
            super().__init__(instructions="You handle billing.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Introduce billing.")

    @function_tool
    async def get_balance(self) -> str:
        """The caller's balance."""
        return "your balance is 42 euros"


class FrontDesk(Agent):
    def __init__(self, *, greet: bool = True, billing_model: bool = True) -> None:
        super().__init__(instructions="You book tables.")
        self._greet = greet
        self._billing_model = billing_model

    async def on_enter(self) -> None:
        if self._greet:
            self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def book_table(self, party_size: int, time: str) -> str:
        """Book a table."""
        return f"booked for {party_size} at {time}"

    @function_tool
    async def transfer_to_billing(self, context: RunContext) -> tuple[Agent, str]:
        """Hand the caller to billing."""
        return Billing(own_model=self._billing_model), "Transferring you to billing"


class FrontDeskWithCancel(FrontDesk):
    """The same agent after a change: one more tool the recordings never saw."""

    @function_tool
    async def cancel_booking(self) -> str:
        """Cancel the booking."""
        return "cancelled"


def session_factory(agent: type[FrontDesk] = FrontDesk, **options: Any) -> Any:
    def make() -> tuple[AgentSession[Any], Agent]:
        return AgentSession(llm=realtime.RealtimeModel()), agent(**options)

    return make


def transcript(*users: str, id: str = "desk") -> Transcript:
    return Transcript(id=id, turns=[Turn(user=u) for u in users])


CALL = ("Hello there", "Please book a table", "I need billing", "What is my balance?")


def capture(reply: AgentReply) -> dict[str, Any]:
    """What a turn observed that a test compares across runs."""
    return {
        "reply": reply.reply,
        "tools": [(c.name, c.args, c.output, c.is_error) for c in reply.calls],
        "agent": reply.active_agent,
        "handoffs": [repr(h) for h in reply.handoffs or []],
        "speech": [(s.text, s.cause, s.agent) for s in reply.agent_speech],
    }


async def converse(adapter: Any, script: Transcript, run_index: int = 0) -> list[Any]:
    """``script`` through ``adapter`` as the runner drives it: the greeting, then each turn."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    greeting = conversation.greeting()
    out: list[Any] = [[(s.text, s.cause, s.agent) for s in greeting.speech]]
    try:
        for index, turn in enumerate(script.turns):
            out.append(capture(await conversation.respond(TurnInput(turn=turn, index=index))))
    finally:
        await conversation.aclose()
    return out


def run(coro: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coro)


# -- audio turns -----------------------------------------------------------------------------

SPOKEN = ("Hello there!", "Please book a table.")

FIXTURES_YAML = """
id: realtime_replay_fixtures
turns:
  - user: "Hello there!"
    audio: hello.wav
  - user: "Please book a table."
    audio: book.wav
"""


BARGE_IN_PHRASES = ("Tell me a story.", "Wait, please book a table instead.")

BARGE_IN_FIXTURES_YAML = f"""
id: realtime_replay_barge_in_fixtures
turns:
  - user: "{BARGE_IN_PHRASES[0]}"
    audio: story.wav
  - user: "{BARGE_IN_PHRASES[1]}"
    audio: stop_book.wav
"""


def audio_session_factory(*, server_vad: bool, agent: type[FrontDesk] = FrontDesk) -> Any:
    """An agent hearing through the model: the server's VAD (``server_vad``, given to the
    model as production would), or the session's Silero VAD taking the turns."""
    from livekit.plugins import silero
    from openai.types.beta.realtime.session import TurnDetection

    from pytest_agent_eval.adapters.livekit import eval_session_kwargs

    def make() -> tuple[AgentSession[Any], Agent]:
        if server_vad:
            model = realtime.RealtimeModel(
                turn_detection=TurnDetection(
                    type="server_vad", silence_duration_ms=500, create_response=True
                )
            )
            return AgentSession(llm=model), agent(greet=False)
        session = AgentSession(
            llm=realtime.RealtimeModel(), vad=silero.VAD.load(), **eval_session_kwargs()
        )
        return session, agent(greet=False)

    return make


def audio_transcript(folder: Any, id: str = "spoken") -> Transcript:
    return Transcript(
        id=id,
        turns=[
            Turn(user=SPOKEN[0], audio=str(folder / "hello.wav")),
            Turn(user=SPOKEN[1], audio=str(folder / "book.wav")),
        ],
    )


def audio_capture(reply: AgentReply) -> dict[str, Any]:
    return {**capture(reply), "heard": reply.heard}
