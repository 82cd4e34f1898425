"""The reply a realtime model owes to tool results: waited for, and an error when it is lost.

After a realtime agent's tools return with results that want a reply, LiveKit has the model
answer them on the same speech handle, unless that handle was interrupted while the tools ran:
then the reply is never generated. LiveKit does that itself on a session given ``vad=`` whose
model's server takes the turns (the session's own end of the user's turn interrupts every
speech waiting for its tools; measured: about one real-time run in five of the corpus's
handoff-then-tool conversation). The turn then has a tool call and no reply: a verdict decided
by a race, so it is an error naming the tools and the cause, never a reply of ''. A tool that
interrupts its own speech (``ctx.speech_handle.interrupt()``) once the reply waits for it
reaches the same LiveKit state on every run, so it stands in for the race here.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit.agents.voice.events import AgentStateChangedEvent
from livekit_support import converse_greeted, run, transcript
from realtime_agents import GREETING, PHRASES, VAD, front_desk_model

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import Turn


class SelfInterruptingDesk(Agent):
    """Answers the weather with a tool that stops its own speech before returning."""

    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk.")

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def get_weather(self, ctx: RunContext, city: str) -> str:
        """Look up the weather in a city."""
        # Where LiveKit's own end of turn strikes: once the reply waits for its tools (the
        # session says "thinking"), past the reply's own check for an interruption.
        thinking = asyncio.Event()

        def on_state(ev: AgentStateChangedEvent) -> None:
            if ev.new_state == "thinking":
                thinking.set()

        self.session.on("agent_state_changed", on_state)
        try:
            if self.session.agent_state != "thinking":
                await thinking.wait()
        finally:
            self.session.off("agent_state_changed", on_state)
        ctx.speech_handle.interrupt()
        return f"It is sunny in {city}"


def weather_script(audio: dict[str, Path]) -> Any:
    return transcript(Turn(user=PHRASES["weather"], audio=audio["weather"]), id="lost_reply")


@pytest.mark.parametrize("speed", [0.0, 1.0])
@pytest.mark.parametrize("session_vad", [False, True], ids=["server_turns", "server_turns_and_vad"])
def test_a_reply_to_tool_results_that_livekit_never_generates_is_an_error_naming_the_tools(
    speed: float, session_vad: bool, realtime_audio: dict[str, Path]
) -> None:
    def make() -> tuple[AgentSession[Any], Agent]:
        extra: dict[str, Any] = {"vad": VAD} if session_vad else {}
        session: AgentSession[Any] = AgentSession(
            llm=front_desk_model("server"), aec_warmup_duration=None, **extra
        )
        return session, SelfInterruptingDesk()

    adapter = LiveKitAdapter(make, speed=speed, tail_silence_s=0.7)
    with pytest.raises(AdapterError) as caught:
        run(converse_greeted(adapter, weather_script(realtime_audio)))
    message = str(caught.value)
    assert "the reply to the tool results of get_weather was never generated" in message
    assert "interrupted while its tools get_weather ran" in message
    # The cause named is the wiring's: LiveKit's race needs the session's own VAD.
    assert ("_user_turn_completed_impl" in message) is session_vad
    assert ("ctx.speech_handle.interrupt()" in message) is not session_vad


def test_the_same_agent_without_the_interruption_answers_the_tool(
    realtime_audio: dict[str, Path],
) -> None:
    """The control: the error above comes from the lost reply, not from the wiring."""
    from realtime_agents import FrontDesk

    def make() -> tuple[AgentSession[Any], Agent]:
        session: AgentSession[Any] = AgentSession(
            llm=front_desk_model("server"), aec_warmup_duration=None
        )
        return session, FrontDesk()

    adapter = LiveKitAdapter(make, speed=0.0, tail_silence_s=0.7)
    greeting, replies = run(converse_greeted(adapter, weather_script(realtime_audio)))
    assert GREETING in str(greeting)
    assert replies[0].reply == "It is sunny in Paris."
