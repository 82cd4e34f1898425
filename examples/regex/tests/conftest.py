"""A booking agent whose replies carry a reference number, a date and a time.

The reference changes on every call, which is why the transcripts use regexes instead of exact
strings.
"""

from __future__ import annotations

import itertools

import pytest

from pytest_agent_eval import AgentReply


@pytest.fixture
def llm_eval_agent():
    references = itertools.count(3100)

    async def booking_agent(history):
        text = history[-1].content.lower()
        if "when" in text:
            return AgentReply("Your table is on 2026-12-24 at 19:30.")
        return AgentReply(f"Sure, booked! Reference BK-{next(references)}, 2026-12-24 at 19:30.")

    return booking_agent
