"""A worker whose agent misbehaves on request, for the room adapter's error tests.

``python lab_worker.py start`` registers as ``lab-agent``. The job's metadata (the adapter's
``dispatch_metadata``) picks what the agent does:

``no-helper``  the example's restaurant agent (it hears text only), without publish_eval_events
``mute``       joins and listens, never replies
``ghost``      joins the room, never starts a session
``absent``     accepts the job, never joins the room
``greeter``    the restaurant agent, speaking first (with publish_eval_events)
``handoff``    a front desk that hands billing questions to a billing agent, which introduces
               itself (with publish_eval_events)
``slow-stt``   the restaurant agent hearing with Whisper that takes SLOW_STT_S extra per speech
               segment, as on a loaded machine (with publish_eval_events)
``hangup``     the restaurant agent (with publish_eval_events), which deletes the room (ends the
               call) when the caller says "bye"
``crash``      the restaurant agent (with publish_eval_events), whose job process dies while
               it says goodbye, when the caller says "crash"
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterable
from pathlib import Path
from typing import Any

# onnxruntime (Silero VAD) would send telemetry otherwise; see examples/voice-livekit-room.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from livekit.agents import (
    Agent,
    AgentServer,
    AgentSession,
    JobContext,
    RunContext,
    cli,
    function_tool,
    get_job_context,
    llm,
)

from pytest_agent_eval.adapters.livekit import (
    Rule,
    ScriptedLLM,
    SynthesizerTTS,
    WhisperSTT,
    eval_session_kwargs,
    publish_eval_events,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"))
from booking_agent import RULES, VAD, RestaurantAgent

AGENT_NAME = "lab-agent"

server = AgentServer(
    # Load by jobs, not by the machine's CPU, which the tests keep busy (see the example's
    # agent.py and docs/livekit-room.md).
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    drain_timeout=5,
    port=0,  # its health-check port; the example's worker has the default one
)


GREETING = "Welcome to Chez Pytest! How can I help?"


class GreeterAgent(RestaurantAgent):
    """The restaurant agent, greeting the caller as soon as it starts."""

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")


BILLING_INTRO = "Billing here. How can I help with your bill?"


class BillingDesk(Agent):
    """Entered by a handoff; introduces itself."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the billing assistant.")

    async def on_enter(self) -> None:
        self.session.say(BILLING_INTRO)


class FrontDesk(Agent):
    """Hands billing questions over to `BillingDesk`."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk. Transfer billing questions.")

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to billing."""
        return BillingDesk()


HANDOFF_RULES = [Rule(r"\bbill\b", tool="transfer_to_billing")]


SLOW_STT_S = 4.0
"""How much longer than Whisper itself `SlowWhisperSTT` takes per speech segment."""


class SlowWhisperSTT(WhisperSTT):
    """Whisper on a loaded machine: each speech segment's transcript comes SLOW_STT_S late.

    LiveKit commits a user turn on the end of speech once it has some transcript, without
    waiting for the segment that just ended: with a slow STT, a fixture with a pause is
    answered in two parts, the second long after the first.
    """

    async def _transcribe(self, frame: Any) -> str:
        await asyncio.sleep(SLOW_STT_S)  # the delay under test, not a wait for an event
        return await super()._transcribe(frame)


class CrashingAgent(RestaurantAgent):
    """The restaurant agent, with a tool that kills its own job process (a crash) in the
    middle of the goodbye said before it (its reply text stream is left open)."""

    @function_tool
    async def crash_now(self, ctx: RunContext) -> str:
        """Crash."""
        while self.session.agent_state != "speaking":
            await asyncio.sleep(0.02)  # test agent: waits to crash mid-speech
        await asyncio.sleep(0.5)
        os._exit(3)


class HangingUpAgent(RestaurantAgent):
    """The restaurant agent, with a tool that ends the call by deleting the room."""

    @function_tool
    async def end_call(self, ctx: RunContext) -> str:
        """End the call."""
        await get_job_context().delete_room()
        return "call ended"


HANGUP_RULES = [Rule(r"\bbye\b", tool="end_call"), *RULES]

CRASH_RULES = [
    Rule(r"\bcrash\b", preamble="Goodbye, this agent is going down now.", tool="crash_now"),
    *RULES,
]


class MuteAgent(Agent):
    """Hears everything, says nothing: its LLM step produces no text."""

    def __init__(self) -> None:
        super().__init__(instructions="Never answer.")

    async def llm_node(
        self, chat_ctx: llm.ChatContext, tools: list[Any], model_settings: Any
    ) -> AsyncIterable[str]:
        return
        yield  # an async generator that yields nothing


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    behaviour = ctx.job.metadata
    if behaviour == "absent":
        # Never connects; the job ends when the worker stops.
        await asyncio.Event().wait()
    if behaviour == "ghost":
        await ctx.connect()
        return
    if behaviour == "mute":
        session: AgentSession = AgentSession(
            vad=VAD, llm=ScriptedLLM(RULES), **eval_session_kwargs()
        )
        await session.start(agent=MuteAgent(), room=ctx.room)
        return
    if behaviour == "no-helper":
        session = AgentSession(
            vad=VAD, llm=ScriptedLLM(RULES), tts=SynthesizerTTS(), **eval_session_kwargs()
        )
        await session.start(agent=RestaurantAgent(), room=ctx.room)
        return
    if behaviour == "greeter":
        session = AgentSession(
            vad=VAD,
            llm=ScriptedLLM(RULES, greeting=GREETING),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        publish_eval_events(session)
        await session.start(agent=GreeterAgent(), room=ctx.room)
        return
    if behaviour == "handoff":
        session = AgentSession(
            vad=VAD, llm=ScriptedLLM(HANDOFF_RULES), tts=SynthesizerTTS(), **eval_session_kwargs()
        )
        publish_eval_events(session)
        await session.start(agent=FrontDesk(), room=ctx.room)
        return
    if behaviour == "slow-stt":
        session = AgentSession(
            stt=SlowWhisperSTT(),
            vad=VAD,
            llm=ScriptedLLM(RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        publish_eval_events(session)
        await session.start(agent=RestaurantAgent(), room=ctx.room)
        return
    if behaviour == "hangup":
        session = AgentSession(
            vad=VAD, llm=ScriptedLLM(HANGUP_RULES), tts=SynthesizerTTS(), **eval_session_kwargs()
        )
        publish_eval_events(session)
        await session.start(agent=HangingUpAgent(), room=ctx.room)
        return
    if behaviour == "crash":
        session = AgentSession(
            vad=VAD, llm=ScriptedLLM(CRASH_RULES), tts=SynthesizerTTS(), **eval_session_kwargs()
        )
        publish_eval_events(session)
        await session.start(agent=CrashingAgent(), room=ctx.room)
        return
    raise ValueError(f"lab-agent: unknown behaviour {behaviour!r} in the job metadata")


if __name__ == "__main__":
    cli.run_app(server)
