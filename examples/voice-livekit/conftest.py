"""The agent under test: a LiveKit AgentSession per run, with offline STT and LLM."""

from __future__ import annotations

import pytest
from booking_agent import make_session

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent() -> LiveKitAdapter:
    # speed=0 streams fixtures as fast as the session takes them; 1.0 would be real time.
    return LiveKitAdapter(make_session, timeout_s=20.0)
