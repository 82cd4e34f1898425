"""The agent docs/livekit.md evaluates (its conftest imports ``MyAgent``): two tools."""

from __future__ import annotations

import random

from livekit.agents import Agent, RunContext, function_tool


class MyAgent(Agent):
    def __init__(self, rng: random.Random | None = None) -> None:
        super().__init__(instructions="You book tables at Chez Pytest.")
        self.rng = rng or random.Random(0)

    @function_tool
    async def book_table(self, ctx: RunContext, party_size: int, time: str, name: str) -> str:
        """Book a table.

        Args:
            party_size: Number of guests.
            time: 24-hour HH:MM.
            name: Name the booking is under.
        """
        return f"table for {party_size} at {time} under {name}, reference BK-{self.rng.randint(100, 999)}"

    @function_tool
    async def check_menu(self, ctx: RunContext, diet: str) -> str:
        """Dishes for a diet.

        Args:
            diet: For example "vegan".
        """
        return "mushroom risotto and lentil curry" if diet == "vegan" else "grilled fish"
