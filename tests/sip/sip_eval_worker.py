"""The worker of the SIP suite: ``python sip_eval_worker.py start`` registers as
``sip-eval-agent``, the agent `LiveKitRoomAdapter(sip=...)` dispatches into each call's room.

Its agent is `sip_agents.make_phone_session`, with `publish_eval_events`; its session listens
to the call's SIP participant only (the test's listener in the room is not a caller).
"""

from __future__ import annotations

from livekit import rtc
from livekit.agents import AgentServer, JobContext, cli, room_io
from sip_agents import make_phone_session
from sip_lab import EVAL_AGENT_NAME

from pytest_agent_eval.adapters.livekit import publish_eval_events

server = AgentServer(
    # Load by jobs, not by the machine's CPU (see tests/room/lab_worker.py).
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    drain_timeout=5,
    port=0,
)


@server.rtc_session(agent_name=EVAL_AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    session, agent = make_phone_session()
    publish_eval_events(session)
    await session.start(
        agent=agent,
        room=ctx.room,
        room_options=room_io.RoomOptions(
            participant_kinds=[rtc.ParticipantKind.PARTICIPANT_KIND_SIP]
        ),
    )


if __name__ == "__main__":
    cli.run_app(server)
