"""A user suite for shard tests, and running shards and merges of it as a user would.

The suite has what a merge must get right: groups by tag, marker and ``must_pass`` (plain tests
among the members), an enforced group, a failure a group absorbs, ERRORs, a Python test that
runs two evals, a marker-only eval, a parametrized agent and plain tests in no group.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from child_pytest import child_pytest_env

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["tests/evals"]

[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
pytest_markers = ["booking"]
must_pass = ["book_ok_1", "test_plain_named"]
threshold = 0.6

[tool.agent_eval.groups.strict]
tags = ["gate:strict"]
enforce = true
"""

CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply

@pytest.fixture
def llm_eval_agent():
    def agent(history):
        text = history[-1].content
        return AgentReply("sorry" if "bad" in text else "booked", [])
    return agent
"""

PAIR = """
import pytest
from pytest_agent_eval import AgentReply

@pytest.fixture(params=["fast", "slow"])
def llm_eval_agent(request):
    reply = "booked" if request.param == "fast" else "sorry"
    return lambda history: AgentReply(reply, [])
"""

PYTHON_EVALS = """
import pytest
from pytest_agent_eval import Expect, Turn

@pytest.mark.agent_eval(tags=["gate:booking"])
def test_two_evals(agent_eval):
    for word in ("lunch", "dinner"):
        agent_eval.run_sync(
            turns=[Turn(f"Book {word}", expect=Expect(reply_contains_any=["booked"]))], id=word
        ).assert_threshold()

@pytest.mark.agent_eval
def test_marker_only():
    assert True
"""

BROKEN_AGENT = """
import pytest

@pytest.fixture
def llm_eval_agent():
    return lambda history: {"not": "a reply"}
"""

JUDGE_DOWN = """
import pytest
from pytest_agent_eval import Expect, Turn
from pytest_agent_eval.evaluators._base import DeterministicEvaluator

class JudgeDown(DeterministicEvaluator):
    name = "judge"
    def evaluate(self, context):
        raise RuntimeError("judge is down: 503")

@pytest.mark.agent_eval(tags=["gate:booking"])
def test_judged(agent_eval):
    agent_eval.run_sync(
        turns=[Turn("Book", expect=Expect(evaluators=[JudgeDown()]))]
    ).assert_threshold()
"""

PLAIN = """
import pytest

def test_plain_named():
    pass

@pytest.mark.booking
def test_plain_member():
    pass

def test_plain_outside():
    pass
"""


def transcript(tid: str, user: str, *, tags: str, runs: int = 1) -> str:
    """A one-turn transcript whose agent passes unless ``user`` says "bad"."""
    return (
        f"id: {tid}\ntags: [{tags}]\nruns: {runs}\nthreshold: 0.5\nturns:\n  - user: {user}\n"
        "    expect:\n      reply_contains_any: [booked]\n"
    )


def write_suite(root: Path, *, errors: bool) -> None:
    """The suite under ``root``. With ``errors``: two evals that cannot evaluate the agent
    (one returns no reply, one's judge is down: ERRORs, never absorbed) and a failing member
    of the enforced group."""
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    tests = root / "tests"
    evals = tests / "evals"
    (evals / "pair").mkdir(parents=True, exist_ok=True)
    (tests / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (evals / "pair" / "conftest.py").write_text(textwrap.dedent(PAIR))
    (tests / "test_python_evals.py").write_text(textwrap.dedent(PYTHON_EVALS))
    (tests / "test_plain.py").write_text(textwrap.dedent(PLAIN))
    files = {
        "pair/side_by_side": transcript("side_by_side", "Book", tags="gate:booking"),
        "strict_ok": transcript("strict_ok", "Book now", tags="gate:strict", runs=2),
        "book_bad": transcript("book_bad", "Book, bad", tags="gate:booking", runs=2),
    }
    for i in range(1, 7):
        files[f"book_ok_{i}"] = transcript(
            f"book_ok_{i}", f"Book {i}", tags="gate:booking", runs=i % 3 + 1
        )
    if errors:
        (evals / "broken").mkdir()
        (evals / "broken" / "conftest.py").write_text(textwrap.dedent(BROKEN_AGENT))
        (tests / "test_judge_down.py").write_text(textwrap.dedent(JUDGE_DOWN))
        files["broken/no_reply"] = transcript("no_reply", "Book", tags="gate:booking")
        files["strict_bad"] = transcript("strict_bad", "bad strict", tags="gate:strict")
    for name, text in files.items():
        (evals / f"{name}.yaml").write_text(text)
    # An earlier session's results, to compare against.
    baseline = {
        "schema_version": 1,
        "generated_at": "2026-11-30T12:00:00+00:00",
        "evals": [
            {
                "key": "tests/evals/book_bad.yaml::book_bad",
                "label": "book_bad",
                "verdict": "passed",
                "runs": 10,
                "passed_runs": 10,
            },
            {
                "key": "tests/evals/book_ok_1.yaml::book_ok_1",
                "label": "book_ok_1",
                "verdict": "passed",
                "runs": 2,
                "passed_runs": 2,
            },
            {
                "key": "tests/evals/gone.yaml::gone",
                "label": "gone",
                "verdict": "passed",
                "runs": 1,
                "passed_runs": 1,
            },
        ],
    }
    (root / "base.json").write_text(json.dumps(baseline))


REPORTS = ("--agent-eval-report=r.md", "--agent-eval-html=r.html", "--agent-eval-results=r.json")


def run_pytest(
    root: Path, *args: str, summary: Path | None = None, live: bool = True
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest --agent-eval-live ARGS`` in ``root``, as a CI job runs it."""
    live_args = ["--agent-eval-live"] if live else []
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *live_args, *args],
        cwd=root,
        env=_env(summary),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def run_merge(
    root: Path, *args: str, summary: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``python -m pytest_agent_eval merge ARGS`` in ``root``."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval", "merge", *args],
        cwd=root,
        env=_env(summary),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _env(summary: Path | None) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "EVAL_LIVE", "GITHUB_"))
        or k == "PYTEST_XDIST_AUTO_NUM_WORKERS"
    }
    env["COLUMNS"] = "80"
    if summary is not None:
        env["GITHUB_STEP_SUMMARY"] = str(summary)
    return child_pytest_env(env)


def section(out: str, title: str) -> str:
    """The lines of a ``===== title =====`` section of pytest's terminal output."""
    match = re.search(rf"^=+ {re.escape(title)} =+$\n(.*?)(?=^[=-]{{5,}} )", out, re.M | re.S)
    return match.group(1) if match else ""


def short_summary(out: str) -> list[str]:
    """pytest's short test summary lines, and its last line without the time."""
    lines = section(out, "short test summary info").splitlines()
    last = re.sub(r" in [0-9.]+s.*$", "", out.strip().splitlines()[-1]).strip("= ")
    return [*sorted(lines), last]


_TIMES = [
    (re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC"), "generated <when>"),
    (re.compile(r"\d+\.\d+ ?s\b"), "<s>"),
    (re.compile(r" at 0x[0-9a-f]+"), " at <address>"),
]


def normalized(text: str) -> str:
    """A report with what differs between any two runs replaced: clock times, durations and
    object addresses (``<function <lambda> at 0x7f...>`` in an error)."""
    for pattern, repl in _TIMES:
        text = pattern.sub(repl, text)
    return text


def results_normalized(path: Path) -> dict[str, Any]:
    """A results file without its clock times, durations and provenance (shard, merged_from)."""
    document = json.loads(path.read_text())
    for key in ("generated_at", "duration_s", "shard", "merged_from"):
        document.pop(key)
    for entry in document["evals"]:
        entry.pop("duration_s")
        for run in entry.get("captures") or ():  # each run's and turn's wall times
            run.pop("duration_s")
            for turn in run["turns"]:
                for key in ("duration_s", "latency_s", "first_audio_latency_s"):
                    turn.pop(key)
    return document


def junit_normalized(path: Path) -> str:
    """A JUnit file without its times, timestamp and host (also the run times in failures)."""
    tree = ET.parse(path)
    for element in tree.iter():
        for attribute in ("time", "timestamp", "hostname"):
            element.attrib.pop(attribute, None)
    return normalized(ET.tostring(tree.getroot(), encoding="unicode"))


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    """An empty folder for a suite (filled by `write_suite`)."""
    root = tmp_path / "project"
    root.mkdir()
    return root
