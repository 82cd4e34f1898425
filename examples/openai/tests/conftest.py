"""Point the YAML transcripts in tests/evals at the OpenAI SDK booking agent.

By default everything talks to a local stand-in server (tests/local_llm.py). To use any
OpenAI-compatible server instead, set BOOKING_OPENAI_BASE_URL (and OPENAI_API_KEY,
BOOKING_MODEL, BOOKING_JUDGE_MODEL as needed).
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from booking_agent import booking_adapter
from local_llm import LocalLLM
from openai import AsyncOpenAI

from pytest_agent_eval.adapters.openai import OpenAIAdapter


@pytest.fixture(scope="session")
def openai_base_url() -> Iterator[str]:
    configured = os.environ.get("BOOKING_OPENAI_BASE_URL")
    if configured:
        yield configured
        return
    with LocalLLM() as llm:
        yield llm.base_url


def _client(base_url: str) -> AsyncOpenAI:
    return AsyncOpenAI(base_url=base_url, api_key=os.environ.get("OPENAI_API_KEY", "local"))


@pytest.fixture
def llm_eval_agent(openai_base_url: str) -> OpenAIAdapter:
    return booking_adapter(_client(openai_base_url), os.environ.get("BOOKING_MODEL", "gpt-4o-mini"))


@pytest.fixture
def llm_eval_judge_model(openai_base_url: str) -> object:
    # A judge on an OpenAI-compatible server: a pydantic-ai model with its own provider.
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    provider = OpenAIProvider(openai_client=_client(openai_base_url))
    return OpenAIChatModel(os.environ.get("BOOKING_JUDGE_MODEL", "gpt-4o"), provider=provider)
