"""A voice turn's timeline drawn in the HTML report, opened in real headless Chromium: the
user's and the agent's lanes on one axis, tool calls and interruptions marked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agent_eval._report._html import render_html
from pytest_agent_eval._report._records import EvalRecord, ReportData, SessionRecords
from pytest_agent_eval.models import RunResult, TranscriptResult, TurnResult
from pytest_agent_eval.voice._timeline import TimelineBuilder


def _turns() -> list[TurnResult]:
    builder = TimelineBuilder(clock="virtual", unobserved=["handoff"])
    builder.begin(10.0)
    builder.mark("stream", 10.1, edge="start")
    builder.mark("user_speech", 10.4, edge="start")
    builder.mark("vad_speech", 10.4, edge="start")
    builder.mark("vad_speech", 11.6, edge="end")
    builder.mark("stream", 11.7, edge="end")
    builder.mark("user_speech", 12.0, edge="end")
    builder.mark("end_of_turn", 12.0)
    builder.mark("tool_call", 12.0, edge="start", key="c1", name="get_weather")
    builder.mark("tool_call", 14.0, edge="end", key="c1")
    builder.mark("agent_speech", 14.0, edge="start")
    builder.annotate("agent_speech", text="It is sunny.")
    builder.mark("interruption", 15.0, kind="real")
    builder.mark("agent_speech", 15.3, edge="end")
    timeline = builder.take()
    return [
        TurnResult(index=0, user="Weather?", reply="It is sunny.", timeline=timeline),
        TurnResult(index=1, user="Thanks", reply="Bye"),  # a text turn: nothing drawn
    ]


@pytest.fixture
def report(tmp_path: Path) -> Path:
    result = TranscriptResult(True, 1.0, 1.0, [RunResult(0, _turns())], transcript_id="w")
    data = ReportData(
        session=SessionRecords(
            records=(EvalRecord(nodeid="w.yaml::w", transcript_id="w", result=result),)
        )
    )
    path = tmp_path / "report.html"
    path.write_text(render_html(data, rootdir=tmp_path, report_dir=tmp_path), encoding="utf-8")
    return path


def _box(page: Any, selector: str) -> dict[str, float]:
    box = page.locator(selector).first.bounding_box()
    assert box is not None, f"{selector} is not drawn"
    return box


@pytest.mark.browser
def test_the_turn_timeline_is_drawn_on_one_axis(browser: Any, report: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(report.as_uri())
    page.locator("details").first.evaluate("d => d.open = true")
    page.locator(".run-details, details").evaluate_all("ds => ds.forEach(d => d.open = true)")
    figures = page.locator("figure.timeline-figure")
    assert figures.count() == 1  # the voice turn only
    assert figures.first.is_visible()
    kinds = page.locator("svg.timeline [data-kind]").evaluate_all(
        "els => els.map(e => e.getAttribute('data-kind'))"
    )
    assert sorted(set(kinds)) == [
        "agent_speech",
        "end_of_turn",
        "interruption",
        "stream",
        "tool_call",
        "user_speech",
        "vad_speech",
    ]
    stream = _box(page, "svg.timeline [data-kind=stream]")
    agent = _box(page, "svg.timeline [data-kind=agent_speech]")
    tool = _box(page, "svg.timeline [data-kind=tool_call]")
    cut = _box(page, "svg.timeline [data-kind=interruption]")
    # One axis: the agent speaks after the user's audio ended and the tool returned; the
    # interruption falls inside the agent's speech and crosses both lanes.
    assert stream["x"] + stream["width"] < agent["x"]
    assert tool["x"] + tool["width"] <= agent["x"] + 1
    assert agent["x"] < cut["x"] < agent["x"] + agent["width"]
    assert cut["y"] <= stream["y"] and cut["y"] + cut["height"] >= tool["y"] + tool["height"]
    # The user's lane is above the agent's.
    assert stream["y"] < agent["y"] < tool["y"]
    title = page.locator("svg.timeline [data-kind=tool_call] title").text_content()
    assert title == "tool call 2.000 s to 4.000 s (name: get_weather)"
    caption = figures.first.locator("figcaption").inner_text()
    assert caption == "virtual clock; not observed by this adapter: handoff"
    page.close()
