"""The restaurant agent as a LiveKit worker: the file you would deploy, run unchanged by the tests.

    python agent.py start        # reads LIVEKIT_URL, LIVEKIT_API_KEY, LIVEKIT_API_SECRET

It registers as ``booking-agent`` and joins a room only when dispatched there explicitly (the
room adapter does that for every run). Offline and free: the local Whisper model hears the
caller, the scripted LLM answers, the project's offline voice speaks.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# onnxruntime (under the Silero VAD and the offline voice) sends usage telemetry to Microsoft
# unless told not to; a test agent has no business calling out. Set before anything loads it.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from livekit.agents import AgentServer, AgentSession, JobContext, JobProcess, cli

from pytest_agent_eval.adapters.livekit import (
    ScriptedLLM,
    SynthesizerTTS,
    WhisperSTT,
    eval_session_kwargs,
    publish_eval_events,
)

# The agent, its tools and the scripted LLM's rules are the in-process example's, so both
# examples test the very same agent. (A real project imports its own agent module here.)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "voice-livekit"))
from booking_agent import RULES, VAD, RestaurantAgent

AGENT_NAME = "booking-agent"

server = AgentServer(
    # In `start` mode a worker takes no job while the machine's CPU load is above this (0.7 by
    # default). On a 2-core CI runner the worker's own start-up is above that, so the job never
    # comes: CI raises it (AGENT_LOAD_THRESHOLD=inf). Keep the default where agents share hosts.
    load_threshold=float(os.environ.get("AGENT_LOAD_THRESHOLD", "0.7")),
)


def prewarm(proc: JobProcess) -> None:
    """Load the models once per job process, before a job arrives."""
    WhisperSTT().load()
    SynthesizerTTS().warm_up()


server.setup_fnc = prewarm


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    session: AgentSession = AgentSession(
        stt=WhisperSTT(),
        vad=VAD,
        llm=ScriptedLLM(RULES),
        tts=SynthesizerTTS(),
        **eval_session_kwargs(),
    )
    # One line for the tests: tool calls, handoffs and transcripts go to the room too.
    publish_eval_events(session)
    await session.start(agent=RestaurantAgent(), room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
