"""``agent_is``, ``handoff_to`` and ``handoff_from``: which agent holds the conversation, and
the handoffs of the turn, in multi-agent sessions.

Agents are named as the adapter names them (LiveKit: the agent's class name), compared
exactly. An adapter that does not report agents (`AgentTurn.active_agent` None) or handoffs
(`AgentTurn.handoffs` None) cannot decide these checks: they error, saying so, in the adapter's
words when it gives a reason (``metadata["agents_unobserved_reason"]``: a room agent that does
not publish its events).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..evaluators.base import DeterministicEvaluator
from ..models import EvalResult, Expect, Handoff, TurnContext
from .base import Expectation, ExpectKey, keyed, unobserved

__all__ = ["EXPECTATION", "ActiveAgentEvaluator", "HandoffEvaluator"]

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


def _checks(expect: Expect) -> list[Any]:
    checks: list[Any] = []
    if expect.handoff_to or expect.handoff_from:
        # One check of one handoff (from this agent to that one): named by handoff_to when set.
        key = "handoff_to" if expect.handoff_to else "handoff_from"
        checks.append(keyed(HandoffEvaluator(expect.handoff_to, expect.handoff_from), key))
    if expect.agent_is:
        checks.append(keyed(ActiveAgentEvaluator(expect.agent_is), "agent_is"))
    return checks


_AGENT_NAME: dict[str, Any] = {"type": "string", "minLength": 1}

EXPECTATION = Expectation(
    name="agents",
    keys=(
        ExpectKey(
            name="agent_is",
            schema=_AGENT_NAME,
            description="Multi-agent adapters: this agent (LiveKit: its class name) is the "
            "active one at the end of the turn. Errors with adapters that do not report agents.",
            example="BillingAgent",
        ),
        ExpectKey(
            name="handoff_to",
            schema=_AGENT_NAME,
            description="Multi-agent adapters: a handoff to this agent happened in the turn. "
            "Errors with adapters that do not report handoffs.",
            example="BillingAgent",
        ),
        ExpectKey(
            name="handoff_from",
            schema=_AGENT_NAME,
            description="Multi-agent adapters: a handoff away from this agent happened in the "
            "turn (with handoff_to, the same handoff went from this agent to that one). Errors "
            "with adapters that do not report handoffs.",
            example="Receptionist",
        ),
    ),
    checks=_checks,
)
