"""A table-booking agent that remembers the conversation only through the history it is given.

Every run starts with a fresh history, so runs never leak into each other. Earlier turns'
tool calls and tool results are part of the history (OpenAI message format), which is how the
agent finds the booking reference when asked to cancel.
"""

from __future__ import annotations

import json
import re

import pytest

from pytest_agent_eval import AgentReply, ToolCall


def _party_size(history):
    for message in history:
        if message.role == "user":
            found = re.search(r"\b(\d+)\s+(?:people|persons|guests)\b", message.content)
            if found:
                return int(found.group(1))
    return None


def _last_reference(history):
    for message in reversed(history):
        if message["role"] == "tool" and message["content"]:
            return json.loads(message["content"]).get("reference")
    return None


async def booking_agent(history):
    text = history[-1].content.lower()
    if "cancel" in text:
        reference = _last_reference(history)
        if reference is None:
            return AgentReply("I could not find a booking to cancel.")
        call = ToolCall("cancel_booking", {"reference": reference}, output={"ok": True})
        return AgentReply(f"Booking {reference} is cancelled.", [call])
    if "book" in text:
        party = _party_size(history)
        if party is None:
            return AgentReply("Happy to help! For how many people?")
        call = ToolCall("create_booking", {"party": party}, output={"reference": "BK-2041"})
        return AgentReply(f"Booked a table for {party}. Your reference is BK-2041.", [call])
    return AgentReply("Is there anything else I can do?")


@pytest.fixture
def llm_eval_agent():
    return booking_agent
