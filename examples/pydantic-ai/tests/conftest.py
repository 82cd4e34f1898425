"""Point the YAML transcripts in tests/evals at the pydantic-ai booking agent."""

from __future__ import annotations

import pytest
from booking_agent import Calendar, agent
from offline_models import booking_model, judge_model

from pytest_agent_eval.adapters.pydantic_ai import PydanticAIAdapter


@pytest.fixture
def llm_eval_agent() -> PydanticAIAdapter:
    # One fresh Calendar per run, so runs never see each other's bookings.
    # `model=` swaps the agent's model for the offline stand-in; remove it to use the real one.
    return PydanticAIAdapter(agent, deps_factory=Calendar, model=booking_model())


@pytest.fixture
def llm_eval_judge_model() -> object:
    # Judges use `judge_model` from pyproject.toml unless this fixture exists.
    return judge_model()
