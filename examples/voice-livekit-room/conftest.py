"""The agent under test: the worker in agent.py, called through a LiveKit room.

LIVEKIT_URL, LIVEKIT_API_KEY and LIVEKIT_API_SECRET say which server (your own, or LiveKit
Cloud); the worker (`python agent.py start`) must be running against the same one.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter

AGENT_NAME = "booking-agent"
"""The name agent.py's worker registers with (@server.rtc_session(agent_name=...))."""


@pytest.fixture
def llm_eval_agent() -> LiveKitRoomAdapter:
    # One room per run; the agent's reply audio is saved for the report.
    return LiveKitRoomAdapter(
        AGENT_NAME, audio_out_dir=Path(__file__).parent / ".agent_eval_cache" / "reply-audio"
    )
