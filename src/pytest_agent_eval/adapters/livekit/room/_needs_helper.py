"""What a room alone cannot show a caller (tool calls, agents and handoffs, whether the agent
heard a whole fixture), the fix (`publish_eval_events` in the agent's entrypoint), and the turns
that cannot run without it.
"""

from __future__ import annotations

from typing import Any

from ....errors import AdapterError
from ....models import Turn
from ...base import TurnInput

__all__ = ["AGENTS_HINT", "HEARING_HINT", "HELPER_FIX", "HELPER_HINT", "refuse_undecidable"]

HELPER_FIX = "add publish_eval_events(session) (from pytest_agent_eval.adapters.livekit) to the agent's entrypoint"

HELPER_HINT = f"a LiveKit room shows no tool calls: {HELPER_FIX} so the test can see them"
"""Why a room run's tool calls are not observable, and the fix (``metadata``
``["tool_calls_unobserved_reason"]`` when the agent does not publish them)."""

AGENTS_HINT = (
    "a LiveKit room does not show which agent is active or the handoffs between agents: "
    f"{HELPER_FIX} so the test can see them"
)
"""Why a room run's agents and handoffs are not observable (``metadata``
``["agents_unobserved_reason"]`` when the agent does not publish them)."""

HEARING_HINT = (
    "a LiveKit room does not show whether the agent has heard the whole audio fixture and its "
    "STT has transcribed every part of it (an agent on a busy machine answers the first part "
    f"of a fixture with a pause while it still transcribes the rest): {HELPER_FIX}"
)
"""Why an audio turn cannot end for a known reason without the agent-side helper."""


def refuse_undecidable(
    turn: TurnInput,
    helper: dict[str, Any] | None,
    realtime: dict[str, Any] | None,
    note: str,
) -> None:
    """Refuse, before saying anything, a turn the room alone cannot decide (``helper``: the
    agent-side helper's hello, None without it; ``realtime``: its account of the agent's
    realtime model; ``note``: why the helper seen is not the one this package speaks to)."""
    realtime = realtime if turn.audio is not None else None
    if realtime is not None:
        model = realtime.get("model") or "realtime model"
        if realtime.get("hearing") == "none":
            raise AdapterError(
                f"audio fixture {turn.audio}: the agent's {model} in the worker was given "
                "hearing=None, so it cannot hear the caller; give it hearing=WhisperSTT() "
                "(real recognition, in the worker), or leave the default hearing (the "
                "fixture's provenance: the test hands the worker what each phrase says)"
            )
        if realtime.get("vad_problem"):
            raise AdapterError(
                f"audio fixture {turn.audio}: the test cannot find where the agent's "
                f"{model} will take the turns in it: {realtime['vad_problem']}"
            )
        return
    if helper is not None:
        if turn.audio is not None and helper.get("vad") is None:
            raise AdapterError(
                f"audio fixture {turn.audio}: the agent's helper cannot tell when the agent "
                f"has heard the whole fixture: {helper.get('vad_problem')}"
            )
        return
    if turn.audio is not None:
        raise AdapterError(
            f"audio fixture {turn.audio}: the turn cannot end once the agent heard the whole "
            f"audio fixture, because {HEARING_HINT}{note}"
        )
    if expected := _tool_expectations(turn.turn):
        raise AdapterError(
            f"this turn has tool expectations ({', '.join(expected)}) but they cannot be "
            f"checked: {HELPER_HINT}{note}"
        )
    if expected := _agent_expectations(turn.turn):
        raise AdapterError(
            f"this turn has agent expectations ({', '.join(expected)}) but they cannot be "
            f"checked: {AGENTS_HINT}{note}"
        )


def _tool_expectations(turn: Turn) -> list[str]:
    """The turn's expectations on tool calls, by name."""
    expect = turn.expect
    found = [
        name
        for name, value in (
            ("tool_calls_include", expect.tool_calls_include),
            ("tool_calls_exclude", expect.tool_calls_exclude),
            ("tool_calls_args", expect.tool_calls_args),
            ("tool_calls_outcome", expect.tool_calls_outcome),
        )
        if value
    ]
    found += [
        type(e).__name__
        for e in expect.evaluators
        if type(e).__name__.startswith("ToolCall") or type(e).__name__ == "ToolOutcomeEvaluator"
    ]
    return found


def _agent_expectations(turn: Turn) -> list[str]:
    """The turn's expectations on agents and handoffs, by name."""
    expect = turn.expect
    found = [
        name
        for name, value in (
            ("agent_is", expect.agent_is),
            ("handoff_to", expect.handoff_to),
            ("handoff_from", expect.handoff_from),
        )
        if value
    ]
    found += [
        type(e).__name__
        for e in expect.evaluators
        if type(e).__name__ in ("ActiveAgentEvaluator", "HandoffEvaluator")
    ]
    return found
