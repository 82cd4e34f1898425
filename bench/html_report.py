"""The HTML report at scale: file size, load time in headless Chromium, and the chart's height.

Usage:
    python bench/html_report.py [--transcripts 2000 300] [--repeat 3] [--keep DIR]

Builds a session of N transcripts the way a real run records them (`EvalRecord` with a
`TranscriptResult`: 3 runs x 3 turns, a tool call with arguments and output per turn, a rule
check and a judge verdict with its reasoning, tokens and latency; 70% pass, 20% fail, 10% error
because the judge was down), renders it with the real `render_html`, writes the file and opens it
in headless Chromium (the one the HTML report tests use, ``AGENT_EVAL_CHROMIUM`` to change it).

Prints per N: the file size; the page's own Navigation Timing (``domContentLoadedEventEnd`` and
``loadEventEnd``: the report's script runs inline before the load event, so it is included),
best of ``--repeat`` fresh pages; the time the "Failed only" filter takes until the next frame;
and the chart box's rendered height against the chart's own height.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

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

CHROMIUM = os.environ.get("AGENT_EVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-sync"]

USERS = (
    "I'd like to book a table for {n} people tomorrow at 7pm, somewhere by the window if you can.",
    "Actually, can you move it to 8pm? One of us is running late from work.",
    "Great, and please send the confirmation to my email address on file. Thanks!",
)


def make_record(i: int) -> EvalRecord:
    """One eval of 3 runs x 3 turns; ``i % 10`` decides pass (0-6), fail (7-8) or error (9)."""
    kind = "passed" if i % 10 < 7 else ("failed" if i % 10 < 9 else "error")
    runs = []
    for r in range(3):
        run_ok = kind == "passed" or r == 0
        turns = []
        for t in range(3):
            turn_ok = run_ok or t < 2
            judge_down = kind == "error" and not turn_ok
            reasoning = (
                "The reply confirms the booking, repeats the time and party size, and offers "
                "to send a confirmation; it stays polite and does not invent details."
                if turn_ok
                else "The reply says the booking was changed but gives no new time."
            )
            turns.append(
                TurnResult(
                    index=t,
                    user=USERS[t].format(n=2 + i % 5),
                    reply=(
                        f"Done: table for {2 + i % 5} at {7 + t}pm, reference BK-{i:05d}-{r}{t}. "
                        "I've sent the details to your email; anything else?"
                        if turn_ok
                        else "Sorry, I changed it."
                    ),
                    tool_calls=[
                        ToolCall(
                            "book_table",
                            {"party": 2 + i % 5, "time": f"{19 + t}:00", "window": True},
                            output={"ok": True, "reference": f"BK-{i:05d}-{r}{t}"},
                        )
                    ],
                    evaluations=[
                        EvalResult(True, "", "tool_calls_include"),
                        EvalResult(
                            turn_ok,
                            "judge unavailable: 503 Service Unavailable"
                            if judge_down
                            else reasoning,
                            "judge",
                            errored=judge_down,
                            usage=Usage(420, 60, 1),
                            model="openai:gpt-4o-mini",
                        ),
                    ],
                    duration_s=0.8 + 0.01 * t,
                    latency_s=0.6 + 0.05 * ((i + r + t) % 7),
                    usage=Usage(900, 80, 1),
                    model="openai:gpt-4o",
                )
            )
        runs.append(RunResult(index=r, turns=turns, duration_s=2.5))
    passed = sum(run.passed for run in runs)
    result = TranscriptResult(
        passed=kind == "passed",
        score=passed / 3,
        threshold=0.66,
        runs=runs,
        transcript_id=f"booking_{i:05d}",
        planned_runs=3,
        tags=["booking"],
        duration_s=7.5,
    )
    return EvalRecord(
        nodeid=f"tests/evals/booking_{i:05d}.yaml::booking_{i:05d}",
        transcript_id=f"booking_{i:05d}",
        tags=("booking",),
        path=f"tests/evals/booking_{i:05d}.yaml",
        result=result,
        test_outcome="passed" if kind == "passed" else "failed",
        description="Books a table and moves it",
        threshold=0.66,
        planned_runs=3,
    )


def make_data(n: int) -> ReportData:
    """A session of ``n`` evals as `make_record` builds them."""
    return ReportData(session=SessionRecords(records=tuple(make_record(i) for i in range(n))))


LOAD_TIMING = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return [nav.domContentLoadedEventEnd, nav.loadEventEnd];
}"""

FILTER_TIMING = """() => new Promise(resolve => {
  const start = performance.now();
  const box = document.getElementById('filter-failed');
  box.checked = true;
  box.dispatchEvent(new Event('change'));
  document.body.getBoundingClientRect();
  requestAnimationFrame(() => setTimeout(() => resolve(performance.now() - start), 0));
})"""

CHART_SIZES = """() => [
  document.querySelector('figure.chart-box').getBoundingClientRect().height,
  document.querySelector('svg.chart').getBoundingClientRect().height,
]"""


def measure(browser: object, path: Path, repeat: int) -> dict[str, float]:
    """Best-of-``repeat`` load figures of the report at ``path`` in fresh pages."""
    best: dict[str, float] = {}
    for _ in range(repeat):
        page = browser.new_page(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
        start = time.perf_counter()
        page.goto(path.as_uri(), wait_until="load")
        wall = (time.perf_counter() - start) * 1000
        dcl, load = page.evaluate(LOAD_TIMING)
        box, chart = page.evaluate(CHART_SIZES)
        filter_ms = page.evaluate(FILTER_TIMING)
        box_failed, chart_failed = page.evaluate(CHART_SIZES)
        page.close()
        figures = {
            "dcl_ms": dcl,
            "load_ms": load,
            "wall_ms": wall,
            "filter_ms": filter_ms,
        }
        for key, value in figures.items():
            best[key] = min(best.get(key, value), value)
        best.update(box=box, chart=chart, box_failed=box_failed, chart_failed=chart_failed)
    return best


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transcripts", type=int, nargs="+", default=[2000, 300])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="write the reports into this folder")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        print(
            "| transcripts | file | render (Python) | DOMContentLoaded | load event | "
            "goto wall | failed-only filter | chart box / chart height (all) | "
            "(failed only) |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for n in args.transcripts:
            data = make_data(n)
            start = time.perf_counter()
            html = render_html(data, rootdir=folder, report_dir=folder)
            render_s = time.perf_counter() - start
            path = folder / f"report-{n}.html"
            path.write_text(html, encoding="utf-8")
            mb = path.stat().st_size / 1e6
            m = measure(browser, path, args.repeat)
            print(
                f"| {n:,} | {mb:.1f} MB | {render_s:.2f} s | {m['dcl_ms'] / 1000:.2f} s | "
                f"{m['load_ms'] / 1000:.2f} s | {m['wall_ms'] / 1000:.2f} s | "
                f"{m['filter_ms']:.0f} ms | {m['box']:.0f} / {m['chart']:.0f} px | "
                f"{m['box_failed']:.0f} / {m['chart_failed']:.0f} px |"
            )
        browser.close()


if __name__ == "__main__":
    main()
