"""The outbound agent of tests/telephony (``livekit_dialer_agent.py``, written from LiveKit's
docs) as a LiveKit worker in the SIP lab: ``python dialer_worker.py start`` registers as
``dialer-agent``. Each job starts the agent's session in the job's room; the agent dials
with ``create_sip_participant`` on the outbound trunk ``$DIALER_TRUNK_ID``. What the job
did is written to ``$SIP_AGENT_REPORTS/<room>.jsonl``: why it shut down (the reason the
agent's ``ctx.shutdown`` gave), then logged ("dialer: shut down in <room>")."""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "telephony"))

from livekit.agents import AgentServer, JobContext, cli
from livekit_dialer_agent import make_session

AGENT_NAME = "dialer-agent"
logger = logging.getLogger("dialer-worker")

server = AgentServer(
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    drain_timeout=5,
    port=0,
)


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    report = Path(os.environ["SIP_AGENT_REPORTS"]) / f"{ctx.room.name}.jsonl"

    async def on_shutdown(reason: str) -> None:
        with report.open("a") as out:
            out.write(json.dumps({"shutdown": reason}) + "\n")
        logger.warning("dialer: shut down in %s", ctx.room.name)

    ctx.add_shutdown_callback(on_shutdown)
    await ctx.connect()
    session, agent = make_session()
    await session.start(agent=agent, room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
