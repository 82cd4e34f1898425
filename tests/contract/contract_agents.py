"""Agents the contract corpus needs that the adapters' own corpora do not have: a LiveKit agent
on a realtime model with the classic corpus's tools (a quick, a slow and a failing one), its
silent and crashing twins, a model whose rule callback raises, and a classic LiveKit agent with a voice to barge in on.

Built the way users build them, on the package's scripted models. Imported at collection.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from corpus_agents import VAD
from livekit.agents import Agent, AgentSession, RunContext, function_tool
from realtime_agents import BILLING_RULES, FRONT_DESK_RULES, INSTRUCTIONS, BillingAgent

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    Rule,
    ScriptedLLM,
    ScriptedRealtimeModel,
    SynthesizerTTS,
    eval_session_kwargs,
)

DESK_GREETING = "Welcome to the order desk!"

DESK_RULES = [
    Rule(r"\bhello\b", reply="Hello! How can I help you?"),
    Rule(r"where is my order", tool="lookup_order", reply="Your order {output}."),
    Rule(r"check the warehouse", tool="check_warehouse", reply="The warehouse has {output}."),
    Rule(r"dessert", tool="dessert_menu", reply="Sorry, I cannot see the desserts right now."),
    Rule(r"through to billing", tool="transfer_to_billing", preamble="Transferring you."),
]


class RealtimeDesk(Agent):
    """Greets; a quick tool, a slow one, one that raises; hands billing questions over."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the order desk.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the caller's order up."""
        await asyncio.sleep(0.05)
        return "ships tomorrow"

    @function_tool
    async def check_warehouse(self, ctx: RunContext) -> str:
        """Ask the warehouse about stock."""
        await asyncio.sleep(2.0)  # a slow backend
        return "two pallets in stock"

    @function_tool
    async def dessert_menu(self, ctx: RunContext) -> str:
        """Today's desserts."""
        raise RuntimeError("the dessert menu service is down")

    @function_tool
    async def get_weather(self, ctx: RunContext, city: str) -> str:
        """Look up the weather in a city (what the barge-in asks)."""
        return f"It is rainy in {city}"

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to billing."""
        return BillingAgent(chat_ctx=self.chat_ctx)


class SilentRealtimeDesk(RealtimeDesk):
    @function_tool
    async def check_warehouse(self, ctx: RunContext) -> str:
        """Ask the warehouse about stock."""
        await asyncio.Event().wait()  # the warehouse never answers
        return "never"


def broken_reply(ctx: Any) -> str:
    """A rule's reply function of the user's that raises: the model the agent is given breaks
    in the user's code, though our scripted model calls it."""
    raise RuntimeError("the model broke")


BROKEN_MODEL_RULES = [Rule(r"\bhello\b", reply=broken_reply)]
"""Ahead of an agent's rules: its model breaks on "hello" (`broken_reply`)."""


class BrokenRealtimeDesk(RealtimeDesk):
    async def on_user_turn_completed(self, turn_ctx: Any, new_message: Any) -> None:
        raise ValueError("CRM lookup failed")


def realtime_factory(
    agent: type[Agent] = RealtimeDesk, rules: Sequence[Rule] = ()
) -> Callable[[], tuple[Any, Agent]]:
    """Sessions on a scripted realtime model whose turns the session's VAD takes; ``rules``
    come first."""

    def make() -> tuple[AgentSession[Any], Agent]:
        model = ScriptedRealtimeModel(
            [*rules, *DESK_RULES, *FRONT_DESK_RULES, *BILLING_RULES],
            greeting=DESK_GREETING,
            instructions=INSTRUCTIONS,
        )
        session: AgentSession[Any] = AgentSession(llm=model, vad=VAD, **eval_session_kwargs())
        return session, agent()

    return make


STORY = (
    "Once upon a time there was a small robot who lived by the sea. Every morning it walked "
    "along the beach and counted the waves. One day it found a bottle with a letter inside."
)
VOICE_RULES = [
    Rule(r"story", reply=STORY),
    Rule(r"\bstop\b", reply="Okay, I will stop."),
]


def speaking_factory(*, interruptible: bool = True) -> Callable[[], tuple[Any, Agent]]:
    """A classic pipeline agent with a voice (the synthesizer's), to barge in on."""

    def make() -> tuple[AgentSession[Any], Agent]:
        session: AgentSession[Any] = AgentSession(
            stt=FixtureTextSTT(),
            vad=VAD,
            llm=ScriptedLLM(VOICE_RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        return session, Agent(instructions="Tell stories.", allow_interruptions=interruptible)

    return make


# -- memory: what the caller said in one turn, recalled in a later one -------------------------

MEMORY_PHRASES = {
    "my_name": "My name is Maria Lopez.",
    "ask_name": "What is my name?",
}


def _recall_name(ctx: Any) -> str:
    name = ctx.recall(r"my name is (\w+ \w+)")
    return f"Your name is {name or 'unknown to me'}."


MEMORY_RULES = [
    Rule(r"what is my name", reply=_recall_name),
    Rule(r"my name is", reply="Nice to meet you."),
]


def synthesize_memory(folder: Path) -> dict[str, Path]:
    """The memory phrases' WAVs, made with the offline default voice; key -> path."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    lines = ["id: memory_fixtures", "turns:"]
    for key, text in MEMORY_PHRASES.items():
        lines += [f'  - user: "{text}"', f"    audio: {key}.wav"]
    (folder / "memory.yaml").write_text("\n".join(lines) + "\n")
    ensure_fixtures([load_transcript_file(folder / "memory.yaml")], jobs=1).raise_for_failures()
    return {key: folder / f"{key}.wav" for key in MEMORY_PHRASES}


def remembering_factory() -> Callable[[], tuple[Any, Agent]]:
    """A classic pipeline agent that answers from what the caller said before."""

    def make() -> tuple[AgentSession[Any], Agent]:
        session: AgentSession[Any] = AgentSession(
            stt=FixtureTextSTT(), vad=VAD, llm=ScriptedLLM(MEMORY_RULES), **eval_session_kwargs()
        )
        return session, Agent(instructions="Remember the caller.")

    return make


def remembering_realtime_factory() -> Callable[[], tuple[Any, Agent]]:
    """The same on a scripted realtime model (whose turns the session's VAD takes)."""

    def make() -> tuple[AgentSession[Any], Agent]:
        model = ScriptedRealtimeModel(MEMORY_RULES)
        session: AgentSession[Any] = AgentSession(llm=model, vad=VAD, **eval_session_kwargs())
        return session, Agent(instructions="Remember the caller.")

    return make


def remembering_bot(transport: Any) -> Any:
    """The same as a Pipecat bot, built as the Pipecat corpus builds its bots."""
    from corpus_bots import voice_pipeline
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    from pytest_agent_eval.adapters.pipecat import ScriptedLLMService

    llm = ScriptedLLMService(MEMORY_RULES)
    context = LLMContext([{"role": "system", "content": "Remember the caller."}])
    pair = LLMContextAggregatorPair(
        context, user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
    )
    return PipelineWorker(voice_pipeline(transport, llm, pair), params=PipelineParams())
