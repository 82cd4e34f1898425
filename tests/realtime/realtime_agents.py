"""Realtime (speech-to-speech) LiveKit agents built the way users build them, on a
`ScriptedRealtimeModel`: a front desk with tools and a handoff to billing (sharing the front
desk's model or with its own), a greeting from ``on_enter``, a long reply to barge in on.

Imported at collection (main thread), like every LiveKit plugin user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import (
    Rule,
    ScriptedRealtimeModel,
    eval_session_kwargs,
)

VAD = silero.VAD.load()

PHRASES = {
    "weather": "What is the weather in Paris?",
    "book": "Book a table for four people.",
    "billing": "Put me through to billing.",
    "balance": "What is my balance?",
    "bye": "Thanks, that is all.",
    # Two phrases with a caller's pause between them: two user turns in one audio turn.
    "weather_pause_book": "What is the weather in Paris? [pause 1.5s] Book a table for four people.",
    "story": "Tell me a story.",
    "stop_rome": "Wait, what is the weather in Rome instead?",
}

GREETING = "Hello, this is the front desk. How can I help?"
BILLING_INTRO = "Billing here. How can I help with your account?"
STORY = (
    "Once upon a time there was a lighthouse keeper who counted the ships every night, and "
    "every night the sea brought one more ship than the night before, until the harbour was "
    "so full that the town built a second lighthouse to count them all."
)

FRONT_DESK_RULES = [
    Rule(
        r"weather in (?P<city>\w+)", tool="get_weather", args={"city": "{city}"}, reply="{output}."
    ),
    Rule(
        r"table for (?P<party>\w+)",
        tool="book_table",
        args={"party_size": "{party}"},
        reply="Done: {output}.",
    ),
    Rule(r"billing", tool="transfer_to_billing", preamble="Transferring you to billing."),
    Rule(r"story", reply=STORY),
    Rule(r"that is all", reply="Goodbye!"),
]
BILLING_RULES = [
    Rule(r"balance", tool="get_balance", reply="Your balance is {output}."),
    Rule(r"that is all", reply="Goodbye from billing!"),
]
INSTRUCTIONS = [
    Rule(r"billing assistant", reply=BILLING_INTRO),
]


class BillingAgent(Agent):
    """Entered by a handoff; introduces itself."""

    def __init__(self, chat_ctx: Any = None, llm: Any = None) -> None:
        kwargs: dict[str, Any] = {"llm": llm} if llm is not None else {}
        super().__init__(instructions="You are the billing assistant.", chat_ctx=chat_ctx, **kwargs)

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Introduce yourself as the billing assistant.")

    @function_tool
    async def get_balance(self, ctx: RunContext) -> str:
        """Look up the caller's balance."""
        return "42 euros"


class FrontDesk(Agent):
    """Greets, answers the weather, books tables, hands billing questions over."""

    def __init__(self, billing_llm: Callable[[], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(instructions="You are the front desk.", **kwargs)
        self._billing_llm = billing_llm

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def get_weather(self, ctx: RunContext, city: str) -> str:
        """Look up the weather in a city."""
        return f"It is sunny in {city}" if city == "Paris" else f"It is rainy in {city}"

    @function_tool
    async def book_table(self, ctx: RunContext, party_size: int) -> str:
        """Book a table."""
        return f"a table for {party_size}"

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to billing."""
        llm = self._billing_llm() if self._billing_llm is not None else None
        return BillingAgent(chat_ctx=self.chat_ctx, llm=llm)


Mode = Literal["server", "session", "fixed_server", "server_and_session_vad"]
"""Who takes the turns: the model's server VAD; the session's VAD (``turn_detection="vad"``
on a model that can hand turns over); the server, on a model that cannot hand them over
although the session asks (as Gemini Live); the server, with a session given ``vad=`` that
follows the user's state (and ends each user turn itself too)."""


def front_desk_model(mode: Mode, *, auto_tool_reply: bool = False) -> ScriptedRealtimeModel:
    return ScriptedRealtimeModel(
        FRONT_DESK_RULES + BILLING_RULES,
        greeting=GREETING,
        instructions=INSTRUCTIONS,
        can_disable_turn_detection=mode != "fixed_server",
        auto_tool_reply=auto_tool_reply,
    )


def billing_model(mode: Mode, *, auto_tool_reply: bool = False) -> ScriptedRealtimeModel:
    return ScriptedRealtimeModel(
        BILLING_RULES,
        greeting=BILLING_INTRO,
        instructions=INSTRUCTIONS,
        can_disable_turn_detection=mode != "fixed_server",
        auto_tool_reply=auto_tool_reply,
    )


def session_kwargs(mode: Mode) -> dict[str, Any]:
    if mode == "server":
        return {"aec_warmup_duration": None}
    if mode == "server_and_session_vad":
        return {"vad": VAD, "aec_warmup_duration": None}
    return {"vad": VAD, **eval_session_kwargs()}


@dataclass(frozen=True)
class Scenario:
    id: str
    mode: Mode
    separate_models: bool
    keys: tuple[str, ...]
    auto_tool_reply: bool = False
    """The model answers tool results itself (``auto_tool_reply_generation``, as Gemini
    Live): the session hands it the results and waits for its own reply."""

    def factory(
        self, models: list[ScriptedRealtimeModel] | None = None
    ) -> Callable[[], tuple[AgentSession[Any], Agent]]:
        """Sessions for this scenario; each front-desk model made is added to ``models``."""
        mode, separate, auto = self.mode, self.separate_models, self.auto_tool_reply

        def make_session() -> tuple[AgentSession[Any], Agent]:
            model = front_desk_model(mode, auto_tool_reply=auto)
            if models is not None:
                models.append(model)
            session: AgentSession[Any] = AgentSession(llm=model, **session_kwargs(mode))
            billing = (lambda: billing_model(mode, auto_tool_reply=auto)) if separate else None
            return session, FrontDesk(billing_llm=billing)

        return make_session


def fixtures_yaml() -> str:
    lines = ["id: realtime_fixtures", "turns:"]
    for key, text in PHRASES.items():
        lines += [f'  - user: "{text}"', f"    audio: {key}.wav"]
    return "\n".join(lines) + "\n"


def synthesize(folder: Path) -> dict[str, Path]:
    """Every phrase's WAV, made with the offline default voice; key -> path."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    yaml_path = folder / "realtime.yaml"
    yaml_path.write_text(fixtures_yaml())
    ensure_fixtures([load_transcript_file(yaml_path)], jobs=1).raise_for_failures()
    return {key: folder / f"{key}.wav" for key in PHRASES}
