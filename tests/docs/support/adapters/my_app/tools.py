"""The smolagents tool docs/adapters.md gives its agent."""

from __future__ import annotations

from smolagents import tool


@tool
def book_slot(day: str, time: str) -> str:
    """Book a slot.

    Args:
        day: The day, for example "friday".
        time: The time, 24-hour HH:MM.
    """
    return f"booked {day} {time}"
