"""Which agent holds the conversation and the handoffs of a turn (``agent_is``, ``handoff_to``,
``handoff_from``).

The evaluators the expectation registry builds for these keys
(`pytest_agent_eval._expectations._agents`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import EvalResult, Handoff, TurnContext
from ._base import DeterministicEvaluator, unobserved

__all__ = ["ActiveAgentEvaluator", "HandoffEvaluator"]


_NO_AGENTS = (
    "this adapter does not report which agent is active (text adapters run one agent); "
    "agent_is needs a multi-agent adapter such as LiveKitAdapter"
)
_NO_HANDOFFS = (
    "this adapter does not report handoffs (text adapters run one agent); handoff_to and "
    "handoff_from need a multi-agent adapter such as LiveKitAdapter"
)


def _reason(ctx: TurnContext, default: str) -> str:
    """Why the adapter could not see agents: its own reason when it gives one."""
    reason = ctx.metadata.get("agents_unobserved_reason")
    return reason if isinstance(reason, str) and reason else default


def _describe(handoffs: list[Handoff]) -> str:
    if not handoffs:
        return "no handoff in this turn"
    shown = ", ".join(f"{h.from_agent or '?'} -> {h.to_agent}" for h in handoffs)
    return f"handoffs in this turn: {shown}"


@dataclass
class ActiveAgentEvaluator(DeterministicEvaluator):
    """Passes when ``agent`` is the active agent at the end of the turn.

    Args:
        agent: The agent's name (LiveKit: its class name).
        name: Display name in results.
    """

    agent: str
    name: str = "agent_is"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the turn's active agent with ``agent``."""
        if ctx.active_agent is None:
            return unobserved(self.name, _reason(ctx, _NO_AGENTS))
        if ctx.active_agent == self.agent:
            return EvalResult(True, f"{self.agent} is the active agent", name=self.name)
        seen = f"; {_describe(ctx.handoffs)}" if ctx.handoffs is not None else ""
        return EvalResult(
            False,
            f"the active agent at the end of the turn is {ctx.active_agent}, not "
            f"{self.agent}{seen}",
            name=self.name,
        )


@dataclass
class HandoffEvaluator(DeterministicEvaluator):
    """Passes when one handoff of the turn went to ``to_agent`` and/or from ``from_agent``.

    Args:
        to_agent: The agent that must have taken over, or None for any.
        from_agent: The agent that must have handed off, or None for any.
        name: Display name in results.
    """

    to_agent: str | None = None
    from_agent: str | None = None
    name: str = "handoff"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Look for a handoff of the turn matching both ends asked for."""
        if ctx.handoffs is None:
            return unobserved(self.name, _reason(ctx, _NO_HANDOFFS))
        wanted = " ".join(
            part
            for part in (
                f"from {self.from_agent}" if self.from_agent else "",
                f"to {self.to_agent}" if self.to_agent else "",
            )
            if part
        )
        for handoff in ctx.handoffs:
            if (self.to_agent is None or handoff.to_agent == self.to_agent) and (
                self.from_agent is None or handoff.from_agent == self.from_agent
            ):
                return EvalResult(True, f"a handoff {wanted} happened", name=self.name)
        return EvalResult(False, f"no handoff {wanted} ({_describe(ctx.handoffs)})", name=self.name)
