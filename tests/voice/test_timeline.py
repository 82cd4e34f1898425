"""The turn timeline record and its framework-neutral builder (issue 33)."""

from __future__ import annotations

import pytest

from pytest_agent_eval._serialize import from_json, to_json
from pytest_agent_eval.models import AgentReply, Timeline, TimelineEvent, TurnResult
from pytest_agent_eval.voice._timeline import TimelineBuilder


def test_builder_times_marks_from_the_turn_anchor_in_order() -> None:
    builder = TimelineBuilder(clock="virtual", unobserved=["handoff"])
    builder.begin(100.0)
    builder.mark("stream", 100.0, edge="start")
    builder.mark("vad_speech", 100.25, edge="start")
    builder.mark("vad_speech", 101.5, edge="end")
    builder.mark("stream", 102.0, edge="end")
    builder.mark("end_of_turn", 101.9)
    builder.mark("tool_call", 102.1, edge="start", key="c1", name="lookup")
    builder.mark("tool_call", 102.4, edge="end", key="c1", error="boom")
    builder.mark("agent_speech", 102.5, edge="start")
    timeline = builder.take()
    assert timeline.clock == "virtual"
    assert timeline.unobserved == ["handoff"]
    assert [(e.kind, e.t_start, e.t_end) for e in timeline.events] == [
        ("stream", 0.0, 2.0),
        ("vad_speech", 0.25, 1.5),
        ("end_of_turn", 1.9, None),
        ("tool_call", 2.1, 2.4),
        ("agent_speech", 2.5, None),  # still open at the end of the turn
    ]
    assert timeline.of("tool_call")[0].detail == {"name": "lookup", "error": "boom"}
    assert timeline.end_s == 2.5


def test_a_span_open_at_the_end_of_a_turn_carries_into_the_next() -> None:
    builder = TimelineBuilder(clock="real")
    builder.begin(10.0)
    builder.mark("agent_speech", 11.0, edge="start", text="Hello")
    builder.take()
    builder.mark("end_of_turn", 12.0)  # between turns: not a turn's
    builder.begin(13.0)
    builder.mark("agent_speech", 14.0, edge="end")
    timeline = builder.take()
    assert [(e.kind, e.t_start, e.t_end, e.detail) for e in timeline.events] == [
        ("agent_speech", 0.0, 1.0, {"text": "Hello"})
    ]


def test_an_end_never_seen_to_start_is_drawn_from_the_anchor() -> None:
    builder = TimelineBuilder(clock="real")
    builder.begin(5.0)
    builder.mark("user_speech", 6.0, edge="end")
    assert [(e.t_start, e.t_end) for e in builder.take().events] == [(0.0, 1.0)]


def test_unknown_kinds_are_refused() -> None:
    with pytest.raises(ValueError, match="timeline kind"):
        TimelineBuilder(clock="real").mark("laughter", 1.0)
    with pytest.raises(ValueError, match="unknown timeline kinds"):
        TimelineBuilder(clock="real", unobserved=["laughter"])
    with pytest.raises(ValueError, match="ends"):
        TimelineEvent(kind="stream", t_start=2.0, t_end=1.0)
    with pytest.raises(ValueError, match="clock"):
        Timeline(clock="wall")  # type: ignore[arg-type]


def test_the_record_travels_on_a_turn_and_back() -> None:
    timeline = Timeline(
        events=[
            TimelineEvent(kind="stream", t_start=0.0, t_end=1.2),
            TimelineEvent(kind="interruption", t_start=0.8, detail={"kind": "false"}),
        ],
        clock="virtual",
        unobserved=["tool_call"],
    )
    reply = AgentReply("hi", [], timeline=timeline)
    result = TurnResult(0, "hello", "hi", [], timeline=reply.timeline)
    data = to_json(result)
    assert data["timeline"]["events"][1] == {
        "kind": "interruption",
        "t_start": 0.8,
        "t_end": None,
        "detail": {"kind": "false"},
    }
    assert from_json(TurnResult, data).timeline == timeline


def test_the_results_file_writes_a_turns_timeline() -> None:
    from pytest_agent_eval._report._results_file import _turn_capture

    builder = TimelineBuilder(clock="real", unobserved=["user_speech"])
    builder.begin(1.0)
    builder.mark("tool_call", 1.5, edge="start", key="c", name="lookup")
    builder.mark("tool_call", 1.75, edge="end", key="c", status="error")
    turn = TurnResult(0, "hello", "hi", [], timeline=builder.take())
    assert _turn_capture(turn)["timeline"] == {
        "events": [
            {
                "kind": "tool_call",
                "t_start": 0.5,
                "t_end": 0.75,
                "detail": {"name": "lookup", "status": "error"},
            }
        ],
        "clock": "real",
        "unobserved": ["user_speech"],
    }
