"""Under ``-n 2`` the controller writes the same reports and applies the same gates."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

ProjectFactory = Callable[..., Path]

GROUPS = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.5

[tool.agent_eval.groups.release]
tags = ["smoke"]
must_pass = ["smoke_ok", "checkout_flow"]
"""


def _normalize(text: str) -> str:
    """Drop what legitimately differs between two sessions: clock times and durations."""
    text = re.sub(r" · generated [^·\n]*", "", text)
    text = re.sub(r" · session [\d.]+ s", "", text)
    return re.sub(r"\d+\.\d+ s\b", "<t> s", text)


def _run(pytester: pytest.Pytester, tag: str, *extra: str) -> tuple[pytest.RunResult, str, str]:
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-report",
        f"{tag}.md",
        "--agent-eval-html",
        f"{tag}.html",
        *extra,
    )
    md = (pytester.path / f"{tag}.md").read_text(encoding="utf-8")
    html = (pytester.path / f"{tag}.html").read_text(encoding="utf-8")
    return result, md, html


def test_xdist_gives_the_same_reports_and_gates(
    pytester: pytest.Pytester, eval_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_project(groups=GROUPS, voice=True)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    single, single_md, single_html = _run(pytester, "single")
    dist, dist_md, dist_html = _run(pytester, "dist", "-n", "2")

    dist.stdout.fnmatch_lines(["*2 workers*"])  # it really was distributed
    assert single.ret == dist.ret == 0  # the booking group absorbs booking_flaky in both
    assert _normalize(dist_md) == _normalize(single_md)
    assert "## Groups" in dist_md and "voice_booking" in dist_md
    for lines in (single.outlines, dist.outlines):
        assert "booking: 1/2 passed (50%) >= 50% required -- PASSED" in lines
        assert "release: 1/1 passed (100%) >= 100% required -- FAILED" in lines
        assert "  must_pass: checkout_flow did not run (counts as FAILED)" in lines
    # Same rows, same audio players in the HTML report.
    for html in (single_html, dist_html):
        assert html.count('class="transcript-row') == 4
        assert html.count("<audio controls") == 8


def test_xdist_not_live_skips_and_writes_nothing_ran(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    eval_project(groups=GROUPS)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--agent-eval-report", "r.md"
    )
    result.assert_outcomes(skipped=3)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["3 eval test(s) skipped — live mode is off*"])
    text = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "No eval test ran in this session. 3 eval test(s) were skipped." in text
