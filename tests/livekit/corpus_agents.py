"""A corpus of LiveKit agents built the way users build them, for the speed-invariance tests.

Handoffs by tool (mid-recording, at the end of an audio turn, between turns), agents that
introduce themselves in ``on_enter``, tools that await I/O or speak while working or raise,
an ``AgentTask`` that collects two answers, an agent that speaks twice in one turn. One
`ScriptedLLM` drives them all; the rules below are what a real model would decide.

Imported at collection (main thread), like every LiveKit plugin user.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livekit.agents import Agent, AgentSession, AgentTask, RunContext, function_tool, stt
from livekit_support import booking

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    Rule,
    ScriptContext,
    ScriptedLLM,
    eval_session_kwargs,
)

VAD = booking.VAD

# -- what the callers say (each line is one WAV fixture) -----------------------------------

PHRASES = {
    "bill_then_charge": "I have a question about my bill. Why was I charged twice?",
    # The pause markup makes a longer pause than the synthesizer's between-sentence one.
    "bill_pause_charge": "I have a question about my bill. [pause 1.5s] Why was I charged twice?",
    "to_billing": "Put me through to billing.",
    "charged": "Why was I charged twice?",
    "order": "Where is my order?",
    "warehouse": "Check the warehouse.",
    "refill": "I need a refill.",
    "name": "My name is Maria Lopez.",
    "born": "I was born on May fifth.",
    "dessert": "Do you have dessert?",
    "pizza": "I would like a pizza.",
    "hello": "Hello there!",
    # A long pause inside one fixture: two user turns in one audio turn, both answered.
    "order_pause_hello": "Where is my order? [pause 3s] Hello there!",
}

# -- the agents ------------------------------------------------------------------------------


class BillingAgent(Agent):
    """Entered by a handoff; inherits the conversation and introduces itself."""

    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="You are the billing assistant.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Introduce yourself as the billing assistant.")


class SupportAgent(Agent):
    """Entered by a handoff; speaks a fixed intro with say()."""

    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="You are technical support.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        self.session.say("Support here. What seems to be the problem?")


class Receptionist(Agent):
    """Hands callers over to billing or support with a tool."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the receptionist. Transfer callers.")

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to the billing assistant."""
        return BillingAgent(chat_ctx=self.chat_ctx)

    @function_tool
    async def transfer_to_support(self, ctx: RunContext) -> Agent:
        """Transfer the caller to technical support."""
        return SupportAgent(chat_ctx=self.chat_ctx)


class GreeterAgent(Receptionist):
    """Greets the caller as soon as the session starts."""

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")


class OrderAgent(Agent):
    """Tools that await I/O: a quick lookup and a slow one."""

    def __init__(self) -> None:
        super().__init__(instructions="You track orders.")

    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the caller's order up."""
        await asyncio.sleep(0.05)  # the tool's own I/O
        return "ships tomorrow"

    @function_tool
    async def check_warehouse(self, ctx: RunContext) -> str:
        """Ask the warehouse about stock."""
        await asyncio.sleep(2.0)  # a slow backend
        return "two pallets in stock"


class BriefedOrderAgent(OrderAgent):
    """Adds what it knows of the caller to the turn as a system message, in
    ``on_user_turn_completed`` (retrieval-style context), before the LLM answers."""

    async def on_user_turn_completed(self, turn_ctx: Any, new_message: Any) -> None:
        turn_ctx.add_message(role="system", content="The caller is a gold member.")


class SpellCheckedOrderAgent(OrderAgent):
    """Overrides ``stt_node`` to post-process each final transcript with an async service
    before the session takes it in (the words reach the turn handling later than the STT
    answered)."""

    async def stt_node(self, audio: Any, model_settings: Any) -> Any:
        async for event in Agent.default.stt_node(self, audio, model_settings):
            if (
                isinstance(event, stt.SpeechEvent)
                and event.type == stt.SpeechEventType.FINAL_TRANSCRIPT
            ):
                await asyncio.sleep(0.05)  # the spelling service's own I/O
            yield event


class ChattyOrderAgent(OrderAgent):
    """Speaks while its tool works."""

    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the caller's order up."""
        self.session.say("One moment while I check.")
        await asyncio.sleep(0.05)
        return "ships tomorrow"


class CollectIdentity(AgentTask[str]):
    """Collects the caller's name, then their date of birth, over two turns."""

    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="Collect the caller's identity.", chat_ctx=chat_ctx)
        self.name: str | None = None

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Ask for the caller's full name.")

    @function_tool
    async def record_name(self, ctx: RunContext, name: str) -> str:
        """Record the caller's full name."""
        self.name = name
        return f"name {name} recorded"

    @function_tool
    async def record_birth_date(self, ctx: RunContext, date: str) -> None:
        """Record the caller's date of birth; this completes the task."""
        self.complete(f"{self.name}, born {date}")


class Pharmacist(Agent):
    """Verifies the caller with an AgentTask before a refill."""

    def __init__(self) -> None:
        super().__init__(instructions="You refill prescriptions.")

    @function_tool
    async def verify_identity(self, ctx: RunContext) -> str:
        """Verify the caller's identity."""
        who = await CollectIdentity(chat_ctx=self.chat_ctx)
        return f"verified {who}"


class Kitchen(Agent):
    """A tool that raises, and a tool after which the agent speaks twice."""

    def __init__(self) -> None:
        super().__init__(instructions="You take food orders.")

    @function_tool
    async def dessert_menu(self, ctx: RunContext) -> str:
        """Today's desserts."""
        raise RuntimeError("the dessert menu service is down")

    @function_tool
    async def place_order(self, ctx: RunContext, item: str) -> str:
        """Order a dish."""
        self.session.generate_reply(instructions="Offer a drink with the order.")
        return f"order 42 for one {item}"


class UninterruptibleKitchen(Kitchen):
    """The kitchen, whose replies cannot be interrupted."""

    def __init__(self) -> None:
        Agent.__init__(self, instructions="You take food orders.", allow_interruptions=False)


# -- the script ------------------------------------------------------------------------------


def _after_identity(ctx: ScriptContext) -> str:
    return f"Thank you. Your identity is {ctx.tool_output}. Your refill is on its way."


RULES = [
    Rule(
        r"question about my bill|through to billing|transfer me to billing",
        tool="transfer_to_billing",
    ),
    Rule(r"something is broken", tool="transfer_to_support"),
    Rule(r"charged twice", reply="I see a duplicate charge and I have refunded it."),
    Rule(r"where is my order", tool="lookup_order", reply="Your order {output}."),
    Rule(r"check the warehouse", tool="check_warehouse", reply="The warehouse has {output}."),
    Rule(r"\brefill\b", tool="verify_identity", reply=_after_identity),
    Rule(
        r"my name is (?P<name>\w+ \w+)",
        tool="record_name",
        args={"name": "{name}"},
        reply="Thanks. What is your date of birth?",
    ),
    Rule(
        r"born on (?P<date>[\w ]+)",
        tool="record_birth_date",
        args={"date": "{date}"},
        reply=_after_identity,
    ),
    Rule(r"dessert", tool="dessert_menu", reply="Sorry, I cannot see the desserts right now."),
    Rule(
        r"like a (?P<item>\w+)",
        tool="place_order",
        args={"item": "{item}"},
        reply="Your {output} is placed.",
    ),
    Rule(r"\bhello\b", reply="Hello! How can I help you?"),
]

INSTRUCTIONS = [
    Rule(r"billing assistant", reply="Hi, this is billing. How can I help?"),
    Rule(r"full name", reply="What is your full name?"),
    Rule(r"offer a drink", reply="Would you like a drink with that?"),
]

GREETING = "Welcome to Pytest Services!"


@dataclass(frozen=True)
class Scenario:
    """One agent and what the caller says to it, turn by turn."""

    id: str
    agent: Callable[[], Agent]
    turns: tuple[tuple[str, bool], ...]
    """(phrase key or text, True when spoken from the phrase's WAV)."""

    def factory(self) -> Callable[[], tuple[AgentSession, Agent]]:
        def make() -> tuple[AgentSession, Agent]:
            session: AgentSession = AgentSession(
                stt=FixtureTextSTT(),  # hears what each synthesized fixture provably says
                vad=VAD,
                llm=ScriptedLLM(RULES, instructions=INSTRUCTIONS, greeting=GREETING),
                **eval_session_kwargs(),
            )
            return session, self.agent()

        return make


SCENARIOS = [
    Scenario("single_agent", Receptionist, (("hello", True), ("Why was I charged twice?", False))),
    Scenario("greeting_on_entry", GreeterAgent, (("hello", True),)),
    Scenario("handoff_mid_recording", Receptionist, (("bill_then_charge", True),)),
    Scenario("handoff_mid_recording_long_pause", Receptionist, (("bill_pause_charge", True),)),
    Scenario(
        "handoff_end_of_audio_turn",
        Receptionist,
        (("to_billing", True), ("Why was I charged twice?", False)),
    ),
    Scenario(
        "handoff_between_turns",
        Receptionist,
        (("Transfer me to billing", False), ("charged", True)),
    ),
    Scenario(
        "handed_off_agent_says_its_intro",
        Receptionist,
        (("Something is broken.", False), ("hello", True)),
    ),
    Scenario("tools_that_await", OrderAgent, (("order", True), ("warehouse", True))),
    Scenario("system_message_in_on_user_turn_completed", BriefedOrderAgent, (("order", True),)),
    Scenario(
        "stt_node_post_processing", SpellCheckedOrderAgent, (("order", True), ("hello", True))
    ),
    Scenario("long_pause_inside_a_fixture", OrderAgent, (("order_pause_hello", True),)),
    Scenario("uninterruptible_agent", UninterruptibleKitchen, (("pizza", True), ("hello", True))),
    Scenario("say_inside_a_tool", ChattyOrderAgent, (("order", True), ("hello", True))),
    Scenario(
        "agent_task_over_two_turns", Pharmacist, (("refill", True), ("name", True), ("born", True))
    ),
    Scenario("tool_that_raises", Kitchen, (("dessert", True),)),
    Scenario("agent_speaks_twice_in_a_turn", Kitchen, (("pizza", True), ("hello", True))),
]


def fixtures_yaml() -> str:
    """A transcript naming every phrase's WAV, for the project's synthesizer."""
    lines = ["id: corpus_fixtures", "turns:"]
    for key, text in PHRASES.items():
        lines += [f'  - user: "{text}"', f"    audio: {key}.wav"]
    return "\n".join(lines) + "\n"


def synthesize(folder: Path) -> dict[str, Path]:
    """Make every phrase's WAV with the offline default voice; returns key -> path."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    yaml_path = folder / "corpus.yaml"
    yaml_path.write_text(fixtures_yaml())
    ensure_fixtures([load_transcript_file(yaml_path)], jobs=1).raise_for_failures()
    return {key: folder / f"{key}.wav" for key in PHRASES}
