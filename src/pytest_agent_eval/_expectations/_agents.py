"""``agent_is``, ``handoff_to`` and ``handoff_from``: which agent holds the conversation, and
the handoffs of the turn, in multi-agent sessions.

Agents are named as the adapter names them (LiveKit: the agent's class name), compared
exactly. An adapter that does not report agents (`AgentTurn.active_agent` None) or handoffs
(`AgentTurn.handoffs` None) cannot decide these checks: they error, saying so, in the adapter's
words when it gives a reason (``metadata["agents_unobserved_reason"]``: a room agent that does
not publish its events).
"""

from __future__ import annotations

from typing import Any

from ..evaluators._agents import ActiveAgentEvaluator, HandoffEvaluator
from ..models import Expect
from ._base import Expectation, ExpectKey, keyed

__all__ = ["EXPECTATION", "ActiveAgentEvaluator", "HandoffEvaluator"]


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
