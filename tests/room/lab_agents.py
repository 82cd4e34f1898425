"""The lab's agents, built the same way in the lab worker and in process.

`make_session` builds the session and first agent of a behaviour (``dispatch_metadata`` in the
room tests); `lab_worker.py` runs it as a worker, and the record comparison runs it with
`LiveKitAdapter` in the test process, so both modes run the very same agent.
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
    AgentSession,
    RunContext,
    function_tool,
    get_job_context,
    llm,
)
from livekit.plugins import silero

from pytest_agent_eval.adapters.livekit import (
    Rule,
    ScriptedLLM,
    ScriptedRealtimeModel,
    SynthesizerTTS,
    WhisperSTT,
    eval_session_kwargs,
)

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "realtime"))
import realtime_agents
from booking_agent import RULES, VAD, RestaurantAgent
from realtime_agents import FRONT_DESK_RULES, Scenario

from pytest_agent_eval.adapters.livekit.realtime import ScriptedRealtimeSession

REPORTED_VAD = silero.VAD.load(min_silence_duration=1.8)

REALTIME = {
    # The realtime corpus's front desk (greeting, tools, a handoff to billing), its model's
    # own VAD taking the turns, agents sharing the model; or with a model each.
    "rt-server": Scenario("rt-server", "server", False, ()),
    "rt-server-separate": Scenario("rt-server-separate", "server", True, ()),
    # The session's VAD takes the turns (turn_detection="vad" on a model that hands them over).
    "rt-session": Scenario("rt-session", "session", False, ()),
}
"""Realtime-agent behaviours: the agents of tests/realtime's corpus, unchanged."""

__all__ = ["BEHAVIOURS", "make_session"]

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


class BrokenGreeter(RestaurantAgent):
    """The restaurant agent, whose greeting code raises (a bug in the agent's own code)."""

    async def on_enter(self) -> None:
        raise RuntimeError("greeting template missing")


class MuteAgent(Agent):
    """Hears everything, says nothing: its LLM step produces no text."""

    def __init__(self) -> None:
        super().__init__(instructions="Never answer.")

    async def llm_node(
        self, chat_ctx: llm.ChatContext, tools: list[Any], model_settings: Any
    ) -> AsyncIterable[str]:
        return
        yield  # an async generator that yields nothing


class _ChoppySession(ScriptedRealtimeSession):
    def _open_vad(self) -> None:
        self._vad_stream = VAD.stream()  # Silero's defaults, not the VAD the model reports
        self._vad_task = asyncio.ensure_future(self._follow_vad(self._vad_stream))


class ChoppyRealtimeModel(ScriptedRealtimeModel):
    """A scripted model whose server VAD cuts a fixture into more phrases than the caller's
    scan finds (it reports a VAD that waits 1.8 s of silence, longer than the fixture's pause, and ends speech after Silero's
    default 0.55 s), as when a busy machine delays audio into a gap."""

    def __init__(self, rules: Any) -> None:
        super().__init__(rules, vad=REPORTED_VAD)

    def session(self, *, turn_detection_disabled: bool = False) -> ScriptedRealtimeSession:
        made = _ChoppySession(self, server_turn_detection=True)
        self.sessions.append(made)
        return made


def make_session(behaviour: str) -> tuple[AgentSession, Agent]:
    """The session and first agent of ``behaviour`` (see lab_worker.py's docstring), for the
    behaviours that start a session."""
    if behaviour == "mute":
        return AgentSession(vad=VAD, llm=ScriptedLLM(RULES), **eval_session_kwargs()), MuteAgent()
    if behaviour in ("no-helper", "plain"):
        return _session(ScriptedLLM(RULES)), RestaurantAgent()
    if behaviour == "greeter":
        return _session(ScriptedLLM(RULES, greeting=GREETING)), GreeterAgent()
    if behaviour == "handoff":
        return _session(ScriptedLLM(HANDOFF_RULES)), FrontDesk()
    if behaviour == "slow-stt":
        return _session(ScriptedLLM(RULES), stt=SlowWhisperSTT()), RestaurantAgent()
    if behaviour == "hangup":
        return _session(ScriptedLLM(HANGUP_RULES)), HangingUpAgent()
    if behaviour == "crash":
        return _session(ScriptedLLM(CRASH_RULES)), CrashingAgent()
    if behaviour == "broken-enter":
        return _session(ScriptedLLM(RULES)), BrokenGreeter()
    if behaviour in REALTIME:
        return REALTIME[behaviour].factory()()
    if behaviour == "rt-deaf":
        # A scripted realtime model that cannot hear: audio turns must be refused.
        deaf = ScriptedRealtimeModel(FRONT_DESK_RULES, hearing=None)
        return AgentSession(llm=deaf, aec_warmup_duration=None), realtime_agents.FrontDesk()
    if behaviour == "rt-choppy":
        # Its server VAD cuts a two-phrase fixture in two; the VAD it reports, in one.
        choppy = ChoppyRealtimeModel(FRONT_DESK_RULES)
        return AgentSession(llm=choppy, aec_warmup_duration=None), realtime_agents.FrontDesk()
    if behaviour == "rt-whisper":
        # Hearing with Whisper in the worker, as a deployed scripted agent may.
        model = ScriptedRealtimeModel(FRONT_DESK_RULES, hearing=WhisperSTT())
        return AgentSession(llm=model, aec_warmup_duration=None), realtime_agents.FrontDesk()
    raise ValueError(f"lab-agent: unknown behaviour {behaviour!r} in the job metadata")


BEHAVIOURS = (
    "mute",
    "no-helper",
    "plain",
    "greeter",
    "handoff",
    "slow-stt",
    "hangup",
    "crash",
    "broken-enter",
    *REALTIME,
    "rt-deaf",
    "rt-choppy",
    "rt-whisper",
)
"""The behaviours `make_session` builds (plus ``ghost`` and ``absent``, which start none)."""


def _session(script: ScriptedLLM, stt: Any = None) -> AgentSession:
    return AgentSession(stt=stt, vad=VAD, llm=script, tts=SynthesizerTTS(), **eval_session_kwargs())
