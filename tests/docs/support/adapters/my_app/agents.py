"""The agents docs/adapters.md evaluates: a pydantic-ai agent and a LangGraph graph, offline."""

from __future__ import annotations

from dataclasses import dataclass, field

from langchain_core.messages import AIMessage
from langgraph.graph import START, MessagesState, StateGraph
from pydantic_ai import Agent, RunContext


@dataclass
class Calendar:
    """A fake booking system; one per run keeps runs apart."""

    bookings: list[str] = field(default_factory=list)

    def book_table(self, day: str, time: str, guests: int = 2) -> str:
        """Book a table and return the booking reference."""
        reference = f"BK-{1001 + len(self.bookings)}"
        self.bookings.append(reference)
        return reference

    def send_confirmation(self, reference: str) -> str:
        """Email the confirmation of a booking."""
        return f"sent {reference}"


booking_agent = Agent("test", deps_type=Calendar, instructions="You book tables.")


@booking_agent.tool
def book_table(ctx: RunContext[Calendar], day: str, time: str, guests: int) -> str:
    """Book a table."""
    return ctx.deps.book_table(day, time, guests)


def _reply(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("Booked: BK-1001.")]}


_graph = StateGraph(MessagesState)
_graph.add_node("reply", _reply)
_graph.add_edge(START, "reply")
booking_graph = _graph.compile()
