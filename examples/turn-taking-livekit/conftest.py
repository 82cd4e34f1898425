"""The agent under test: the session `agent.make_session()` builds, as production runs it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent() -> LiveKitAdapter:
    # Imported here rather than at the top: under pytest-xdist the controller process loads
    # this file too but runs no test. A fixture runs on the main thread, as LiveKit requires.
    from agent import make_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    return LiveKitAdapter(make_session)
