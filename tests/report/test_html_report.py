"""The HTML report opened in real headless Chromium: what a person sees and can click.

Set ``AGENT_EVAL_SCREENSHOT_DIR`` to save the screenshots used in docs/reports.md.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ProjectFactory = Callable[..., Path]

GROUPS = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.5

[tool.agent_eval.groups.voice]
tags = ["voice"]
enforce = true
"""


@pytest.fixture
def report(pytester: pytest.Pytester, eval_project: ProjectFactory) -> Path:
    eval_project(groups=GROUPS, voice=True)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval-live", "--agent-eval-html", "site/report.html"
    )
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*agent eval html report: *site*report.html*"])
    path = pytester.path / "site" / "report.html"
    # Opened from a copy elsewhere: nothing may depend on the project folder.
    copy = pytester.path.parent / f"{pytester.path.name}-copy" / "report.html"
    copy.parent.mkdir()
    shutil.copyfile(path, copy)
    return copy


def _screenshot(page: Any, name: str) -> None:
    folder = os.environ.get("AGENT_EVAL_SCREENSHOT_DIR")
    if folder:
        page.screenshot(path=str(Path(folder) / name), full_page=False)


def test_html_report_renders_filters_and_plays_audio(browser: Any, report: Path) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    requests: list[str] = []
    page.on("request", lambda r: requests.append(r.url))
    page.goto(report.as_uri())

    # The summary table: one row per transcript, with verdicts a person can read.
    rows = page.locator("#summary-table tbody tr")
    assert rows.count() == 4
    assert all(rows.nth(i).is_visible() for i in range(4))
    flaky = page.locator("#summary-table tbody tr", has_text="booking_flaky")
    ok = page.locator("#summary-table tbody tr", has_text="booking_ok")
    assert flaky.locator(".badge").inner_text() == "FAIL"
    assert ok.locator(".badge").inner_text() == "PASS"
    assert "0.67 [0.21–0.94]" in flaky.inner_text()
    assert page.locator("#groups-table").is_visible()
    assert "booking" in page.locator("#groups-table").inner_text()
    assert page.locator("#cost-table").is_visible()
    _screenshot(page, "html-report-summary.png")

    # The failed-only filter hides passing transcripts, in the table and in the details.
    page.get_by_label("Failed only (1)").check()
    assert flaky.is_visible()
    assert not ok.is_visible()
    assert not page.locator("details.transcript", has_text="smoke_ok").is_visible()
    assert page.locator("details.transcript", has_text="booking_flaky").is_visible()
    assert page.locator("#filter-count").inner_text() == "1 shown"
    # The chart follows the filter: one bar, at the top, and the chart shrinks to it.
    chart_rows = page.locator("svg.chart g.chart-row")
    visible = chart_rows.evaluate_all(
        "gs => gs.filter(g => getComputedStyle(g).display !== 'none')"
        ".map(g => [g.getAttribute('data-transcript'), g.getAttribute('transform')])"
    )
    assert visible == [["booking_flaky", "translate(0 0)"]]
    assert page.locator("svg.chart").get_attribute("height") == "52"
    _screenshot(page, "html-report-failed-only.png")
    page.get_by_label("All (4)").check()
    assert ok.is_visible()
    assert page.locator("svg.chart").get_attribute("height") == str(24 * 5 + 4)

    # The name filter.
    page.get_by_label("Filter by name").fill("voice")
    assert page.locator("#summary-table tbody tr:visible").count() == 1
    page.get_by_label("Filter by name").fill("")

    # A player for every voice turn: the fixture and the reply audio, 2 runs x 2 turns.
    players = page.locator("audio[controls]")
    assert players.count() == 8
    sources = players.evaluate_all("els => els.map(e => e.src)")
    assert all(src.startswith("data:audio/") for src in sources)
    duration = players.first.evaluate(
        """a => new Promise((resolve, reject) => {
            a.onloadedmetadata = () => resolve(a.duration);
            a.onerror = () => reject(new Error('audio did not load'));
            a.preload = 'metadata'; a.load();
        })"""
    )
    assert 0.2 < duration < 0.3  # the 0.25 s WAV written by the test project

    # Replies are text, never markup.
    voice = page.locator("details.transcript", has_text="voice_booking")
    voice.locator("summary").first.click()
    voice.locator("details.run").first.locator("summary").click()
    assert voice.get_by_text("Booked: *Book by voice* | <b>ok</b>").first.is_visible()
    assert page.locator("dd b:text-is('ok')").count() == 0
    voice.locator(".turn").first.scroll_into_view_if_needed()
    _screenshot(page, "html-report-voice-turn.png")

    # The chart: a pass-rate bar per transcript, a latency bar for the voice one.
    assert page.locator("svg.chart rect.rate").count() == 4
    assert page.locator("svg.chart rect.latency").count() == 1
    assert page.locator("svg.chart").is_visible()

    # Self-contained: the only thing loaded is the file itself (audio is data: URIs).
    assert [u for u in requests if not u.startswith(("file:", "data:"))] == []
    page.close()


def test_html_report_when_nothing_ran(
    browser: Any, pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    eval_project()
    out = pytester.path / "report.html"
    out.write_text("<html><body>old report: booking_ok PASS</body></html>", encoding="utf-8")
    pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-html", str(out))
    page = browser.new_page()
    page.goto(out.as_uri())
    assert page.locator("#nothing-ran").inner_text() == (
        "No eval test ran in this session. 3 eval test(s) were skipped."
    )
    assert "old report" not in page.content()
    page.close()


TEAM_CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply
from pytest_agent_eval.models import Usage

@pytest.fixture(params=["fast", "slow"])
def llm_eval_agent(request):
    reply = "booked" if request.param == "fast" else "sorry"
    return lambda history: AgentReply(reply, [], usage=Usage(10, 2, None))
"""

TEAM_VOICE_CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply

class Conversation:
    async def respond(self, turn):
        return AgentReply("booked")
    async def aclose(self):
        return None

class ListeningAdapter:
    consumes_audio = True
    async def start_conversation(self, info):
        return Conversation()

@pytest.fixture
def llm_eval_agent():
    return ListeningAdapter()
"""


def test_html_tells_agents_apart_and_keeps_error_reasons(
    browser: Any, pytester: pytest.Pytester
) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(TEAM_CONFTEST)
    evals = pytester.mkdir("evals")
    (evals / "booking.yaml").write_text(
        "id: booking\ndescription: Books a table for two\nturns:\n  - user: Book\n"
        "    expect:\n      reply_contains_any: [booked]\n"
    )
    voice = evals / "voice"
    voice.mkdir()
    (voice / "conftest.py").write_text(TEAM_VOICE_CONFTEST)
    (voice / "spoken.yaml").write_text(
        "id: spoken\nturns:\n  - user: Book\n    audio: audio/missing.wav\n"
    )
    first = pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval-live", "--agent-eval-results", "base.json"
    )
    first.assert_outcomes(passed=1, failed=1, errors=1)
    result = pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-baseline",
        "base.json",
        "--agent-eval-html",
        "report.html",
    )
    result.assert_outcomes(passed=1, failed=1, errors=1)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto((pytester.path / "report.html").as_uri())
    # Both agents, told apart in the table and in the chart.
    assert page.locator("#summary-table tbody tr", has_text="booking[fast]").is_visible()
    slow = page.locator("#summary-table tbody tr", has_text="booking[slow]")
    assert slow.locator(".badge").inner_text() == "FAIL"
    labels = page.locator("svg.chart .chart-row").evaluate_all(
        "rows => rows.map(r => r.getAttribute('data-transcript'))"
    )
    assert sorted(labels) == ["booking[fast]", "booking[slow]"]
    side = page.locator("#side-by-side-table")
    assert side.is_visible()
    assert side.locator("thead").inner_text().split() == ["Transcript", "fast", "slow"]
    assert side.locator("tbody tr").inner_text().split("\t") == [
        "booking",
        "PASS 1.00 [0.21–1.00]",
        "FAIL 0.00 [0.00–0.79]",
    ]
    # The missing fixture: ERROR with its reason and fix, in the open details.
    spoken = page.locator("details.transcript", has_text="spoken")
    assert spoken.locator(".badge").first.inner_text() == "ERROR"
    reason = spoken.locator(".error-reason")
    assert reason.is_visible()
    assert "Fix: python -m pytest_agent_eval.synthesize_audio" in reason.inner_text()
    # Description, the session's facts, Requests unknown, no judge column.
    assert page.get_by_text("Description: Books a table for two").count() == 2
    facts = page.locator("#session-facts").inner_text()
    assert "session complete: yes" in facts and "pytest-agent-eval" in facts
    assert "exit status 1" in page.locator("p.headline").inner_text()
    assert page.locator("#cost-table tr", has_text="Agent").locator("td").nth(4).inner_text() == "–"
    assert "Judge tokens" not in page.locator("#summary-table thead").inner_text()
    # The baseline, next to the results.
    baseline = page.locator("#baseline")
    assert baseline.is_visible()
    assert "unchanged within noise" in baseline.inner_text()
    assert "McNemar's exact test on runs paired by number" in baseline.inner_text()
    assert page.locator("#baseline-table tbody tr").count() == 3
