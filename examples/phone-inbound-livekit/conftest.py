"""The agent under test: a LiveKit AgentSession per run, answering an inbound call."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent() -> LiveKitAdapter:
    # Imported here rather than at the top: under pytest-xdist (-n) the controller process
    # loads this file too but runs no test, and importing LiveKit costs it seconds of CPU.
    from inbound_agent import make_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    return LiveKitAdapter(make_session, timeout_s=20.0)
