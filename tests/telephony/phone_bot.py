"""A Pipecat phone bot written the way Pipecat's docs write one (copied into each pytester
project): the caller's keypad through Pipecat's `DTMFAggregator`, which hands the LLM
"DTMF: 4521#" as the user's words, and a function that presses keys on the line by pushing an
``OutputDTMFUrgentFrame`` (or, with ``PHONE_BOT_IN_BAND=1``, by playing the keys' tones in its
own audio, in band). ``BUGGY`` is the planted bug: the bot says it pressed the key and never
sends it."""

from __future__ import annotations

import os

from pipecat.audio.dtmf.types import KeypadEntry
from pipecat.audio.dtmf.utils import load_dtmf_audio
from pipecat.frames.frames import LLMRunFrame, OutputAudioRawFrame, OutputDTMFUrgentFrame
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.dtmf_aggregator import DTMFAggregator
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.runner.types import RunnerArguments
from pipecat.services.llm_service import FunctionCallParams
from pipecat.transports.base_transport import BaseTransport
from pipecat.workers.runner import WorkerRunner

from pytest_agent_eval.adapters.pipecat import Rule, ScriptedLLMService

BUGGY = os.environ.get("PHONE_BOT_BUG") == "1"
IN_BAND = os.environ.get("PHONE_BOT_IN_BAND") == "1"


async def press_keys(params: FunctionCallParams, keys: str) -> None:
    """Press keys on the phone line (a phone tree's menu).

    Args:
        keys: The keys to press, e.g. "2".
    """
    if BUGGY:
        pass
    elif IN_BAND:  # the keys' tones in the bot's own audio, as a line without DTMF events needs
        for key in keys:
            tone = await load_dtmf_audio(KeypadEntry(key), sample_rate=8000)
            await params.llm.push_frame(OutputAudioRawFrame(tone, sample_rate=8000, num_channels=1))
    else:
        await params.llm.push_frame(OutputDTMFUrgentFrame.from_string(keys))
    await params.result_callback({"pressed": keys})


RULES = [
    Rule(r"DTMF: (?P<account>\d+)", reply="Account {account}: your balance is 42 euros."),
    Rule(r"billing", tool="press_keys", args={"keys": "2"}, reply="I pressed 2 for billing."),
    Rule(r"account", reply="Please enter your account number on the keypad, then pound."),
]


async def run_bot(transport: BaseTransport, runner_args: RunnerArguments) -> None:
    llm = ScriptedLLMService(RULES, greeting="Bank line, how can I help?")
    context = LLMContext([{"role": "system", "content": "You answer a bank's phone line."}])
    context.set_tools([press_keys])  # type: ignore[list-item]
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(context)
    pipeline = Pipeline(
        [
            transport.input(),
            DTMFAggregator(),
            user_aggregator,
            llm,
            transport.output(),
            assistant_aggregator,
        ]
    )
    worker = PipelineWorker(pipeline, params=PipelineParams())
    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)
    await runner.add_workers(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport: BaseTransport, client: object) -> None:
        await worker.queue_frames([LLMRunFrame()])

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: BaseTransport, client: object) -> None:
        await runner.cancel()

    await runner.run()
