"""A LiveKit worker as a user deploys one, for the capacity command's worker mode.

``python capacity_worker.py start`` registers as ``capacity-agent``. Its load is its jobs:
two calls put it at ``load_threshold``, so LiveKit's own worker refuses a third while two are
on (as a production worker does past its threshold).
With ``CAPACITY_WORKER_LOAD=zero`` its ``load_fnc`` lies instead: it reports no load at all,
so the worker takes every call whatever its processes carry.
The agent hears typed text (no STT), answers from a script and speaks with the offline voice.
"""

from __future__ import annotations

import os

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

from livekit.agents import Agent, AgentServer, AgentSession, JobContext, cli

from pytest_agent_eval.adapters.livekit import (
    Rule,
    ScriptedLLM,
    SynthesizerTTS,
    eval_session_kwargs,
    publish_eval_events,
)

AGENT_NAME = "capacity-agent"
THRESHOLD = 0.7


def two_calls(server: AgentServer) -> float:
    """At the threshold with two calls on."""
    return THRESHOLD * len(server.active_jobs) / 2


def no_load(server: AgentServer) -> float:
    """A load_fnc that lies: never any load."""
    return 0.0


server = AgentServer(
    load_fnc=no_load if os.environ.get("CAPACITY_WORKER_LOAD") == "zero" else two_calls,
    load_threshold=THRESHOLD,
    num_idle_processes=2,
    port=0,  # its health server on a free port: two test workers may run at once
    initialize_process_timeout=120.0,
)


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    session: AgentSession = AgentSession(
        llm=ScriptedLLM([Rule(r".*", reply="Hello, how can I help?")]),
        tts=SynthesizerTTS(),
        **eval_session_kwargs(),
    )
    publish_eval_events(session)
    await session.start(agent=Agent(instructions="Greet the caller."), room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
