"""The agent that answers the SIP lab's calls: ``python sip_worker.py start`` registers as
``sip-agent`` (the dispatch rule's agent).

Each call's room gets the room lab's greeter (tests/room/lab_agents.py: the restaurant agent,
hearing with Whisper, speaking with the offline synthesizer, greeting the caller first). It
echoes every key the caller presses back on the line with ``publish_dtmf``, and writes what it
saw to ``$SIP_AGENT_REPORTS/<room>.jsonl``, one JSON object a line: the caller's participant
(identity, kind, attributes), every key received (``sip_dtmf_received``), every final
turn of the caller (what its STT heard) and every reply it said.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "room"))

from lab_agents import GREETING, RULES, GreeterAgent, _session
from livekit import rtc
from livekit.agents import (
    AgentServer,
    ConversationItemAddedEvent,
    JobContext,
    cli,
)

from pytest_agent_eval.adapters.livekit import ScriptedLLM, WhisperSTT

AGENT_NAME = "sip-agent"

server = AgentServer(
    # Load by jobs, not by the machine's CPU (see tests/room/lab_worker.py).
    load_fnc=lambda server: 0.7 * len(server.active_jobs) / 7,
    load_threshold=float("inf"),
    num_idle_processes=1,
    drain_timeout=5,
    port=0,
)


@server.rtc_session(agent_name=AGENT_NAME)
async def entrypoint(ctx: JobContext) -> None:
    report = Path(os.environ["SIP_AGENT_REPORTS"]) / f"{ctx.room.name}.jsonl"

    def write(entry: dict[str, Any]) -> None:
        with report.open("a") as out:
            out.write(json.dumps(entry) + "\n")

    echoes: set[asyncio.Future[None]] = set()

    def on_key(dtmf: rtc.SipDTMF) -> None:
        write({"key": dtmf.digit, "code": dtmf.code})
        echo = asyncio.ensure_future(
            ctx.room.local_participant.publish_dtmf(code=dtmf.code, digit=dtmf.digit)
        )
        echoes.add(echo)
        echo.add_done_callback(echoes.discard)

    ctx.room.on("sip_dtmf_received", on_key)
    await ctx.connect()
    caller = await ctx.wait_for_participant(kind=rtc.ParticipantKind.PARTICIPANT_KIND_SIP)
    # On an outbound call the participant joins while the phone rings ("dialing"): greet once
    # it answers. (An inbound call rings until the agent is in the room: no wait there.)
    answered = asyncio.Event()

    def on_attributes(changed: dict[str, str], participant: rtc.Participant) -> None:
        if participant.identity == caller.identity and changed.get("sip.callStatus") == "active":
            answered.set()

    ctx.room.on("participant_attributes_changed", on_attributes)
    if caller.attributes.get("sip.callStatus") == "dialing":
        await answered.wait()
    write(
        {
            "participant": caller.identity,
            "kind": int(caller.kind),
            "attributes": dict(caller.attributes),
        }
    )
    # The lab's greeter, hearing with Whisper: a phone call has no text channel.
    session = _session(ScriptedLLM(RULES, greeting=GREETING), stt=WhisperSTT())
    agent = GreeterAgent()

    @session.on("conversation_item_added")
    def on_item(event: ConversationItemAddedEvent) -> None:
        role = getattr(event.item, "role", None)
        if role == "user":
            write({"heard": event.item.text_content})
        elif role == "assistant":
            write({"said": event.item.text_content})

    await session.start(agent=agent, room=ctx.room)


if __name__ == "__main__":
    cli.run_app(server)
