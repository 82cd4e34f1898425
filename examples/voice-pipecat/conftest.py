"""The bot under test: its own run_bot entrypoint, on a Pipecat pipeline per run."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent() -> PipecatAdapter:
    # Imported here rather than at the top: under pytest-xdist (-n) the controller process
    # loads this file too but runs no test, and importing Pipecat costs it about a second.
    from bot import run_bot

    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    # speed=0 (the default) runs the pipeline on a virtual clock, as fast as it computes;
    # speed=1.0 runs it in real time. The captured turns are the same.
    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
