"""Agent-initiated speech (greetings, say()) shows as its own line under the turn in every report,
also after travelling through xdist."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_agent_eval._report._account import format_account
from pytest_agent_eval._report._html import render_html
from pytest_agent_eval._report._markdown import render_markdown
from pytest_agent_eval._report._records import EvalRecord, ReportData, SessionRecords
from pytest_agent_eval.models import (
    AgentSpeech,
    EvalResult,
    Greeting,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
)


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


def _greeted_result() -> TranscriptResult:
    greeting = Greeting(
        [AgentSpeech(text="Welcome to <Bistro>!", cause="greeting", agent="Host", latency_s=0.4)],
        [ToolCall("load_menu", {}, output="ok", done=True)],
    )
    turn = TurnResult(
        index=0,
        user="Hi, this is Maria. [pause 2s] I need a refill.",
        reply="Refill sent.",
        heard="Hi, this is Maria. I need a refill.",
        heard_segments=["Hi, this is Maria.", "I need a refill."],
        evaluations=[EvalResult(True, "reply text checks passed", name="reply")],
    )
    run = RunResult(
        0,
        [turn],
        greeting=greeting,
        greeting_evaluations=[
            EvalResult(False, "greeting contains none of ['hello']", name="greeting")
        ],
    )
    return TranscriptResult(False, 0.0, 1.0, [run], transcript_id="t")


def test_the_greeting_and_heard_per_segment_show_in_every_report(tmp_path: Path) -> None:
    result = _greeted_result()
    assert TranscriptResult.from_dict(result.to_dict()) == result  # travels through xdist
    account = format_account(result).splitlines()
    assert account[1:] == [
        "  run 1: FAILED (0.00s)",
        "    greeting [FAIL]",
        "      agent-initiated (greeting, Host, latency 0.40 s): 'Welcome to <Bistro>!'",
        "      tools: load_menu({})",
        "      - greeting fail: greeting contains none of ['hello']",
        "    turn 1 [ok] user: 'Hi, this is Maria. [pause 2s] I need a refill.'",
    ]
    verbose = format_account(result, verbose=True)
    assert "      heard, segment 1 of 2: 'Hi, this is Maria.'" in verbose
    assert "      heard, segment 2 of 2: 'I need a refill.'" in verbose

    data = ReportData(
        session=SessionRecords(
            records=(EvalRecord(nodeid="t.yaml::t", transcript_id="t", result=result),)
        )
    )
    markdown = render_markdown(data)
    greeting_at = markdown.index("**Greeting** (before turn 1)")
    assert greeting_at < markdown.index("**Turn 1**")
    assert "- Agent-initiated (greeting, Host, latency 0.40 s): Welcome to &lt;Bistro>!" in (
        markdown
    )
    assert '- Tool calls: load_menu({}) → "ok"' in markdown  # verbatim: no escaped `_`
    assert "- ❌ greeting — greeting contains none of ['hello']" in markdown
    assert "- Heard, segment 1 of 2: Hi, this is Maria." in markdown
    assert "- Heard, segment 2 of 2: I need a refill." in markdown
    assert "- Heard: " not in markdown  # one line per segment instead of the joined text

    html = render_html(data, rootdir=tmp_path, report_dir=tmp_path)
    assert '<div class="turn bad"><b>Greeting</b><span class="meta">before turn 1</span>' in html
    assert "<dt>Heard, segment 1 of 2</dt><dd>Hi, this is Maria.</dd>" in html
    assert "<dt>Heard, segment 2 of 2</dt><dd>I need a refill.</dd>" in html
    assert "Welcome to &lt;Bistro&gt;!" in html and "<Bistro>" not in html


def test_a_run_without_greeting_or_checks_shows_no_greeting() -> None:
    result = _result()
    assert "greeting [" not in format_account(result, verbose=True)
    data = ReportData(
        session=SessionRecords(
            records=(EvalRecord(nodeid="t.yaml::t", transcript_id="t", result=result),)
        )
    )
    assert "**Greeting**" not in render_markdown(data)
