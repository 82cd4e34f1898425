"""A LiveKit outbound agent written from LiveKit's telephony docs: it calls a patient to
remind them of an appointment. It waits for whoever answers to speak first; on a voicemail box
it waits for the beep before leaving its message; in a phone tree it presses the key of the
appointments desk with LiveKit's ``send_dtmf_events`` tool (``publish_dtmf`` on the job room's
local participant). The scripted LLM stands in for a real model.

Heard as audio (``evals_heard/``), the beep has no words: the agent hears it the way outbound
agents do in practice, with a tone detector (``beep_detector.py``) on the audio its STT gets
(its ``stt_node``), and then asks the model for its message (``generate_reply`` with
instructions).

Two planted bugs, each turning one eval red: ``REMINDER_BUG=1``, the agent starts its message
as soon as the greeting plays (over it, before the beep); ``IVR_BUG=1``, it presses the first
key it hears in a menu."""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import numpy as np
from beep_detector import BeepDetector
from livekit import rtc
from livekit.agents import Agent, AgentSession, ModelSettings
from livekit.agents.beta.tools import send_dtmf_events
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)

REMINDER_BUG = os.environ.get("REMINDER_BUG") == "1"
IVR_BUG = os.environ.get("IVR_BUG") == "1"

MESSAGE = (
    "Hi, this is Doctor Lee's office with a reminder of your appointment on Tuesday at 3. "
    "Call us back if you cannot make it. Goodbye."
)


def _menu_key(ctx: Any) -> dict[str, Any]:
    return {"events": [ctx.group("key")]}


RULES = [
    # A voicemail greeting: wait for the beep (say nothing) before leaving the message.
    Rule(r"leave (?:me )?a message", reply=MESSAGE if REMINDER_BUG else ""),
    Rule(r"\(beep\)", reply=MESSAGE),
    # Heard as audio, a greeting comes phrase by phrase: its first ("you have reached Sam")
    # already says it is a voicemail box, so wait.
    Rule(r"you have reached", reply=""),
    # A phone tree: press the key for appointments (the buggy agent: the first key it hears).
    Rule(
        r"press (?P<key>\d)" if IVR_BUG else r"appointments?,? press (?P<key>\d)",
        tool="send_dtmf_events",
        args=_menu_key,
        reply="",
    ),
    Rule(r"appointments desk", reply="Hi, I am calling to confirm an appointment."),
    Rule(r"works for me", reply="Great, we will see you on Tuesday at 3. Goodbye."),
    Rule(r"hello", reply="Hi, this is Doctor Lee's office. Can you make Tuesday at 3?"),
]


# Heard as audio, the beep has no words: the agent hears it with a tone detector on its audio
# path (`beep_detector`), then asks the model for its message.
BEEP_HEARD = "The voicemail beep just sounded: leave your message now."
INSTRUCTIONS = [Rule(r"beep just sounded", reply=MESSAGE)]

_VAD: Any = None


class ReminderAgent(Agent):
    def __init__(self) -> None:
        super().__init__(
            instructions="You call patients to remind them of appointments.",
            tools=[send_dtmf_events],
        )

    async def stt_node(
        self, audio: AsyncIterable[rtc.AudioFrame], model_settings: ModelSettings
    ) -> Any:
        # Every frame the agent hears passes the beep detector on its way to the STT.
        return Agent.default.stt_node(self, self._beep_watch(audio), model_settings)

    async def _beep_watch(
        self, audio: AsyncIterable[rtc.AudioFrame]
    ) -> AsyncIterator[rtc.AudioFrame]:
        detector = BeepDetector()
        async for frame in audio:
            samples = np.frombuffer(frame.data, dtype=np.int16)
            if detector.push(samples, frame.sample_rate):
                self.session.generate_reply(instructions=BEEP_HEARD)
            yield frame


def make_session() -> tuple[AgentSession, Agent]:
    global _VAD
    if _VAD is None:  # loaded once per process, on first use
        _VAD = silero.VAD.load()
    llm = ScriptedLLM(
        RULES, instructions=INSTRUCTIONS, default_reply="Sorry, could you repeat that?"
    )
    session: AgentSession = AgentSession(
        stt=FixtureTextSTT(), vad=_VAD, llm=llm, **eval_session_kwargs()
    )
    return session, ReminderAgent()
