"""A LiveKit booking agent whose turn-taking settings are the ones it ships with.

`make_session()` builds the session production runs: Silero VAD from its wheel, the session's
VAD deciding the end of the caller's turn after `ENDPOINTING_MIN_DELAY` seconds of silence,
interruptions on. The turn-taking gate (`evals/turn-taking.yaml`) plays LiveKit's own timers
against these settings on the virtual clock; the STT, LLM and TTS are replaced by offline
stand-ins there, so only turn-taking is under test and nothing here needs a key.
"""

from __future__ import annotations

import os

from livekit.agents import Agent, AgentSession
from livekit.plugins import silero

__all__ = ["ENDPOINTING_MIN_DELAY", "BookingAgent", "make_session"]

# Plugins must be imported, and the VAD loaded, on the main thread: do it at import time.
VAD = silero.VAD.load()

# Seconds of silence after the caller's speech before the agent takes the turn. With the VAD
# alone deciding (no turn-detector model), 2.5 s waits through every mid-sentence pause of up
# to 2 s, at the price of answering 2.5 s after the caller is done; LiveKit's default of 0.5 s
# answers into the pauses. `ENDPOINTING_MIN_DELAY=0.5 python -m pytest` runs that
# configuration: it fails the pause budget.
ENDPOINTING_MIN_DELAY = float(os.environ.get("ENDPOINTING_MIN_DELAY", "2.5"))


class BookingAgent(Agent):
    """The agent itself: what it says is the LLM's; when it speaks is the session's settings."""

    def __init__(self) -> None:
        super().__init__(
            instructions="You are the booking assistant of Chez Pytest. Keep replies short."
        )


def make_session() -> tuple[AgentSession, Agent]:
    """The session and agent as production starts them."""
    session: AgentSession = AgentSession(
        vad=VAD,
        turn_handling={
            "turn_detection": "vad",
            "endpointing": {"min_delay": ENDPOINTING_MIN_DELAY, "max_delay": 3.0},
            "interruption": {"mode": "vad"},
        },
        user_away_timeout=None,
    )
    return session, BookingAgent()
