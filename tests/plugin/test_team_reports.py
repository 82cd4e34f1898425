"""Reports that tell the whole story (issue 17): errors keep their reason, a judge that was
down is an ERROR, parametrized agents are told apart, the threshold message is exact, and
every report states the session's facts. One real pytest session feeds most assertions."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

import pytest

from .conftest import Project, lit

AGENT = """
import itertools
from pytest_agent_eval.models import Usage

@pytest.fixture
def llm_eval_agent():
    counter = itertools.count()
    def agent(history):
        n = next(counter)
        ok = "TWO_OF_THREE" not in history[-1].content or n % 3 != 2
        return AgentReply("booked" if ok else "no", [], usage=Usage(10, 2, None))
    return agent
"""

PAIR = """
@pytest.fixture(params=["fast", "slow"])
def llm_eval_agent(request):
    reply = "booked" if request.param == "fast" else "sorry"
    return lambda history: AgentReply(reply, [])
"""

LISTENING = """
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

PYTHON_TESTS = """
from pytest_agent_eval.evaluators._base import DeterministicEvaluator

class JudgeDown(DeterministicEvaluator):
    name = "judge"
    def evaluate(self, context):
        raise RuntimeError("judge is down: 503")

@pytest.mark.agent_eval(runs=2)
def test_judged(agent_eval):
    agent_eval.run_sync(
        turns=[Turn("Book", expect=Expect(evaluators=[JudgeDown()]))]
    ).assert_threshold()

@pytest.mark.agent_eval(threshold=1.0)
def test_unasserted(agent_eval):
    agent_eval.run_sync(turns=[Turn("Book", expect=Expect(reply_contains_any=["nope"]))])

@pytest.mark.agent_eval
def test_marker_only():
    assert True
"""


def _write(project: Project) -> None:
    project.conftest(AGENT)
    project.conftest(PAIR, folder="tests/evals/pair")
    project.conftest(LISTENING, folder="tests/evals/voice")
    project.transcript(
        "pair/booking",
        """
        id: booking
        description: Books a table for two
        turns:
          - user: Book a table
            expect:
              reply_contains_any: [booked]
        """,
    )
    project.transcript(
        "close",
        """
        id: close_call
        runs: 3
        threshold: 0.67
        turns:
          - user: TWO_OF_THREE book
            expect:
              reply_contains_any: [booked]
        """,
    )
    project.transcript(
        "voice/voice_missing",
        """
        id: voice_missing
        threshold: 0.9
        runs: 4
        turns:
          - user: Book by voice
            audio: audio/missing.wav
            expect:
              reply_contains_any: [booked]
        """,
    )
    project.test_file("test_python.py", PYTHON_TESTS)


@pytest.fixture
def session(project: Project, monkeypatch: pytest.MonkeyPatch) -> tuple[pytest.RunResult, Path]:
    _write(project)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "step.md"))
    result = project.run_live(
        "--agent-eval-report",
        "r.md",
        "--agent-eval-html",
        "r.html",
        "--agent-eval-results",
        "results.json",
        "--junitxml",
        "junit.xml",
    )
    return result, project.path


def test_every_report_tells_the_whole_story(session: tuple[pytest.RunResult, Path]) -> None:
    result, root = session
    result.assert_outcomes(passed=2, failed=3, errors=2)
    out = result.stdout.str()
    markdown = (root / "r.md").read_text()
    step = (root / "step.md").read_text()

    # Parametrized agents: the parameter id in the table and in the failure header.
    result.stdout.fnmatch_lines_random(
        [
            "booking[[]fast]  *PASS*",
            "booking[[]slow]  *FAIL*",
            "*transcript: booking[[]slow]*",
        ]
    )
    assert "| booking[fast] |" in markdown and "| booking[slow] |" in markdown
    assert "### ❌ booking[slow]: FAIL" in markdown
    # ... and next to each other, per transcript, in both reports and the job summary.
    side = "| booking | PASS 1.00 [0.21–1.00] | FAIL 0.00 [0.00–0.79] |"
    assert "## Agents side by side\n\n| Transcript | fast | slow |" in markdown
    assert side in markdown and side in step

    # The threshold message never contradicts itself: 2/3 is below 0.67.
    result.stdout.fnmatch_lines(
        [
            lit("LLM eval failed: score=0.667 < threshold=0.670 (2/3 runs passed)"),
            lit("score=0.667 (95% CI 0.21-0.94) threshold=0.670, 2/3 runs passed"),
        ]
    )

    # A setup error (missing WAV) keeps its reason and fix in the reports, counted as ERROR,
    # with the threshold and the runs it was to have.
    fix = "Fix: python -m pytest_agent_eval.synthesize_audio tests/evals/voice/voice_missing.yaml"
    for text in (markdown, step):
        assert "| voice_missing | 0 of 4 | – | – | 0.90 | ⚠️ ERROR |" in text
    assert "- ⚠️ Error: audio fixtures not ready: 1 missing" in markdown and fix in markdown
    assert "asyncio" not in markdown  # not where pytest raised the failure

    # A judge that was down: ERROR with the judge's reason, not an agent FAIL.
    assert "| test_judged | 2 | 0 | – | 0.80 | ⚠️ ERROR |" in markdown
    assert "2 of 2 run(s) could not evaluate the agent (ERROR, left out of the score)" in markdown
    assert "judge is down: 503" in markdown
    result.stdout.fnmatch_lines_random(["test_judged  *ERROR*"])

    # A Python eval that never asserted its result fails, and says why.
    assert "(asserted by pytest-agent-eval when the test ended" in out
    assert "| test_unasserted | 1 | 0 | 0.00 | 1.00 | ❌ FAIL |" in markdown

    # A marker-only eval that passed is a PASS, not a skip.
    assert "| test_marker_only | – | – | – | 0.80 | ✅ PASS |" in markdown
    assert "skipped" not in markdown.split("## Summary")[0]

    # Description; Requests "–" when the adapter does not count them; no judge-token column.
    assert "- Description: Books a table for two" in markdown
    assert "| Agent | 60 | 12 | 72 | – |" in markdown
    assert "Judge tokens" not in markdown and "judge tokens" not in out
    assert "tokens: agent " in out and "judges" not in out

    # The headline always has the exit status; the session's facts are stated.
    assert " · exit status 1" in markdown.splitlines()[2]
    for fact in (
        "- pytest-agent-eval ",
        "- agent models: not reported",
        "- judge models: none ran",
        "- seeds: none set",
        "- session complete: yes",
    ):
        assert fact in markdown and fact in step

    # The results file: versioned, one entry per eval, keyed to survive sessions.
    document = json.loads((root / "results.json").read_text())
    assert document["schema_version"] == 1 and document["complete"] is True
    assert document["exit_status"] == 1
    # The frameworks installed where it ran (the pytester session's: this environment's).
    pydantic_ai = metadata.version("pydantic-ai-slim")
    assert document["frameworks"]["pydantic-ai-slim"] == pydantic_ai
    assert "smolagents-nonexistent" not in document["frameworks"]
    assert f"pydantic-ai-slim {pydantic_ai}" in markdown
    by_label = {e["label"]: e for e in document["evals"]}
    assert by_label["booking[slow]"]["param"] == "slow"
    assert by_label["booking[slow]"]["key"] == "tests/evals/pair/booking.yaml::booking[slow]"
    assert by_label["test_judged"]["verdict"] == "error"
    assert by_label["voice_missing"]["reason"].startswith("audio fixtures not ready")
    assert by_label["close_call"]["passed_runs"] == 2 and by_label["close_call"]["runs"] == 3
    assert by_label["close_call"]["agent_tokens"] == {
        "input": 30,
        "output": 6,
        "total": 36,
        "requests": None,
    }
    result.stdout.fnmatch_lines(["*agent eval results report: *results.json*"])

    # Tokens in JUnit properties; requests only where counted.
    cases = {c.get("name"): c for c in ET.parse(root / "junit.xml").iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["close_call"].iter("property")}
    assert props["agent_eval_agent_input_tokens"] == "30"
    assert props["agent_eval_agent_output_tokens"] == "6"
    assert "agent_eval_agent_requests" not in props


def test_a_baseline_compares_each_eval_then_and_now(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.agent("return AgentReply('booked' if os.environ['MODE'] == 'good' else 'nope', [])\n")
    conftest = project.path / "tests" / "conftest.py"
    conftest.write_text("import os\n" + conftest.read_text())
    steady = "id: {id}\nruns: 10\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [{want}]\n"
    project.transcript("regress", steady.format(id="regress", want="booked"))
    project.transcript("steady", steady.format(id="steady", want="booked, nope"))
    project.transcript("gone", steady.format(id="gone", want="booked"))
    monkeypatch.setenv("MODE", "good")
    project.run_live("--agent-eval-results", "base.json").assert_outcomes(passed=3)

    (project.path / "tests" / "evals" / "gone.yaml").unlink()
    project.transcript("fresh", steady.format(id="fresh", want="nope"))
    monkeypatch.setenv("MODE", "bad")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "step.md"))
    result = project.run_live("--agent-eval-baseline", "base.json", "--agent-eval-report", "r.md")
    result.assert_outcomes(passed=2, failed=1)

    headline = (
        "1 regressed, 0 improved, 1 unchanged within noise, 0 not comparable, 1 new, "
        "1 removed (McNemar's exact test on runs paired by number, p < 0.05)"
    )
    result.stdout.fnmatch_lines(
        [
            "*agent eval baseline*",
            "against base.json (*)",
            headline,
            "Transcript  Then  *",
            "*",
            "regress *1.00 [[]0.72–1.00] (10/10) *0.00 [[]0.00–0.28] (0/10) *regressed *0.002 *",
            "steady *1.00 [[]0.72–1.00] (10/10) *1.00 [[]0.72–1.00] (10/10) *unchanged within "
            "noise *1.000 *",
            "new: fresh",
            "removed: gone",
        ]
    )
    for text in ((project.path / "r.md").read_text(), (project.path / "step.md").read_text()):
        # Markdown escapes "<" (HTML), so the test's name reads "p &lt; 0.05" in the source.
        assert "## Baseline" in text and f"**{headline.replace('<', '&lt;')}**" in text
        assert (
            "| regress | 1.00 [0.72–1.00] (10/10) | 0.00 [0.00–0.28] (0/10) | regressed |" in text
        )
        assert "New: fresh" in text and "Removed: gone" in text


def test_a_bad_baseline_is_named_not_a_traceback(project: Project) -> None:
    project.echo_agent("booked")
    project.transcript("a", "id: a\nturns:\n  - user: hi\n")
    (project.path / "old.json").write_text('{"schema_version": 99, "evals": []}')
    result = project.run_live("--agent-eval-baseline", "old.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*baseline not compared: baseline *old.json: schema_version 99, this version reads 1*"]
    )


GATED = """
yaml_dirs = ["tests/evals"]
{extra}
[tool.agent_eval.groups.all]
tags = ["core"]
must_pass = ["bad_one"]
enforce = true
"""


@pytest.mark.parametrize(
    ("mode", "status", "said"),
    [
        # Strict: the gates decide the exit status, but what -k left out does not fail them.
        ("", 0, "WARNING: must_pass entry 'bad_one' did not run"),
        ('subset_gates = "report-only"', 0, "gates are report-only in this subset run"),
        ('subset_gates = "skip"', 0, "gates skipped: this is a subset run"),
    ],
)
def test_subset_runs_can_skip_or_only_report_gates(
    project: Project, mode: str, status: int, said: str
) -> None:
    project.pyproject(GATED.format(extra=mode))
    project.agent("return AgentReply('booked' if 'good' in history[-1].content else 'no', [])\n")
    tmpl = "id: {id}\ntags: [core]\nturns:\n  - user: {id}\n    expect:\n      reply_contains_any: [booked]\n"
    project.transcript("good_one", tmpl.format(id="good_one"))
    project.transcript("bad_one", tmpl.format(id="bad_one"))
    result = project.run_live("-k", "good", "--agent-eval-report", "r.md")
    # The focused run passes its one eval; the must_pass entry it left out only warns.
    result.assert_outcomes(passed=1)
    assert result.ret == status
    assert said in result.stdout.str()
    markdown = (project.path / "r.md").read_text()
    assert said in markdown and "- subset: -k good" in markdown
    # Without a subset, the configured mode does not matter: the gate is strict.
    full = project.run_live()
    assert full.ret == 1


def test_unknown_tag_is_named_with_the_tags_that_exist(project: Project) -> None:
    project.echo_agent("booked")
    project.transcript("a", "id: a\ntags: [smoke]\nturns:\n  - user: hi\n")
    result = project.run_live("--agent-eval-tags", "smok")
    result.stdout.fnmatch_lines(
        [
            "*--agent-eval-tags: no eval carries 'smok' (Did you mean 'smoke'?); tags of the "
            "collected evals: smoke*"
        ]
    )


def test_a_stop_after_the_first_failure_is_not_called_ctrl_c(project: Project) -> None:
    project.echo_agent("no")
    for name in ("a", "b", "c"):
        project.transcript(
            name,
            f"id: {name}\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [booked]\n",
        )
    result = project.run_live("-x", "--agent-eval-report", "r.md")
    result.assert_outcomes(failed=1)
    markdown = (project.path / "r.md").read_text()
    assert "- session complete: no (stopped early: stopping after 1 failures)" in markdown
    assert "Ctrl-C" not in markdown
    xdist = project.run_live("-x", "-n", "2", "--agent-eval-report", "x.md")
    text = (project.path / "x.md").read_text()
    assert "Ctrl-C" not in text and "(-x / --maxfail)" in text, text
    assert "session complete: no" in text
    assert "Ctrl-C" not in xdist.stdout.str()


def test_the_cut_step_summary_points_only_at_reports_that_exist(tmp_path: Path) -> None:
    from pytest_agent_eval._report._files import (
        GITHUB_STEP_SUMMARY_LIMIT_BYTES,
        append_step_summary,
    )

    big = "x" * (GITHUB_STEP_SUMMARY_LIMIT_BYTES + 1)
    target = tmp_path / "step.md"
    append_step_summary(big, "short", {"GITHUB_STEP_SUMMARY": str(target)})
    assert "no report file was written; pass --agent-eval-report PATH" in target.read_text()
    assert "see the report" not in target.read_text()
    append_step_summary(
        big, "short", {"GITHUB_STEP_SUMMARY": str(target)}, reports=[tmp_path / "r.md"]
    )
    assert f"see {tmp_path / 'r.md'}" in target.read_text()


def test_a_report_path_outside_the_project_in_space_form_is_refused_not_followed(
    project: Project,
) -> None:
    project.echo_agent("booked")
    project.transcript("a", "id: a\nturns:\n  - user: hi\n")
    outside = project.path.parent / f"{project.path.name}-reports" / "x.html"
    outside.parent.mkdir()
    outside.write_text("the parent's report")
    given = f"../{outside.parent.name}/x.html"
    result = project.run_live("--agent-eval-html", given)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--agent-eval-html {given}: write --agent-eval-html={given}*"])
    assert outside.read_text() == "the parent's report"
    # The "=" form is never read as a test path: it runs here and writes the report there.
    project.run_live(f"--agent-eval-html={given}").assert_outcomes(passed=1)
    assert outside.read_text().startswith("<!DOCTYPE html>")


def test_prices_per_model_turn_tokens_into_a_cost(project: Project) -> None:
    project.pyproject(
        """
        currency = "EUR"
        [tool.agent_eval.prices."openai:gpt-4o-mini"]
        input_per_million = 0.15
        output_per_million = 0.6
        """
    )
    project.agent(
        "from pytest_agent_eval.models import Usage\n"
        "model = 'gpt-4o-mini-2024-07-18' if 'priced' in history[-1].content else 'mystery'\n"
        "return AgentReply('booked', [], usage=Usage(1000, 500, 1), model=model)\n"
    )
    project.transcript("a", "id: a\nruns: 2\nturns:\n  - user: priced\n")
    project.transcript("b", "id: b\nturns:\n  - user: other\n")
    result = project.run_live("--agent-eval-report", "r.md", "--agent-eval-html", "r.html")
    result.assert_outcomes(passed=2)
    cost = "Cost: 0.0009 EUR (agent gpt-4o-mini-2024-07-18 0.0009)"
    unpriced = "1,500 tokens not priced (no model id reported, or no price for the model"
    result.stdout.fnmatch_lines([cost, unpriced + "*"])
    markdown = (project.path / "r.md").read_text()
    assert cost in markdown and unpriced in markdown
    assert "- agent models: gpt-4o-mini-2024-07-18, mystery" in markdown
    assert cost in (project.path / "r.html").read_text()


def test_a_bad_price_table_is_a_usage_error_naming_the_model(project: Project) -> None:
    project.pyproject(
        '[tool.agent_eval.prices."gpt-4o"]\ninput_per_million = "cheap"\noutput_per_million = 1\n'
    )
    project.echo_agent("booked")
    result = project.run_live()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*prices.'gpt-4o': prices must be numbers >= 0*"])


_ = os
