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

MAX_JOBS = 7
"""Calls this worker takes at once (each is a process with its own models)."""


def job_load(server: AgentServer) -> float:
    """The worker's load counted by jobs: it reaches the server's target load (0.7) at MAX_JOBS.

    LiveKit's default load is the machine's CPU use, which a 2-core CI runner keeps high while
    the worker starts up and while the tests run; the server offers no job to a worker whose
    load is above its target, so the job would never arrive.
    """
    return 0.7 * len(server.active_jobs) / MAX_JOBS


server = AgentServer(
    load_fnc=job_load,
    # Set explicitly: in `start` mode the worker also refuses jobs itself above 0.7 of its
    # load, and while jobs are pending it counts each as 0.7 / (idle processes), which turns a
    # burst of three calls on a 2-core machine away. The server's target load, on the load
    # above, is the only cap needed.
    load_threshold=float("inf"),
    # prewarm loads Whisper and the voice in every job process. LiveKit kills a process whose
    # setup takes over 10 s (its default), and on a busy 2-core runner this one can: every
    # process is then killed in turn and the dispatched job never starts ("the agent never
    # joined the room"). Give the setup the time the models need.
    initialize_process_timeout=120.0,
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
