"""The text agent of the messages round trip: an OpenAI SDK app with one tool, whose model is
the loopback Chat Completions server of tests/adapters answering from a script.

The conversation the app keeps is exactly the OpenAI-format message list such an app logs
(system, user, assistant with tool_calls, tool, assistant), which is what gets imported.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

ADAPTERS_DIR = Path(__file__).resolve().parents[1] / "adapters"
if str(ADAPTERS_DIR) not in sys.path:
    sys.path.insert(0, str(ADAPTERS_DIR))

from loopback_chat import ChatServer, text_completion, tool_call_completion  # noqa: E402

__all__ = ["ChatServer", "Desk", "make_adapter", "scripted_model"]


def scripted_model(body: dict[str, Any]) -> Any:
    """Books through the tool, then recalls the reference from the conversation."""
    messages = body["messages"]
    last = messages[-1]
    if last["role"] == "tool":
        return text_completion(f"Booked for Friday at 8pm, reference {last['content']}.")
    text = last["content"].lower()
    if "book" in text:
        return tool_call_completion(
            [
                (
                    "book_table",
                    {"day": "friday", "time": "20:00", "guests": 2},
                    f"call_{len(messages)}",
                )
            ]
        )
    if "reference" in text:
        results = [m["content"] for m in messages if m["role"] == "tool"]
        return text_completion(f"Your reference is {results[-1]}." if results else "No booking.")
    return text_completion("How can I help?")


class Desk:
    """The app's tool; ``first`` is where its references start (a regression changes it)."""

    def __init__(self, first: int = 1) -> None:
        self.next = first

    def book_table(self, day: str, time: str, guests: int) -> str:
        """Book a table; returns the booking reference."""
        reference = f"BK-{self.next}"
        self.next += 1
        return reference


def make_adapter(base_url: str, *, first_reference: int = 1) -> Any:
    from openai import AsyncOpenAI

    from pytest_agent_eval.adapters.openai import OpenAIAdapter

    return OpenAIAdapter(
        AsyncOpenAI(base_url=base_url, api_key="loopback", max_retries=0),
        "loopback-model",
        "You book tables at Chez Pytest.",
        tools_factory=lambda: [Desk(first_reference).book_table],
    )
