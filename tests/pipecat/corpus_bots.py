"""A corpus of Pipecat bots built the way Pipecat's examples build them, for the
speed-invariance tests.

Each bot is ``transport.input() -> STT -> user aggregator (Silero VAD) -> LLM -> TTS ->
transport.output() -> assistant aggregator`` with the offline services, as a
``PipelineWorker``: a single bot, one that greets on start, functions that await 50 ms and
2 s, a function that raises, a two-node Pipecat Flow, the smart-turn v3 analyzer, a fixture
of two sentences with a 2 s pause, and a long reply the caller interrupts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pipecat.flows
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import LLMRunFrame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.services.llm_service import FunctionCallParams
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import (
    SpeechTimeoutUserTurnStopStrategy,
)
from pipecat.turns.user_stop.turn_analyzer_user_turn_stop_strategy import (
    TurnAnalyzerUserTurnStopStrategy,
)
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from pytest_agent_eval.adapters.pipecat import (
    FixtureTextSTTService,
    InProcessTransport,
    Rule,
    ScriptedLLMService,
    SynthesizerTTSService,
)
from pytest_agent_eval.models import InterruptConfig

GREETING = "Welcome to Chez Pipecat. How can I help?"

RULES = [
    Rule(r"\bhello\b", reply="Hello! How can I help you?"),
    Rule(
        r"weather in (?P<city>\w+)",
        tool="get_weather",
        args={"city": "{city}"},
        reply=lambda ctx: f"It is {ctx.tool_result['conditions']} in {ctx.group('city')}.",
    ),
    Rule(
        r"forecast",
        tool="get_forecast",
        reply=lambda ctx: f"Tomorrow will be {ctx.tool_result['sky']}.",
    ),
    Rule(
        r"dessert",
        tool="dessert_menu",
        reply=lambda ctx: (
            "Sorry, I cannot see the desserts right now."
            if ctx.tool_error
            else f"We have {ctx.tool_output}."
        ),
    ),
    Rule(r"question about my bill", reply="Go on."),
    Rule(r"charged twice", reply="I have refunded the duplicate charge."),
    Rule(
        r"story",
        reply="Once upon a time there was a small robot who lived by the sea. "
        "Every morning it walked along the beach and counted the waves. "
        "One day it found a bottle with a letter inside.",
    ),
    Rule(r"\bstop\b", reply="Okay, I will stop."),
    Rule(r"where is my order", reply="Your order ships tomorrow."),
    Rule(
        r"free tables",
        tool="check_tables",
        reply=lambda ctx: f"We have {ctx.tool_result['free']} tables free tonight.",
    ),
]


async def get_weather(params: FunctionCallParams) -> None:
    await asyncio.sleep(0.05)  # a quick lookup
    await params.result_callback({"conditions": "sunny"})


async def get_forecast(params: FunctionCallParams) -> None:
    await asyncio.sleep(2.0)  # a slow backend
    await params.result_callback({"sky": "rainy"})


async def dessert_menu(params: FunctionCallParams) -> None:
    raise RuntimeError("the dessert menu service is down")


CHECKING = "One moment, let me check the tables."


async def check_tables(params: FunctionCallParams) -> None:
    """Says a line of its own while the slow booking system answers (Pipecat's idiom: a
    ``TTSSpeakFrame`` pushed from the function handler)."""
    await params.llm.push_frame(TTSSpeakFrame(CHECKING))
    await asyncio.sleep(0.5)  # the booking system's own time
    await params.result_callback({"free": 3})


FUNCTIONS = {
    "get_weather": get_weather,
    "get_forecast": get_forecast,
    "dessert_menu": dessert_menu,
    "check_tables": check_tables,
}


def offered_tools(names: Sequence[str] = tuple(FUNCTIONS)) -> ToolsSchema:
    """The corpus's functions as the context offers them to the model (a scripted rule may
    call only what is offered, as a real model)."""
    properties = {"get_weather": {"city": {"type": "string"}}}
    return ToolsSchema(
        standard_tools=[
            FunctionSchema(
                name=name,
                description=name.replace("_", " "),
                properties=properties.get(name, {}),
                required=list(properties.get(name, {})),
            )
            for name in names
        ]
    )


def voice_bot(
    transport: InProcessTransport,
    *,
    greeting: str | None = None,
    smart_turn: bool = False,
    instructions: Sequence[Rule] = (),
    stt: Any = None,
    after_llm: Sequence[Any] = (),
) -> tuple[PipelineWorker, LLMContext, ScriptedLLMService, LLMContextAggregatorPair]:
    """The corpus's bot, as Pipecat's examples build one (``after_llm``: processors of the
    bot's own between its LLM and its TTS)."""
    llm = ScriptedLLMService(RULES, greeting=greeting, instructions=instructions)
    for name, handler in FUNCTIONS.items():
        llm.register_function(name, handler)
    context = LLMContext(
        [{"role": "system", "content": "You are a helpful restaurant assistant."}],
        tools=offered_tools(),
    )
    stop = (
        [TurnAnalyzerUserTurnStopStrategy(turn_analyzer=LocalSmartTurnAnalyzerV3())]
        if smart_turn
        else [SpeechTimeoutUserTurnStopStrategy()]
    )
    pair = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(), user_turn_strategies=UserTurnStrategies(stop=stop)
        ),
    )
    pipeline = voice_pipeline(transport, llm, pair, stt=stt, after_llm=after_llm)
    worker = PipelineWorker(
        pipeline, params=PipelineParams(enable_metrics=True, enable_usage_metrics=True)
    )
    if greeting is not None:

        @transport.event_handler("on_client_connected")
        async def on_client_connected(transport: Any, client: Any) -> None:
            context.add_message({"role": "developer", "content": "Greet the caller."})
            await worker.queue_frames([LLMRunFrame()])

    return worker, context, llm, pair


def voice_pipeline(
    transport: InProcessTransport,
    llm: ScriptedLLMService,
    pair: LLMContextAggregatorPair,
    *,
    stt: Any = None,
    after_llm: Sequence[Any] = (),
) -> Pipeline:
    """The processors of a voice bot around ``transport`` (``stt``: the fixture's text)."""
    return Pipeline(
        [
            transport.input(),
            stt if stt is not None else FixtureTextSTTService(),
            pair.user(),
            llm,
            *after_llm,
            SynthesizerTTSService(),
            transport.output(),
            pair.assistant(),
        ]
    )


def single_bot(transport: InProcessTransport) -> PipelineWorker:
    return voice_bot(transport)[0]


def greeting_bot(transport: InProcessTransport) -> PipelineWorker:
    return voice_bot(transport, greeting=GREETING)[0]


def smart_turn_bot(transport: InProcessTransport) -> PipelineWorker:
    return voice_bot(transport, smart_turn=True)[0]


# -- a two-node flow ------------------------------------------------------------------------------

FLOW_RULES = [
    Rule(r"ask whether they want a table", reply="Welcome! Would you like to book a table?"),
    Rule(r"ask how many people", reply="For how many people?"),
    Rule(r"confirm the booking for (?P<party>\w+)", reply="Your table for {party} is booked."),
]


def flows_bot_on(flows: Any) -> Callable[[InProcessTransport], PipelineWorker]:
    """The two-node flow bot on a Flows package: ``pipecat.flows`` (bundled with pipecat-ai)
    or ``pipecat_flows`` (the separate pipecat-ai-flows distribution); the same code."""

    def flows_bot(transport: InProcessTransport) -> PipelineWorker:
        worker, _context, llm, pair = voice_bot(transport, instructions=FLOW_RULES)
        llm.rules = [
            Rule(r"book a table", tool="start_booking"),
            Rule(r"(?P<size>\w+) people", tool="record_party", args={"size": "{size}"}),
        ]
        flow_manager = flows.FlowManager(worker=worker, llm=llm, context_aggregator=pair)

        async def record_party(args: Any, flow_manager: Any) -> tuple[Any, Any]:
            flow_manager.state["party"] = args["size"]
            return {"party": args["size"]}, done_node(flows, args["size"])

        async def start_booking(args: Any, flow_manager: Any) -> tuple[Any, Any]:
            return {"status": "booking"}, party_node(flows, record_party)

        @transport.event_handler("on_client_connected")
        async def on_client_connected(transport: Any, client: Any) -> None:
            await flow_manager.initialize(greeting_node(flows, start_booking))

        return worker

    return flows_bot


def standalone_flows_bot(transport: InProcessTransport) -> PipelineWorker:
    """`flows_bot` on the separate ``pipecat_flows`` (imported here: it warns at import)."""
    import pipecat_flows

    return flows_bot_on(pipecat_flows)(transport)


def greeting_node(flows: Any, start_booking: Any) -> Any:
    return flows.NodeConfig(
        name="greeting",
        role_message="You are a booking assistant.",
        task_messages=[{"role": "developer", "content": "Ask whether they want a table."}],
        functions=[
            flows.FlowsFunctionSchema(
                name="start_booking",
                description="Start a booking.",
                properties={},
                required=[],
                handler=start_booking,
            )
        ],
    )


def party_node(flows: Any, record_party: Any) -> Any:
    return flows.NodeConfig(
        name="party_size",
        task_messages=[{"role": "developer", "content": "Ask how many people are coming."}],
        functions=[
            flows.FlowsFunctionSchema(
                name="record_party",
                description="Record the party size.",
                properties={"size": {"type": "integer"}},
                required=["size"],
                handler=record_party,
            )
        ],
    )


def done_node(flows: Any, size: Any) -> Any:
    return flows.NodeConfig(
        name="booked",
        task_messages=[{"role": "developer", "content": f"Confirm the booking for {size}."}],
        functions=[],
    )


flows_bot = flows_bot_on(pipecat.flows)


# -- the scenarios --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scenario:
    """A bot and what the caller does: each turn a phrase key (spoken) or text, with the
    turn's extra fields."""

    id: str
    bot: Callable[[InProcessTransport], Any]
    turns: tuple[tuple[str, bool], ...]
    extra: dict[int, dict[str, Any]] = field(default_factory=dict)


SCENARIOS = [
    Scenario("single_bot", single_bot, (("hello", True), ("Do you have dessert?", False))),
    Scenario("greeting_on_start", greeting_bot, (("hello", True),)),
    Scenario("functions_that_await", single_bot, (("weather", True), ("forecast", True))),
    Scenario("function_that_raises", single_bot, (("dessert", True),)),
    Scenario("flows_two_nodes", flows_bot, (("book", True), ("two", True))),
    # The same flow on the separate pipecat-ai-flows distribution (pipecat_flows).
    Scenario(
        "flows_two_nodes_pipecat_flows", standalone_flows_bot, (("book", True), ("two", True))
    ),
    Scenario("smart_turn_v3", smart_turn_bot, (("order", True), ("hello", True))),
    Scenario("two_sentences_2s_pause", single_bot, (("bill_pause_charge", True),)),
    Scenario(
        "function_that_speaks",
        single_bot,
        (("hello", True), ("Do you have free tables tonight?", False)),
    ),
    Scenario(
        "barge_in",
        single_bot,
        (("story", True), ("stop", True)),
        extra={1: {"interrupt": InterruptConfig(stop_within_ms=1500, after_ms=1500)}},
    ),
]
