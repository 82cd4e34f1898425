"""The HTML report of 2,000 transcripts, opened in headless Chromium: still usable.

No timing is asserted (bench/html_report.py measures that); these are the structural facts that
keep a big report usable: the chart sits in a bounded scroll box, the failed-only filter hides
passing rows and their bars, and each transcript's data is written once, so the file grows with
the transcripts' own text and nothing else.
"""

from __future__ import annotations

from html import escape
from pathlib import Path
from typing import Any

from pytest_agent_eval._report._html import render_html
from pytest_agent_eval._report._records import EvalRecord, ReportData, SessionRecords
from pytest_agent_eval.models import (
    EvalResult,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
    Usage,
)

TRANSCRIPTS = 2000
RUNS = 2
TURNS = 2


def _record(i: int) -> EvalRecord:
    """Transcript ``i``: passes unless ``i % 5 == 0``; every text names where it comes from."""
    passed = i % 5 != 0
    runs = []
    for r in range(RUNS):
        ok = passed or r == 0
        turns = [
            TurnResult(
                index=t,
                user=f"Book a table for two, request {i}-{r}-{t}",
                reply=f"Booked table BK-{i:05d}-{r}{t} for two at 7pm." if ok else "Sorry.",
                tool_calls=[ToolCall("book", {"party": 2, "ref": f"{i}-{r}-{t}"}, output="ok")],
                evaluations=[
                    EvalResult(ok, f"judge reasoning {i}-{r}-{t}: confirms the booking", "judge")
                ],
                latency_s=0.5 + 0.01 * (i % 9),
                usage=Usage(100, 20, 1),
            )
            for t in range(TURNS)
        ]
        runs.append(RunResult(index=r, turns=turns))
    score = sum(run.passed for run in runs) / RUNS
    tid = f"booking_{i:05d}"
    return EvalRecord(
        nodeid=f"tests/evals/{tid}.yaml::{tid}",
        transcript_id=tid,
        result=TranscriptResult(
            passed=passed, score=score, threshold=0.75, runs=runs, transcript_id=tid
        ),
        test_outcome="passed" if passed else "failed",
    )


def _texts(record: EvalRecord) -> list[str]:
    """The transcript's own text as the report escapes it: what must appear, once."""
    assert record.result is not None
    out = []
    for run in record.result.runs:
        for turn in run.turns:
            out += [turn.user, turn.reply, *(e.reasoning for e in turn.evaluations)]
    return [escape(text, quote=False) for text in out]


def test_a_report_of_2000_transcripts_stays_usable(browser: Any, tmp_path: Path) -> None:
    records = [_record(i) for i in range(TRANSCRIPTS)]
    failed = [r.label for r in records if r.verdict != "passed"]
    html = render_html(
        ReportData(session=SessionRecords(records=tuple(records))),
        rootdir=tmp_path,
        report_dir=tmp_path,
    )
    path = tmp_path / "report.html"
    path.write_text(html, encoding="utf-8")

    # Each transcript's data is written once: no second copy (a JSON blob, a per-row chart
    # tooltip repeating the turns) grows the file. The replies of passing runs repeat by
    # design ("Sorry." is shared), so the unique texts are counted.
    texts = [text for r in records for text in _texts(r) if text != "Sorry."]
    assert all(html.count(text) == 1 for text in texts[:: TRANSCRIPTS // 20])
    own_bytes = sum(len(text.encode()) for text in texts)
    # The rest is markup: table row, chart row, details, turn layout. Per transcript of
    # 2 runs x 2 turns it is about 3.7 kB; a budget of 5 kB leaves room to grow but not to
    # write a transcript twice (which would add its own text and markup again).
    size = path.stat().st_size
    assert size - own_bytes < 5_000 * TRANSCRIPTS, (size, own_bytes)

    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.goto(path.as_uri())
    box = page.locator("figure.chart-box")
    chart = page.locator("svg.chart")
    box_height = box.evaluate("el => el.getBoundingClientRect().height")
    chart_height = chart.evaluate("el => el.getBoundingClientRect().height")
    # The chart is drawn in full (one 24 px row per transcript) but shown in a box no taller
    # than 60% of the window, scrolled inside it.
    assert chart_height > 24 * TRANSCRIPTS
    assert 0 < box_height <= 0.6 * 900 + 1
    assert box.evaluate("el => getComputedStyle(el).overflowY") == "auto"
    assert box.evaluate("el => el.scrollHeight > el.clientHeight")

    page.get_by_label(f"Failed only ({len(failed)})").check()
    visible_rows = page.locator("#summary-table tbody tr").evaluate_all(
        "rows => rows.filter(r => !r.hidden).map(r => r.getAttribute('data-verdict'))"
    )
    assert visible_rows == ["failed"] * len(failed)
    assert page.locator("details.transcript:not([hidden])").count() == len(failed)
    bars = page.locator("svg.chart g.chart-row").evaluate_all(
        "gs => gs.filter(g => getComputedStyle(g).display !== 'none')"
        ".map(g => [g.getAttribute('data-transcript'), g.getAttribute('transform')])"
    )
    assert bars == [[label, f"translate(0 {24 * n})"] for n, label in enumerate(failed)]
    assert chart.get_attribute("height") == str(24 * (len(failed) + 1) + 4)
    assert box.evaluate("el => el.getBoundingClientRect().height") <= 0.6 * 900 + 1
    page.close()
