"""A Pipecat outbound bot written the way Pipecat's docs write one (copied into each pytester
project), the twin of examples/phone-outbound-livekit/outbound_agent.py: it calls a patient to remind them of an
appointment, waits for the beep on a voicemail box, and presses keys in a phone tree by
pushing an ``OutputDTMFUrgentFrame``. It does not speak first: the far end does.
Heard as audio, the beep has no words: a ``BeepWatch`` processor before the STT feeds every
audio frame to the same tone detector as the LiveKit agent's (``beep_detector.py``) and asks
the model for the message. ``REMINDER_BUG=1`` and ``IVR_BUG=1`` plant the same bugs as the
LiveKit agent's."""

from __future__ import annotations

import os
from typing import Any

import numpy as np
from beep_detector import BeepDetector
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    OutputDTMFUrgentFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat.runner.types import RunnerArguments
from pipecat.services.llm_service import FunctionCallParams
from pipecat.transports.base_transport import BaseTransport
from pipecat.workers.runner import WorkerRunner

from pytest_agent_eval.adapters.pipecat import FixtureTextSTTService, Rule, ScriptedLLMService

REMINDER_BUG = os.environ.get("REMINDER_BUG") == "1"
IVR_BUG = os.environ.get("IVR_BUG") == "1"

MESSAGE = (
    "Hi, this is Doctor Lee's office with a reminder of your appointment on Tuesday at 3. "
    "Call us back if you cannot make it. Goodbye."
)


async def press_keys(params: FunctionCallParams, keys: str) -> None:
    """Press keys on the phone line (a phone tree's menu).

    Args:
        keys: The keys to press, e.g. "2".
    """
    await params.llm.push_frame(OutputDTMFUrgentFrame.from_string(keys))
    await params.result_callback({"pressed": keys})


def _menu_key(ctx: Any) -> dict[str, Any]:
    return {"keys": ctx.group("key")}


RULES = [
    Rule(r"leave (?:me )?a message", reply=MESSAGE if REMINDER_BUG else ""),
    Rule(r"\(beep\)", reply=MESSAGE),
    # Heard as audio, a greeting comes phrase by phrase: its first ("you have reached Sam")
    # already says it is a voicemail box, so wait.
    Rule(r"you have reached", reply=""),
    Rule(
        r"press (?P<key>\d)" if IVR_BUG else r"appointments?,? press (?P<key>\d)",
        tool="press_keys",
        args=_menu_key,
        reply="",
    ),
    Rule(r"appointments desk", reply="Hi, I am calling to confirm an appointment."),
    Rule(r"works for me", reply="Great, we will see you on Tuesday at 3. Goodbye."),
    Rule(r"hello", reply="Hi, this is Doctor Lee's office. Can you make Tuesday at 3?"),
]


# Heard as audio, the beep has no words: the bot hears it with a tone detector on its audio
# path (`beep_detector`, the same as the LiveKit agent's), then asks the model for its message.
BEEP_HEARD = "The voicemail beep just sounded: leave your message now."
INSTRUCTIONS = [Rule(r"beep just sounded", reply=MESSAGE)]


class BeepWatch(FrameProcessor):
    """Every audio frame the bot hears passes the beep detector on its way to the STT."""

    def __init__(self) -> None:
        super().__init__()
        self._detector = BeepDetector()

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, InputAudioRawFrame):
            samples = np.frombuffer(frame.audio, dtype=np.int16)
            if self._detector.push(samples, frame.sample_rate):
                heard = [{"role": "system", "content": BEEP_HEARD}]
                await self.push_frame(LLMMessagesAppendFrame(heard, run_llm=True))  # type: ignore[arg-type]
        await self.push_frame(frame, direction)


async def run_bot(transport: BaseTransport, runner_args: RunnerArguments) -> None:
    llm = ScriptedLLMService(
        RULES, instructions=INSTRUCTIONS, default_reply="Sorry, could you repeat that?"
    )
    context = LLMContext(
        [{"role": "system", "content": "You call patients to remind them of appointments."}]
    )
    context.set_tools([press_keys])  # type: ignore[list-item]
    user_aggregator, assistant_aggregator = LLMContextAggregatorPair(
        context, user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
    )
    pipeline = Pipeline(
        [
            transport.input(),
            BeepWatch(),
            FixtureTextSTTService(),
            user_aggregator,
            llm,
            transport.output(),
            assistant_aggregator,
        ]
    )
    worker = PipelineWorker(pipeline, params=PipelineParams())
    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)
    await runner.add_workers(worker)

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: BaseTransport, client: object) -> None:
        await runner.cancel()

    await runner.run()
