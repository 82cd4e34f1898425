"""Keys a LiveKit agent plays as tones in its own reply audio (in band, no ``publish_dtmf``)
count as sent: a real in-process session speaking with the offline voice, its reply audio
captured and heard by the Goertzel detector (`voice._dtmf`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from livekit import rtc
from livekit.agents import Agent, AgentSession, ModelSettings, RunContext, function_tool

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import (
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    SynthesizerTTS,
    eval_session_kwargs,
)
from pytest_agent_eval.models import AgentReply, Expect, PhoneCall, Transcript, Turn
from pytest_agent_eval.voice._dtmf import keypad_tones


class InBandAgent(Agent):
    """Presses keys the way a line without DTMF events needs: their tones, after its words."""

    def __init__(self) -> None:
        super().__init__(instructions="You navigate phone trees.")
        self.pending = ""

    @function_tool()
    async def press_keys(self, context: RunContext, keys: str) -> str:
        """Press keys on the phone line.

        Args:
            keys: The keys to press, e.g. "2".
        """
        self.pending += keys
        return "pressed"

    async def tts_node(
        self, text: AsyncIterable[str], model_settings: ModelSettings
    ) -> AsyncIterator[rtc.AudioFrame]:
        rate = 24000
        async for frame in Agent.default.tts_node(self, text, model_settings):
            rate = frame.sample_rate
            yield frame
        keys, self.pending = self.pending, ""
        if keys:
            tones = keypad_tones(keys, sample_rate=rate)
            pcm = (tones.samples * 32767).astype("int16")
            yield rtc.AudioFrame(pcm.tobytes(), rate, 1, len(pcm))


def make_session() -> tuple[AgentSession, Agent]:
    llm = ScriptedLLM(
        [Rule(r"billing", tool="press_keys", args={"keys": "2"}, reply="Going to billing.")],
        default_reply="How can I help?",
    )
    return AgentSession(llm=llm, tts=SynthesizerTTS(), **eval_session_kwargs()), InBandAgent()


def converse(*turns: Turn) -> list[AgentReply]:
    script = Transcript(id="in_band", turns=list(turns), phone=PhoneCall())  # a phone call
    adapter = LiveKitAdapter(make_session, timeout_s=30.0)

    async def run() -> list[AgentReply]:
        await adapter.prepare(script)
        conversation: Any = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            return [
                await conversation.respond(TurnInput.of(script, i, 0)) for i in range(len(turns))
            ]
        finally:
            await conversation.aclose()

    return asyncio.run(run())


def test_keys_played_in_band_count_as_sent() -> None:
    billing, other = converse(
        Turn("Get me billing, please.", expect=Expect(dtmf_sent="2")),
        Turn("Thanks.", expect=Expect(dtmf_sent="")),
    )
    assert billing.metadata["dtmf_in_band"] == "2"
    assert billing.dtmf_sent == "2"  # no publish_dtmf: the tone alone
    # The offline voice's speech alone is never heard as keys.
    assert "dtmf_in_band" not in other.metadata and other.dtmf_sent == ""
