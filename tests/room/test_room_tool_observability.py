"""Tool and agent expectations on a room run whose agent does not publish its events.

A room shows no tool calls, agents or handoffs; without publish_eval_events in the agent,
`LiveKitRoomAdapter` marks each reply ``tool_calls_unobserved`` and
``metadata["agents_unobserved_reason"]`` with hints naming the helper (see
test_room_adapter.py). Every tool and agent expectation must then error, naming the helper,
instead of passing on an empty call list or pointing at another adapter.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pytest_agent_eval._expectations._agents import ActiveAgentEvaluator, HandoffEvaluator
from pytest_agent_eval._expectations._tool_outcome import ToolOutcomeEvaluator
from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter
from pytest_agent_eval.adapters.livekit.room._needs_helper import AGENTS_HINT, HELPER_HINT
from pytest_agent_eval.evaluators import ToolCallArgsEvaluator, ToolCallEvaluator
from pytest_agent_eval.models import EvalResult, TurnContext

ROOM_METADATA_WITHOUT_HELPER: dict[str, Any] = {
    "livekit": {"mode": "room", "tool_calls_observed": False},
    "tool_calls_unobserved_reason": HELPER_HINT,
    "agents_unobserved_reason": AGENTS_HINT,
}
"""What LiveKitRoomAdapter puts on a reply when the agent has no publish_eval_events."""

EXPECTATIONS = [
    pytest.param(ToolCallEvaluator(exclude=["book_table"]), id="tool_calls_exclude"),
    pytest.param(ToolCallEvaluator(include=["check_menu"]), id="tool_calls_include"),
    pytest.param(ToolCallArgsEvaluator("check_menu", {"diet": "vegan"}), id="tool_calls_args"),
    pytest.param(ToolOutcomeEvaluator("check_menu", "ok"), id="tool_calls_outcome"),
]


def _context(metadata: dict[str, Any]) -> TurnContext:
    observed = metadata["livekit"]["tool_calls_observed"]
    return TurnContext(
        user="Do you have vegan dishes?",
        reply="Yes, we have mushroom risotto and lentil curry.",
        tool_calls=[],
        history=[],
        metadata=metadata,
        tool_calls_unobserved=None if observed else HELPER_HINT,
        active_agent="RestaurantAgent" if observed else None,
        handoffs=[] if observed else None,
    )


def _verdict(evaluator: Any, ctx: TurnContext) -> EvalResult:
    result = asyncio.run(evaluator.evaluate(ctx))
    assert isinstance(result, EvalResult)
    return result


def test_the_hint_names_the_helper() -> None:
    assert "publish_eval_events(session)" in HELPER_HINT
    assert LiveKitRoomAdapter.__doc__ is not None
    assert "tool_calls_unobserved" in LiveKitRoomAdapter.__doc__


@pytest.mark.parametrize("expectation", EXPECTATIONS)
def test_tool_expectations_fail_naming_the_helper_when_calls_are_unobservable(
    expectation: Any,
) -> None:
    result = _verdict(expectation, _context(ROOM_METADATA_WITHOUT_HELPER))
    assert result.passed is False and result.errored
    assert "publish_eval_events" in result.reasoning


@pytest.mark.parametrize(
    "expectation",
    [
        pytest.param(ActiveAgentEvaluator("BillingDesk"), id="agent_is"),
        pytest.param(HandoffEvaluator(to_agent="BillingDesk"), id="handoff_to"),
        pytest.param(HandoffEvaluator(from_agent="FrontDesk"), id="handoff_from"),
    ],
)
def test_agent_expectations_error_naming_the_helper_when_agents_are_unobservable(
    expectation: Any,
) -> None:
    result = _verdict(expectation, _context(ROOM_METADATA_WITHOUT_HELPER))
    assert result.passed is False and result.errored
    assert "publish_eval_events" in result.reasoning
    # Not the text adapters' wording, which points at another adapter.
    assert "text adapters" not in result.reasoning and "LiveKitAdapter" not in result.reasoning


def test_observed_and_absent_tool_calls_still_pass_an_exclusion() -> None:
    observed = {"livekit": {"mode": "room", "tool_calls_observed": True}}
    result = _verdict(ToolCallEvaluator(exclude=["book_table"]), _context(observed))
    assert result.passed is True


def test_only_the_helpers_events_are_read() -> None:
    from pytest_agent_eval.adapters.livekit.room._protocol import (
        EVAL_EVENTS_VERSION,
        parse_eval_event,
    )

    event = f'{{"v": {EVAL_EVENTS_VERSION}, "seq": 3, "t": 0, "type": "stage", "text": "x"}}'
    assert parse_eval_event(event) == {
        "v": EVAL_EVENTS_VERSION,
        "seq": 3,
        "t": 0,
        "type": "stage",
        "text": "x",
    }
    # Another version is still an event, so the adapter can say the helper is outdated.
    assert parse_eval_event('{"v": 1, "seq": 0, "t": 0, "type": "hello"}') == {
        "v": 1,
        "seq": 0,
        "t": 0,
        "type": "hello",
    }
    for other in ("not json", "[]", '{"seq": 0, "type": "hello"}', '{"v": 1, "type": "x"}'):
        assert parse_eval_event(other) is None
