"""The seeded fault corpus of the attribution tests (issue 35): one known cause per case, each
case a folder of a pytester project with its own ``llm_eval_agent`` and transcript.

Every case books a table (or asks about the menu) by voice, with fixtures made by the offline
TTS; what differs is the one component made to fail:

- ``hearing``: the STT stand-in misreads "fifteen" as "fifty" (on purpose, every time);
- ``logic``: the scripted LLM reads a correct "fifteen" as 50 guests (a wrong tool argument);
- ``tool``: the menu tool raises for the diet asked about;
- ``passing``: nothing fails;
- ``crash``: the model breaks on the booking, in the rule callback the user gave it
  (``_broken``): a CRASHED run on every framework, at that callback, never attributed;
- ``latency``: a right booking, slower than an impossible latency bound (undetermined).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

FIFTEEN = "Hi, I am Alice and I would like a table for fifteen at seven pm."
KOSHER = "Do you have kosher dishes?"

BOOKING_YAML = """
id: {case}_booking
turns:
  - user: "{phrase}"
    audio: ../audio/fifteen.wav
    expect:
      tool_calls_args:
        - tool: book_table
          args: {{party_size: 15}}
"""

MENU_YAML = """
id: {case}_menu
turns:
  - user: "{phrase}"
    audio: ../audio/kosher.wav
    expect:
      reply_contains_any: ["we have"]
"""

LATENCY_YAML = """
id: {case}_booking
turns:
  - user: "{phrase}"
    audio: ../audio/fifteen.wav
    expect:
      tool_calls_args:
        - tool: book_table
          args: {{party_size: 15}}
      max_latency_ms: 0.001
"""

CASES = {
    "hearing": "booking",
    "logic": "booking",
    "tool": "menu",
    "passing": "booking",
    "crash": "booking",
    "latency": "latency",
}
"""Each case and what its caller asks for."""

CASE_CONFTEST = """
import pytest
from fault_agents import adapter


@pytest.fixture
def llm_eval_agent(monkeypatch):
    return adapter({case!r}, monkeypatch)
"""

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 1
threshold = 1.0

[tool.pytest.ini_options]
testpaths = ["evals"]
"""


def write_corpus(root: Path, fault_agents: str) -> None:
    """The corpus's project under ``root``: ``fault_agents.py`` (the framework's agents, with
    ``adapter(case)``), a pyproject, and one folder per case under ``evals/``."""
    (root / "fault_agents.py").write_text(fault_agents)
    (root / "conftest.py").write_text('"""Puts the project folder on sys.path."""\n')
    (root / "pyproject.toml").write_text(PYPROJECT)
    for case, kind in CASES.items():
        folder = root / "evals" / case
        folder.mkdir(parents=True)
        (folder / "conftest.py").write_text(CASE_CONFTEST.format(case=case))
        template, phrase = {
            "booking": (BOOKING_YAML, FIFTEEN),
            "menu": (MENU_YAML, KOSHER),
            "latency": (LATENCY_YAML, FIFTEEN),
        }[kind]
        (folder / f"{case}.yaml").write_text(template.format(case=case, phrase=phrase))


def synthesize_corpus(root: Path) -> None:
    """Make the corpus's WAV fixtures (with their word timings) with the offline TTS."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    transcripts = [load_transcript_file(p) for p in sorted((root / "evals").rglob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()


def attributions(path: Path) -> dict[str, Any]:
    """Per eval of a results file (by transcript id): its verdict and its one run's
    attribution."""
    document = json.loads(path.read_text())
    return {
        entry["transcript_id"]: (entry["verdict"], entry["captures"][0]["attribution"])
        for entry in document["evals"]
    }


def junit_causes(path: Path) -> dict[str, str | None]:
    """Per test of a JUnit file (by name): its ``agent_eval_causes`` property, or None."""
    import xml.etree.ElementTree as ET

    return {
        case.get("name", ""): next(
            (p.get("value") for p in case.iter("property") if p.get("name") == "agent_eval_causes"),
            None,
        )
        for case in ET.parse(path).iter("testcase")
    }


def run_corpus(project: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict[str, Any]]:
    """Run the corpus live, one run per transcript, writing a results file; the run and what
    `attributions` reads from the file."""
    result = project.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json", *args
    )
    return result, attributions(project.path / "r.json")


def check_shared_causes(
    result: pytest.RunResult, found: dict[str, Any], junit: Path, crash_verdict: str
) -> None:
    """What every framework's corpus gives alike: the tool, passing, latency and crash cases,
    the JUnit properties and the terminal lines (the hearing and logic cases differ by how
    each framework's hearing can be swapped)."""
    verdict, tool = found["tool_menu"]
    assert verdict == "failed" and tool["cause"] == "tool"
    (call,) = tool["evidence"]
    assert call["tool"] == "check_menu" and "kosher" in call["error"]
    verdict, passing = found["passing_booking"]
    assert verdict == "passed" and passing is None
    verdict, latency = found["latency_booking"]
    assert verdict == "failed" and latency["cause"] == "undetermined"
    (only,) = latency["evidence"]  # nothing rerun: a text turn's latency says nothing
    assert "failed only its timing or turn-taking (max_latency_ms (line 10))" in only["detail"]
    verdict, crashed = found["crash_booking"]
    assert verdict == crash_verdict and crashed is None  # a crash is not explained
    check_crash_at_callback(junit.parent / "r.json")
    assert junit_causes(junit) == {
        "hearing_booking": "hearing=1",
        "logic_booking": "agent_logic=1",
        "tool_menu": "tool=1",
        "passing_booking": None,
        "crash_booking": None,
        "latency_booking": "undetermined=1",
    }
    result.stdout.fnmatch_lines(
        [
            '*cause: hearing — heard "fifty", intended "fifteen"*',
            "*cause: agent_logic — given as text, turn 1 fails the same check*",
            "*cause: tool — tool 'check_menu' failed: *kosher*",
            "*4 failed runs: 1 agent_logic, 1 hearing, 1 tool, 1 undetermined*",
        ]
    )


def check_crash_at_callback(results: Path) -> None:
    """The crash case's crash, as the results file (`run_corpus`'s) has it: the rule callback's
    exception, at the callback (``_broken`` in ``fault_agents.py``), on every framework."""
    document = json.loads(results.read_text())
    (entry,) = [e for e in document["evals"] if e["transcript_id"] == "crash_booking"]
    (turn,) = entry["captures"][0]["turns"]
    crash = turn["crash"]
    assert (crash["type"], crash["message"]) == ("RuntimeError", "the model broke"), turn
    assert crash["where"].startswith("fault_agents.py:") and crash["where"].endswith(" in _broken")


def turn_attribution_off(project: pytest.Pytester) -> None:
    """``attribute = false`` in the corpus's pyproject (attribution is on by default)."""
    pyproject = project.path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace("runs = 1\n", "runs = 1\nattribute = false\n")
    )


def check_attribution_off(
    result: pytest.RunResult, found: dict[str, Any], crash_verdict: str
) -> None:
    """With attribution off: the same verdicts, and no cause written anywhere."""
    assert {k: v for k, (v, _) in found.items()} == {
        "hearing_booking": "failed",
        "logic_booking": "failed",
        "tool_menu": "failed",
        "passing_booking": "passed",
        "crash_booking": crash_verdict,
        "latency_booking": "failed",
    }
    assert all(attribution is None for _, attribution in found.values())
    assert "cause:" not in result.stdout.str() and "failed runs:" not in result.stdout.str()
