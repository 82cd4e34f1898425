"""A Pipecat bot that ends the call, written the way Pipecat's docs end one: an ``end_call``
function, called after the bot said goodbye, pushes an ``EndTaskFrame`` upstream
(``HANG_UP_BOT_FRAME=end_worker``: its newer name, ``EndWorkerFrame``) and the worker runs
the pipeline down. The scripted LLM stands in for a real model. ``HANG_UP_BOT_BUG=1`` plants
the bug: the bot says goodbye and never ends the call. ``HANG_UP_BOT_FRAME=end`` has the
function queue an ``EndFrame`` on the worker instead, and ``cancel`` a ``CancelFrame`` before
it returns (the pipeline is cut with the function still running)."""

from __future__ import annotations

import os

from pipecat.frames.frames import (
    CancelFrame,
    EndFrame,
    EndTaskFrame,
    EndWorkerFrame,
    LLMRunFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.processors.frame_processor import FrameDirection
from pipecat.runner.types import RunnerArguments
from pipecat.services.llm_service import FunctionCallParams
from pipecat.transports.base_transport import BaseTransport
from pipecat.workers.runner import WorkerRunner

from pytest_agent_eval.adapters.pipecat import Rule, ScriptedLLMService

BUGGY = os.environ.get("HANG_UP_BOT_BUG") == "1"
FRAME = os.environ.get("HANG_UP_BOT_FRAME", "end_task")

WORKERS: list[PipelineWorker] = []


async def end_call(params: FunctionCallParams) -> None:
    """End the call when the caller says goodbye."""
    if FRAME == "cancel" and not BUGGY:  # cut at once: the function never returns
        await WORKERS[-1].queue_frame(CancelFrame())
        return
    await params.result_callback({"status": "call ended"})
    if BUGGY:
        return
    if FRAME == "end":
        await WORKERS[-1].queue_frame(EndFrame())
    elif FRAME == "end_worker":  # EndTaskFrame's name since Pipecat 1.4
        await params.llm.push_frame(EndWorkerFrame(), FrameDirection.UPSTREAM)
    else:
        await params.llm.push_frame(EndTaskFrame(), FrameDirection.UPSTREAM)


RULES = [
    Rule(r"goodbye", preamble="Goodbye, thanks for calling!", tool="end_call"),
    Rule(r"hello", reply="Pharmacy, how can I help?"),
]


async def run_bot(transport: BaseTransport, runner_args: RunnerArguments) -> None:
    llm = ScriptedLLMService(RULES, greeting="Pharmacy, how can I help?")
    context = LLMContext([{"role": "system", "content": "You answer a pharmacy's phone line."}])
    context.set_tools([end_call])  # type: ignore[list-item]
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(context)
    pipeline = Pipeline(
        [transport.input(), user_aggregator, llm, transport.output(), assistant_aggregator]
    )
    worker = PipelineWorker(pipeline, params=PipelineParams())
    WORKERS.append(worker)
    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)
    await runner.add_workers(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport: BaseTransport, client: object) -> None:
        await worker.queue_frames([LLMRunFrame()])

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: BaseTransport, client: object) -> None:
        await runner.cancel()

    await runner.run()
