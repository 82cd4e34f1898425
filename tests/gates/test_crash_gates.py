"""An agent that crashes in real pytest runs: CRASHED in the terminal summary, both reports,
JUnit and the results file, and never absorbed by a lenient group unless
``crashes_fail_gates = false`` says a crash is an ordinary FAIL."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

CONFTEST = """
import itertools
import pytest
from pytest_agent_eval import AgentReply


@pytest.fixture
def llm_eval_agent():
    counter = itertools.count()

    async def agent(history):
        text = history[-1].content
        if "CRASHY" in text and next(counter) == 0:
            raise RuntimeError("kitchen printer offline")
        return AgentReply("booked", ["book"])

    return agent
"""

TRANSCRIPTS = {
    "booking_ok": "id: booking_ok\ntags: [gate:booking]\nturns:\n"
    "  - user: Book\n    expect:\n      reply_contains_any: [booked]\n",
    # 2 of 3 runs pass against 1.0: a FAIL a lenient group would absorb, were it not a crash.
    "booking_crashy": "id: booking_crashy\nruns: 3\nthreshold: 1.0\ntags: [gate:booking]\n"
    "turns:\n  - user: CRASHY book\n    expect:\n      reply_contains_any: [booked]\n",
}

LENIENT = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.5
"""


def _project(pytester: pytest.Pytester, settings: str = "") -> None:
    pyproject = (
        '[tool.agent_eval]\nyaml_dirs = ["tests/evals"]\n'
        + textwrap.dedent(settings)
        + textwrap.dedent(LENIENT)
    )
    pytester.makefile(".toml", pyproject=pyproject)
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("tests").joinpath("evals")
    evals.mkdir()
    for name, body in TRANSCRIPTS.items():
        evals.joinpath(f"{name}.yaml").write_text(body, encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-report",
        "r.md",
        "--agent-eval-html",
        "r.html",
        "--agent-eval-results",
        "r.json",
        "--junitxml",
        "junit.xml",
        *args,
    )


def test_a_crash_is_shown_everywhere_and_no_lenient_group_absorbs_it(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester)
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 1  # before: exit 0, the failure absorbed by the passing group
    where = "conftest.py:13 in agent"
    crash = (
        "booking_crashy: 1 of 3 run(s) crashed: run 1, turn 1: RuntimeError: kitchen printer "
        f"offline (at {where})"
    )
    result.stdout.fnmatch_lines(
        [
            "*CRASHED: 1 of 3 run(s) crashed: run 1, turn 1: RuntimeError: kitchen printer*",
            "*= agent eval summary =*",
            "booking_crashy*3*2*0.67*1.00*CRASHED*",
            "1/2 evals passed",
            f"crashed: {crash}",
            "*= group summary =*",
            "booking: 1/2 passed (50%) >= 50% required -- FAILED",
            "  failures: booking_crashy",
            "  crashed (the agent crashed; fails the group whatever its pass rate): booking_crashy",
            "1 crash(es) of the agent (never absorbed): "
            "tests/evals/booking_crashy.yaml::booking_crashy; *",
        ]
    )
    markdown = pytester.path.joinpath("r.md").read_text(encoding="utf-8")
    assert "| booking_crashy | 3 | 2 | 0.67 | 1.00 | 💥 CRASHED |" in markdown
    assert f"- 💥 Crashed: {crash.split(': ', 1)[1]}" in markdown
    assert f"- 💥 Crashed: RuntimeError: kitchen printer offline (at {where})" in markdown
    html = pytester.path.joinpath("r.html").read_text(encoding="utf-8")
    assert '<span class="badge crashed">CRASHED</span>' in html
    assert "Crashed: 1 of 3 run(s) crashed" in html
    entry = next(
        e
        for e in json.loads(pytester.path.joinpath("r.json").read_text(encoding="utf-8"))["evals"]
        if e["transcript_id"] == "booking_crashy"
    )
    assert entry["verdict"] == "crashed" and entry["crash"] == crash.split(": ", 1)[1]
    # The per-turn captures say which run and turn crashed, and how.
    crashed_runs = [r for r in entry["captures"] if r["verdict"] == "crashed"]
    assert len(crashed_runs) == 1
    (turn,) = [t for t in crashed_runs[0]["turns"] if t["crash"] is not None]
    assert turn["verdict"] == "crashed"
    assert turn["crash"]["type"] == "RuntimeError"
    assert turn["crash"]["message"] == "kitchen printer offline"
    tree = ET.parse(pytester.path / "junit.xml")
    case = next(c for c in tree.iter("testcase") if c.get("name") == "booking_crashy")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["agent_eval_verdict"] == "crashed"
    assert props["agent_eval_crashed_runs"] == "1"
    assert props["agent_eval_crash"] == crash.split(": ", 1)[1]


def test_crashes_fail_gates_false_makes_a_crash_an_ordinary_fail(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, "crashes_fail_gates = false\n")
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "booking_crashy*FAIL*",
            "booking: 1/2 passed (50%) >= 50% required -- PASSED",
            "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: "
            "tests/evals/booking_crashy.yaml::booking_crashy",
        ]
    )
