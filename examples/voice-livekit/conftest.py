"""The agent under test: a LiveKit AgentSession per run, with offline STT and LLM."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent() -> LiveKitAdapter:
    # Imported here rather than at the top: under pytest-xdist (-n) the controller process
    # loads this file too but runs no test, and importing LiveKit costs it seconds of CPU
    # (docs/ci.md). A fixture runs on the main thread, as LiveKit's plugins require.
    from booking_agent import make_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    # The adapter streams fixtures as fast as the session takes them (speed=0); run with
    # --agent-eval-speed realtime (or speed = "realtime" in pyproject.toml) for real time.
    return LiveKitAdapter(make_session, timeout_s=20.0)
