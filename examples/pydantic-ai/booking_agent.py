"""A table-booking agent for a small restaurant, built with pydantic-ai."""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic_ai import Agent, RunContext

OPEN_HOURS = ("12:00", "22:00")


@dataclass
class Calendar:
    """Stands in for the restaurant's booking system; one per conversation."""

    bookings: dict[str, tuple[str, str, int]] = field(default_factory=dict)

    def book(self, day: str, time: str, guests: int) -> str:
        reference = f"BK-{1000 + len(self.bookings) + 1}"
        self.bookings[reference] = (day, time, guests)
        return reference


agent = Agent(
    "openai:gpt-4o",
    deps_type=Calendar,
    instructions=(
        "You book tables at Chez Pytest, open every day from 12:00 to 22:00. "
        "Use book_table to book, then confirm the day, time, party size and reference."
    ),
    # The model is only needed when the agent runs; tests may swap it (see tests/conftest.py).
    defer_model_check=True,
)


@agent.system_prompt(dynamic=True)
def bookings_so_far(ctx: RunContext[Calendar]) -> str:
    """Re-evaluated each turn: the agent knows what it already booked."""
    return f"Bookings made in this conversation: {sorted(ctx.deps.bookings) or 'none'}."


@agent.tool
def book_table(ctx: RunContext[Calendar], day: str, time: str, guests: int) -> str:
    """Book a table and return the booking reference.

    Args:
        day: Day of the week, lower case.
        time: 24-hour time, e.g. "19:00".
        guests: Party size.
    """
    return ctx.deps.book(day, time, guests)


@agent.tool_plain
def send_confirmation(reference: str) -> str:
    """Email the confirmation of a booking to the guest."""
    return f"confirmation for {reference} sent"
