"""The contract corpus's realtime agents as a LiveKit worker, for room mode (issue 33).

``python contract_worker.py start`` registers as ``contract-agent``. The job's metadata (the
room adapter's ``dispatch_metadata``) names the agent, one of `ROOM_AGENTS`: the very agents
the in-process ``livekit-realtime`` corpus runs (contract_agents.py), each with
`publish_eval_events`, as a deployed agent would be.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# onnxruntime (Silero VAD) would send telemetry otherwise; see examples/voice-livekit-room.
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

TESTS = Path(__file__).resolve().parents[1]
for _folder in ("livekit", "realtime", "contract"):
    if str(TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(TESTS / _folder))

from contract_agents import (  # noqa: E402
    BROKEN_MODEL_RULES,
    BrokenRealtimeDesk,
    SilentRealtimeDesk,
    realtime_factory,
    remembering_realtime_factory,
)
from livekit.agents import AgentServer, JobContext, cli  # noqa: E402

from pytest_agent_eval.adapters.livekit import publish_eval_events  # noqa: E402

AGENT_NAME = "contract-agent"

ROOM_AGENTS: dict[str, Callable[[], tuple[Any, Any]]] = {
    "desk": realtime_factory(),
    "silent": realtime_factory(SilentRealtimeDesk),
    "crash": realtime_factory(BrokenRealtimeDesk),
    "broken_model": realtime_factory(rules=BROKEN_MODEL_RULES),
    "memory": remembering_realtime_factory(),
}
"""The agents a job can ask for (its metadata), by name."""

server = AgentServer(
    # Load by jobs, not by the machine's CPU, which the tests keep busy (see lab_worker.py).
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    drain_timeout=5,
    port=0,  # its health-check port: the lab's other workers may have the default one
)


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    session, agent = ROOM_AGENTS[ctx.job.metadata]()
    publish_eval_events(session)
    await session.start(agent=agent, room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
