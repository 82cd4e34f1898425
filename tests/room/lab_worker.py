"""A worker whose agent misbehaves on request, for the room adapter's error tests.

``python lab_worker.py start`` registers as ``lab-agent``. The job's metadata (the adapter's
``dispatch_metadata``) picks what the agent does:

``no-helper``  the example's restaurant agent (it hears text only), without publish_eval_events
``plain``      the same agent, with publish_eval_events
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
``broken-enter`` the restaurant agent (with publish_eval_events), whose on_enter raises
``rt-server``  the realtime corpus's front desk (tests/realtime/realtime_agents.py) on a
               ScriptedRealtimeModel whose own VAD takes the turns, sharing it with billing
               (with publish_eval_events); ``rt-server-separate``: billing has its own model;
               ``rt-session``: the session's VAD takes the turns
``rt-deaf``    that front desk on a ScriptedRealtimeModel(hearing=None)
``rt-choppy``  that front desk on a ScriptedRealtimeModel whose server VAD cuts more phrases
               than the VAD it reports
``rt-whisper`` that front desk on a ScriptedRealtimeModel hearing with WhisperSTT
"""

from __future__ import annotations

import asyncio

from lab_agents import make_session
from livekit.agents import AgentServer, JobContext, cli

from pytest_agent_eval.adapters.livekit import publish_eval_events

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


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    behaviour = ctx.job.metadata
    if behaviour == "absent":
        # Never connects; the job ends when the worker stops.
        await asyncio.Event().wait()
    if behaviour == "ghost":
        await ctx.connect()
        return
    session, agent = make_session(behaviour)
    if behaviour not in ("no-helper", "mute"):
        publish_eval_events(session)
    await session.start(agent=agent, room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
