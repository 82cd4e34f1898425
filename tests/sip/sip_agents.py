"""The agent the SIP suite runs over a phone line and in process: the same session both ways.

`make_phone_session` builds the room lab's restaurant agent (tests/room/lab_agents.py: it
greets first, hears with Whisper, answers with its scripted menu, speaks with the offline
synthesizer) with a keypad: it reads the caller's keys from its job's room
(``sip_dtmf_received``), echoes each on the line (``publish_dtmf``), and once ``#`` comes
reads the code back. ``sip_eval_worker.py`` runs it as a worker; the record comparison runs it
with `LiveKitAdapter` in process, where the keys come from its phone line.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "room"))

from lab_agents import GREETING, RULES, GreeterAgent, _session
from livekit import rtc
from livekit.agents import AgentSession, get_job_context

from pytest_agent_eval.adapters.livekit import ScriptedLLM, WhisperSTT


class KeypadGreeter(GreeterAgent):
    """The greeter with a keypad: echoes every key, reads the code back after ``#``."""

    def __init__(self) -> None:
        super().__init__()
        self._digits = ""
        self._echoes: set[asyncio.Future[None]] = set()

    async def on_enter(self) -> None:
        get_job_context().room.on("sip_dtmf_received", self._on_key)
        await super().on_enter()

    def _on_key(self, dtmf: rtc.SipDTMF) -> None:
        room = get_job_context().room
        echo = asyncio.ensure_future(
            room.local_participant.publish_dtmf(code=dtmf.code, digit=dtmf.digit)
        )
        self._echoes.add(echo)
        echo.add_done_callback(self._echoes.discard)
        if dtmf.digit == "#":
            self.session.say(f"Your code is {' '.join(self._digits)}.")
            self._digits = ""
        else:
            self._digits += dtmf.digit


def make_phone_session() -> tuple[AgentSession[Any], KeypadGreeter]:
    """The session and agent of the SIP suite's agent."""
    return _session(ScriptedLLM(RULES, greeting=GREETING), stt=WhisperSTT()), KeypadGreeter()
