"""Agent-initiated speech (greetings, say()) shows as its own line under the turn in every report,
also after travelling through xdist."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_agent_eval.models import (
    AgentSpeech,
    EvalResult,
    RunResult,
    TranscriptResult,
    TurnResult,
)
from pytest_agent_eval.report.account import format_account
from pytest_agent_eval.report.html import render_html
from pytest_agent_eval.report.markdown import render_markdown
from pytest_agent_eval.report.records import EvalRecord, ReportData, SessionRecords


def _result() -> TranscriptResult:
    turn = TurnResult(
        index=0,
        user="Hi",
        reply="Booked",
        evaluations=[EvalResult(False, "reply contains none of ['table']", name="reply")],
        agent_speech=[
            AgentSpeech(text="Welcome to <Bistro>!", cause="greeting", agent="host", latency_s=0.3),
            AgentSpeech(text="One moment please.", cause="say"),
        ],
    )
    return TranscriptResult(False, 0.0, 1.0, [RunResult(0, [turn])], transcript_id="t")


def test_account_markdown_and_html_show_one_marked_line_per_utterance(tmp_path: Path) -> None:
    result = _result()
    account = format_account(result).splitlines()
    assert "      agent-initiated (greeting, host, latency 0.30 s): 'Welcome to <Bistro>!'" in (
        account
    )
    assert "      agent-initiated (say): 'One moment please.'" in account
    assert account.index("      agent-initiated (say): 'One moment please.'") < account.index(
        "      reply: 'Booked'"
    )

    data = ReportData(
        session=SessionRecords(
            records=(EvalRecord(nodeid="t.yaml::t", transcript_id="t", result=result),)
        )
    )
    markdown = render_markdown(data)
    assert "- Agent-initiated (greeting, host, latency 0.30 s): Welcome to &lt;Bistro>!" in (
        markdown
    )
    assert "- Agent-initiated (say): One moment please." in markdown
    html = render_html(data, rootdir=tmp_path, report_dir=tmp_path)
    assert html.count("<dt>Agent-initiated</dt>") == 2
    assert "Welcome to &lt;Bistro&gt;!" in html and "<Bistro>" not in html


CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply
from pytest_agent_eval.models import AgentSpeech


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        speech = []
        if len(history) == 1:
            speech = [AgentSpeech(text="Hello from the host", cause="greeting", turn_index=0)]
        return AgentReply("Booked", [], agent_speech=speech)
    return agent
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["single", "xdist"])
def test_agent_speech_reaches_the_report_through_the_plugin(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("evals")
    (evals / "greet.yaml").write_text(
        textwrap.dedent(
            """
            id: greet
            turns:
              - user: Hi
                expect: {reply_contains_any: [booked]}
              - user: A table for two
                expect: {reply_contains_any: [booked]}
            """
        )
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "--agent-eval-report", "r.md", *workers
    )
    result.assert_outcomes(passed=1)
    report = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert report.count("- Agent-initiated (greeting): Hello from the host") == 1
    turn_one = report.index("**Turn 1**")
    turn_two = report.index("**Turn 2**")
    assert turn_one < report.index("Agent-initiated") < turn_two
