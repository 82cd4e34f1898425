"""A table-booking agent: a system prompt, two Python tools, any Chat Completions model."""

from __future__ import annotations

from typing import Any

from pytest_agent_eval.adapters.openai import OpenAIAdapter

SYSTEM_PROMPT = (
    "You book tables at Chez Pytest, open every day from 12:00 to 22:00. "
    "Use book_table to book, then confirm the day, time, party size and reference."
)


class Calendar:
    """Stands in for the restaurant's booking system."""

    def __init__(self) -> None:
        self.bookings: dict[str, tuple[str, str, int]] = {}

    def book_table(self, day: str, time: str, guests: int) -> str:
        """Book a table and return the booking reference.

        The JSON schema the model sees is derived from this signature and docstring.
        """
        if not "12:00" <= time <= "22:00":
            raise ValueError(f"we are closed at {time}; open 12:00-22:00")
        reference = f"BK-{1000 + len(self.bookings) + 1}"
        self.bookings[reference] = (day, time, guests)
        return reference

    def send_confirmation(self, reference: str) -> dict[str, Any]:
        """Email the confirmation of a booking to the guest."""
        return {"reference": reference, "sent": reference in self.bookings}


def booking_adapter(client: Any, model: str) -> OpenAIAdapter:
    """The agent under test, for an ``OpenAI`` or ``AsyncOpenAI`` client."""

    def tools() -> list[Any]:
        # Called once per run: every run books into its own empty Calendar.
        calendar = Calendar()
        return [calendar.book_table, calendar.send_confirmation]

    return OpenAIAdapter(
        client, model, SYSTEM_PROMPT, tools_factory=tools, options={"temperature": 0}
    )
