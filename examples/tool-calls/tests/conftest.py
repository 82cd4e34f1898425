"""A booking agent that reports the tools it called, with their arguments.

Returning `ToolCall(name, args)` (rather than plain names) is what lets transcripts check
arguments with `tool_calls_args`. This agent is synchronous and returns a
`(reply, tool_calls)` tuple; both are accepted, as are async agents and `AgentReply`.
"""

from __future__ import annotations

import re

import pytest

from pytest_agent_eval import ToolCall

FULL = {("tomorrow", "20:00")}
"""Slots that are already taken."""


def _details(text):
    party = re.search(r"for (\d+)", text)
    time = re.search(r"\b(\d{1,2}:\d{2})\b", text)
    date = "today" if "today" in text else "tomorrow"
    return int(party.group(1)) if party else 2, date, time.group(1) if time else "19:00"


def booking_agent(history):
    text = history[-1].content.lower()
    party, date, time = _details(text)
    calls = [ToolCall("check_availability", {"date": date, "time": time, "party": party})]
    if (date, time) in FULL:
        # Try the next hour before giving up: two calls to the same tool.
        hour = int(time.split(":")[0]) + 1
        time = f"{hour}:00"
        calls.append(ToolCall("check_availability", {"date": date, "time": time, "party": party}))
    calls.append(ToolCall("create_booking", {"party": party, "date": date, "time": time}))
    reply = f"Done: a table for {party} {date} at {time}."
    if "email" in text:
        calls.append(ToolCall("send_email", {"template": "booking_confirmation", "to": "guest"}))
        reply += " The confirmation is in your inbox."
    return reply, calls


@pytest.fixture
def llm_eval_agent():
    return booking_agent
