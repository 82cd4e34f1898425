"""A small Pipecat restaurant bot, written the way Pipecat's examples write one, with offline
services: `create_services()` is the one place to swap in real STT, LLM and TTS.

The pipeline is the usual one (transport input, STT, user aggregator with Silero VAD and the
default smart-turn v3 stop strategy, LLM with two direct functions, TTS, transport output,
assistant aggregator); `run_bot(transport, runner_args)` builds and runs it, greets the caller
when the client connects, and ends when the client disconnects.
"""

from __future__ import annotations

import re

from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import LLMRunFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.runner.types import RunnerArguments
from pipecat.services.llm_service import FunctionCallParams
from pipecat.transports.base_transport import BaseTransport
from pipecat.workers.runner import WorkerRunner

from pytest_agent_eval.adapters.pipecat import (
    FixtureTextSTTService,
    Rule,
    ScriptContext,
    ScriptedLLMService,
    SynthesizerTTSService,
    parse_number,
)

__all__ = ["RULES", "create_services", "run_bot"]

MENU = {"vegan": "mushroom risotto and lentil curry", "gluten": "grilled fish and polenta"}
GREETING = "Welcome to Chez Pipecat! How can I help?"


async def book_table(params: FunctionCallParams, party_size: int, time: str, name: str) -> None:
    """Book a table.

    Args:
        party_size: Number of guests.
        time: Time of the booking, 24-hour HH:MM.
        name: Name the booking is under.
    """
    await params.result_callback(
        {"party_size": party_size, "time": time, "name": name, "reference": "BK-101"}
    )


async def check_menu(params: FunctionCallParams, diet: str) -> None:
    """Find dishes for a diet.

    Args:
        diet: "vegan" or "gluten" (free).
    """
    await params.result_callback({"dishes": MENU.get(diet, "nothing special")})


NAME = r"I am (\w+)"


def booking_args(ctx: ScriptContext) -> dict[str, object]:
    hour = (parse_number(ctx.group("hour")) or 0) + (
        12 if ctx.group("half", "").lower() == "pm" else 0
    )
    said = re.search(NAME, ctx.user, re.IGNORECASE)
    return {
        "party_size": parse_number(ctx.group("party")),
        "time": f"{hour:02d}:00",
        "name": said.group(1) if said else ctx.recall(NAME),
    }


# What the scripted LLM does: what a real model would decide, as regex rules.
RULES = [
    Rule(
        r"table for (?P<party>\w+) at (?P<hour>\w+) (?P<half>[ap]m)",
        tool="book_table",
        args=booking_args,
        reply=lambda ctx: f"Booked, reference {ctx.tool_result['reference']}.",
    ),
    Rule(
        r"(?P<diet>vegan|gluten)",
        tool="check_menu",
        args={"diet": "{diet}"},
        reply=lambda ctx: f"We have {ctx.tool_result['dishes']}.",
    ),
    Rule(r"what name", reply=lambda ctx: f"It is under {ctx.recall(NAME)}."),
    Rule(
        r"tell me about the menu",
        reply="Our menu changes with the seasons. This week we have a mushroom risotto, a "
        "lentil curry, grilled fish with polenta, and a chocolate tart for dessert.",
    ),
]


def create_services() -> tuple[FixtureTextSTTService, ScriptedLLMService, SynthesizerTTSService]:
    """The bot's STT, LLM and TTS: offline ones here; swap in your real services."""
    stt = FixtureTextSTTService()
    llm = ScriptedLLMService(RULES, greeting=GREETING)
    tts = SynthesizerTTSService()
    return stt, llm, tts


async def run_bot(transport: BaseTransport, runner_args: RunnerArguments) -> None:
    """The bot's entrypoint, as Pipecat's runner calls it."""
    stt, llm, tts = create_services()
    context = LLMContext(
        [{"role": "system", "content": "You are the booking assistant of Chez Pipecat."}],
        tools=[book_table, check_menu],
    )
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(
        context, user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
    )
    pipeline = Pipeline(
        [
            transport.input(),
            stt,
            user_aggregator,
            llm,
            tts,
            transport.output(),
            assistant_aggregator,
        ]
    )
    worker = PipelineWorker(
        pipeline, params=PipelineParams(enable_metrics=True, enable_usage_metrics=True)
    )
    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)
    await runner.add_workers(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport: BaseTransport, client: object) -> None:
        context.add_message({"role": "developer", "content": "Greet the caller."})
        await worker.queue_frames([LLMRunFrame()])

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: BaseTransport, client: object) -> None:
        await runner.cancel()

    await runner.run()
