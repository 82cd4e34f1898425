"""Pipecat's own function-calling bot (examples/function-calling/function-calling-openai.py in
pipecat-ai/pipecat), as that example writes it: two direct functions advertised in the
context, a "Let me check on that." spoken as function calls start, an introduction when the
client connects, the runner cancelled when it disconnects.

Only the services differ: the example's OpenAI STT, LLM and TTS need keys and a network, so
``create_services`` builds offline ones, the LLM playing what the model decides as rules.
"""

from __future__ import annotations

from loguru import logger
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import LLMRunFrame, TTSSpeakFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker, ProcessorUnusablePolicy
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
    ScriptedLLMService,
    SynthesizerTTSService,
)


async def get_current_weather(params: FunctionCallParams, location: str, format: str):
    """Get the current weather.

    Args:
        location: The city and state, e.g. "San Francisco, CA".
        format: The temperature unit to use. Must be either "celsius" or "fahrenheit". Infer this from the user's location.
    """
    await params.result_callback({"conditions": "nice", "temperature": "75"})


async def get_restaurant_recommendation(params: FunctionCallParams, location: str):
    """Get a restaurant recommendation.

    Args:
        location: The city and state, e.g. "San Francisco, CA".
    """
    await params.result_callback({"name": "The Golden Dragon"})


# What the example's model does with these functions, as rules.
RULES = [
    Rule(
        r"weather (?:like )?in san francisco",
        tool="get_current_weather",
        args={"location": "San Francisco, CA", "format": "fahrenheit"},
        reply=lambda ctx: (
            f"It is {ctx.tool_result['conditions']} in San Francisco, "
            f"{ctx.tool_result['temperature']} degrees."
        ),
    ),
    Rule(
        r"where should I eat",
        tool="get_restaurant_recommendation",
        args={"location": "San Francisco, CA"},
        reply=lambda ctx: f"Try {ctx.tool_result['name']}.",
    ),
]


def create_services():
    stt = FixtureTextSTTService()
    tts = SynthesizerTTSService()
    llm = ScriptedLLMService(
        RULES,
        instructions=[Rule(r"introduce yourself", reply="Hi! I can tell you the weather.")],
    )
    return stt, tts, llm


async def run_bot(transport: BaseTransport, runner_args: RunnerArguments):
    logger.info("Starting bot")

    stt, tts, llm = create_services()

    @llm.event_handler("on_function_calls_started")
    async def on_function_calls_started(service, function_calls):
        await tts.queue_frame(TTSSpeakFrame("Let me check on that."))

    context = LLMContext(tools=[get_current_weather, get_restaurant_recommendation])
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer()),
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
        pipeline,
        params=PipelineParams(
            enable_metrics=True,
            enable_usage_metrics=True,
        ),
        processor_unusable_policy=ProcessorUnusablePolicy.END,
    )

    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)

    await runner.add_workers(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport, client):
        logger.info("Client connected")
        # Kick off the conversation.
        context.add_message(
            {"role": "developer", "content": "Please introduce yourself to the user."}
        )
        await worker.queue_frames([LLMRunFrame()])

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport, client):
        logger.info("Client disconnected")
        await runner.cancel()

    await runner.run()
