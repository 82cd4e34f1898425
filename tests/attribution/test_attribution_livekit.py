"""Failure attribution on real LiveKit AgentSessions (issue 35): the seeded fault corpus
(`fault_corpus`) through pytest itself, each case's cause read back from the results file and
the terminal, and the verdicts the same with attribution on and off."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
from fault_corpus import (
    check_attribution_off,
    check_shared_causes,
    run_corpus,
    synthesize_corpus,
    turn_attribution_off,
    write_corpus,
)

EXAMPLE_AGENT = (
    Path(__file__).resolve().parents[2] / "examples" / "voice-livekit" / "booking_agent.py"
)

CRASH_VERDICT = "crashed"
"""A model that breaks is the agent crashing: a CRASHED run, which attribution leaves alone."""
OUTCOMES = dict(passed=1, failed=5)

FAULT_AGENTS = '''
"""The example's restaurant agent, with one fault seeded per case."""

from booking_agent import RULES, TIME, VAD, RestaurantAgent, _booking_args
from livekit.agents import AgentSession

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)


class MisreadingSTT(FixtureTextSTT):
    """The fixture's own words, but "fifteen" misread as "fifty", every time."""

    async def _transcribe(self, frame):
        return (await super()._transcribe(frame)).replace("fifteen", "fifty")


def _teens_as_tens(ctx):
    args = _booking_args(ctx)
    if (ctx.group("party") or "").lower() == "fifteen":
        args["party_size"] = 50  # the model's mistake: the transcript is right
    return args


WRONG_ARGUMENT = [
    Rule(rf"table for (?P<party>\\w+) at {TIME}(?:.*?\\bunder (?P<name>\\w+))?",
         tool="book_table", args=_teens_as_tens,
         reply="You're all set: {output}."),
    *RULES[1:],
]

def _broken(ctx):
    raise RuntimeError("the model broke")


BROKEN = [
    Rule(rf"table for (?P<party>\\w+) at {TIME}", tool="book_table", args=_broken),
    *RULES[1:],
]

KOSHER = [
    Rule(r"\\b(?P<diet>kosher)", tool="check_menu", args={"diet": "{diet}"},
         reply=lambda ctx: "Sorry, I could not check the menu." if ctx.tool_error
         else f"Yes, we have {ctx.tool_output}."),
    *RULES,
]


def adapter(case, monkeypatch):
    def factory():
        stt = MisreadingSTT() if case == "hearing" else FixtureTextSTT()
        rules = {"logic": WRONG_ARGUMENT, "tool": KOSHER, "crash": BROKEN}.get(case, RULES)
        session = AgentSession(stt=stt, vad=VAD, llm=ScriptedLLM(rules), **eval_session_kwargs())
        return session, RestaurantAgent()

    return LiveKitAdapter(factory, timeout_s=20.0)
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # In the fixture, not at import: collecting the suite must load no model (Silero).
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")
    root = tmp_path_factory.mktemp("livekit_corpus")
    shutil.copy(EXAMPLE_AGENT, root / "booking_agent.py")
    write_corpus(root, FAULT_AGENTS)
    synthesize_corpus(root)
    return root


@pytest.fixture
def project(pytester: pytest.Pytester, corpus: Path) -> pytest.Pytester:
    shutil.copytree(corpus, pytester.path, dirs_exist_ok=True)
    return pytester


def test_each_seeded_fault_is_attributed_to_its_cause(project: pytest.Pytester) -> None:
    # On by default: nothing in pyproject.toml or on the command line turns it on.
    result, found = run_corpus(
        project,
        "--junitxml=junit.xml",
        "--agent-eval-report=report.md",
        "--agent-eval-html=report.html",
    )
    result.assert_outcomes(**OUTCOMES)

    verdict, hearing = found["hearing_booking"]
    assert verdict == "failed" and hearing["cause"] == "hearing"
    misheard = [e for e in hearing["evidence"] if e["counterfactual"] == "heard_words"]
    assert [(e["heard"], e["intended"], e["turn"]) for e in misheard] == [("fifty", "fifteen", 0)]
    # Rerun as audio with the agent's STT swapped for the fixture's words, and passed: no
    # text rerun needed.
    assert [e["counterfactual"] for e in hearing["evidence"]] == ["heard_words", "fixture_hearing"]
    rerun = hearing["evidence"][1]
    assert rerun["verdict"] == "passed" and rerun["turn"] == 0
    assert "with the fixture's words as its STT, turn 1 passes" in rerun["detail"]

    verdict, logic = found["logic_booking"]
    assert verdict == "failed" and logic["cause"] == "agent_logic"
    # Heard right; its agent already hears with the stand-in, so there is no STT to swap:
    # the evidence says so, and the text rerun decides.
    assert [(e["counterfactual"], e["verdict"]) for e in logic["evidence"]] == [
        ("heard_words", "none"),
        ("fixture_hearing", "error"),
        ("text_rerun", "failed"),
    ]
    assert "already hears with FixtureTextSTT" in logic["evidence"][1]["error"]

    check_shared_causes(result, found, project.path / "junit.xml", CRASH_VERDICT)

    # The markdown and HTML reports: the cause and its evidence on each failed run, and the
    # per-cause table.
    markdown = (project.path / "report.md").read_text()
    assert '**Cause:** hearing — heard "fifty", intended "fifteen"' in markdown
    assert (
        "- fixture_hearing (passed): with the fixture's words as its STT, turn 1 passes" in markdown
    )
    assert "**Cause:** tool — tool 'check_menu' failed" in markdown
    causes = markdown.split("## Failure causes", 1)[1].split("##", 1)[0]
    assert [line for line in causes.splitlines() if line.startswith("| ")] == [
        "| Cause | Failed runs |",
        "| agent_logic | 1 |",
        "| hearing | 1 |",
        "| tool | 1 |",
        "| undetermined | 1 |",
        "| total | 4 |",
    ]
    html = (project.path / "report.html").read_text()
    assert html.count('<div class="cause">') == 4
    assert "<strong>Cause:</strong> hearing — heard &quot;fifty&quot;" in html
    assert '<section id="causes"><h2>Failure causes</h2>' in html
    assert '<td>total</td><td class="num">4</td>' in html


def test_attribution_off_changes_no_verdict_and_writes_none(project: pytest.Pytester) -> None:
    turn_attribution_off(project)
    result, found = run_corpus(project)
    result.assert_outcomes(**OUTCOMES)
    check_attribution_off(result, found, CRASH_VERDICT)


def test_an_eval_that_reaches_its_threshold_is_not_attributed(project: pytest.Pytester) -> None:
    """A green suite costs nothing extra: a failed run of an eval that still passed (here its
    threshold is 0) is not rerun, as a flaky 4-of-5 eval would have been on every CI run."""
    pyproject = project.path / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("threshold = 1.0", "threshold = 0.0"))
    result, found = run_corpus(project, "-k", "hearing or logic")
    result.assert_outcomes(passed=2)
    assert found["hearing_booking"] == ("passed", None)
    assert found["logic_booking"] == ("passed", None)
    document = json.loads((project.path / "r.json").read_text())
    assert {e["captures"][0]["verdict"] for e in document["evals"]} == {"failed"}


def test_the_same_labels_on_every_rerun_and_at_both_speeds(project: pytest.Pytester) -> None:
    labels = []
    for speed in ("0", "0", "1"):  # two consecutive runs at max speed, then real time
        result, found = run_corpus(project, f"--agent-eval-speed={speed}")
        result.assert_outcomes(**OUTCOMES)
        labels.append(found)
    first = labels[0]
    assert {k: (v, a and a["cause"]) for k, (v, a) in first.items()} == {
        "hearing_booking": ("failed", "hearing"),
        "logic_booking": ("failed", "agent_logic"),
        "tool_menu": ("failed", "tool"),
        "passing_booking": ("passed", None),
        "crash_booking": (CRASH_VERDICT, None),
        "latency_booking": ("failed", "undetermined"),
    }
    # The whole record, evidence and all, is the same every time and at both speeds.
    assert labels[1] == first and labels[2] == first


def test_compare_shows_how_the_causes_changed(project: pytest.Pytester) -> None:
    pyproject = project.path / "pyproject.toml"
    default = pyproject.read_text()
    turn_attribution_off(project)
    result, _ = run_corpus(project)  # attribution off: no causes
    result.assert_outcomes(**OUTCOMES)
    (project.path / "r.json").rename(project.path / "off.json")
    pyproject.write_text(default)
    result, _ = run_corpus(project)
    result.assert_outcomes(**OUTCOMES)
    compared = project.run(
        sys.executable,
        "-m",
        "pytest_agent_eval",
        "compare",
        "off.json",
        "r.json",
        "--markdown",
        "compare.md",
    )
    assert compared.ret == 0
    compared.stdout.fnmatch_lines(
        [
            "failure causes: none -> 1 agent_logic, 1 hearing, 1 tool, 1 undetermined",
            "  hearing_booking: none -> 1 hearing",
            "  latency_booking: none -> 1 undetermined",
            "  logic_booking: none -> 1 agent_logic",
            "  tool_menu: none -> 1 tool",
        ]
    )
    changes = compared.stdout.str().split("failure causes:", 1)[1].split("markdown:", 1)[0]
    assert "passing_booking" not in changes and "crash_booking" not in changes
    markdown = (project.path / "compare.md").read_text()
    assert "## Failure causes\n\n- failure causes: none -> 1 agent_logic" in markdown
    assert "- hearing_booking: none -> 1 hearing" in markdown
