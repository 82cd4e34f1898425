"""The agent shared by the Python tests and the YAML transcripts of this example."""

from __future__ import annotations

import re

import pytest

from pytest_agent_eval import AgentReply, ToolCall


async def booking_agent(history):
    text = history[-1].content
    party = re.search(r"for (\d+)", text)
    if party is None:
        return AgentReply("For how many people?")
    size = int(party.group(1))
    if size > 8:
        return AgentReply(f"Sorry, groups of {size} need to call us.", [])
    call = ToolCall("create_booking", {"party": size})
    return AgentReply(f"Booked a table for {size}.", [call])


@pytest.fixture
def llm_eval_agent():
    return booking_agent
