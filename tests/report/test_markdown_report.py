"""The markdown report, the CI step summary and the terminal summary, from real pytest runs."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest

ProjectFactory = Callable[..., Path]


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", *args)


def test_markdown_report_holds_every_run_turn_and_verdict(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project()
    result = _run(pytester, "--agent-eval-live", "--agent-eval-report", "out/deep/report.md")
    result.assert_outcomes(passed=2, failed=1)
    text = (root / "out" / "deep" / "report.md").read_text(encoding="utf-8")

    assert text.startswith("# Agent eval report\n")
    assert "**2 of 3 evals passed**" in text
    # Summary table: one row per transcript with runs, passed runs, score and interval.
    # The earlier package's six columns come first, in its order; then the interval and the test.
    assert "| Transcript | Runs | Passed | Score | Threshold | Status | 95% CI | Test |" in text
    assert re.search(
        r"^\| booking_flaky \| 3 \| 2 \| 0\.67 \| 1\.00 \| ❌ FAIL \| \[0\.21–0\.94\] \| "
        r"tests/evals/booking_flaky\.yaml::booking_flaky \|",
        text,
        re.M,
    )
    assert re.search(
        r"^\| booking_ok \| 3 \| 3 \| 1\.00 \| 0\.50 \| ✅ PASS \| \[0\.44–1\.00\] \|", text, re.M
    )
    # Per transcript, run and turn: user text, reply, tool calls with args and output, checks.
    assert "### ❌ booking_flaky: FAIL" in text
    assert (
        "#### Run 1: ❌ failed" in text
        or "#### Run 2: ❌ failed" in text
        or "#### Run 3: ❌ failed" in text
    )
    assert "- User: Book a table for 2" in text
    assert "- Reply: sorry, no slot" in text
    assert '- Tool calls: book({"note": "a\\|b", "x": 1}) → {"ok": true}' in text
    # Each check names its key and the line it is written on.
    assert (
        "- ❌ turns[0].expect.reply_contains_any (booking_flaky.yaml:9) — reply contains none of"
        in text
    )
    assert "- ✅ turns[0].expect.judge (booking_ok.yaml:10) — friendly_and_clear" in text
    assert re.search(r"\*\*Turn 2\*\* · \d+\.\d\d s", text)


def test_markdown_escapes_special_characters_in_replies(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project()
    _run(pytester, "--agent-eval-live", "--agent-eval-report", "r.md")
    text = (root / "r.md").read_text(encoding="utf-8")
    # The agent replies "Booked: *<user>* | <b>ok</b>": verbatim, but for what would break the
    # table (the pipe) or inject HTML (the tag).
    assert "- Reply: Booked: *Book a table for 2* \\| &lt;b>ok&lt;/b>" in text
    assert "<b>" not in text
    # Table rows keep their column count even with a pipe in a value.
    header = next(line for line in text.splitlines() if line.startswith("| Transcript"))
    rows = [line for line in text.splitlines() if line.startswith("| booking")]
    assert len(rows) == 2
    for line in rows:
        assert len(re.findall(r"(?<!\\)\|", line)) == header.count("|"), line


def test_markdown_cost_section_separates_agent_and_judges(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project()
    _run(pytester, "--agent-eval-live", "--agent-eval-report", "r.md")
    text = (root / "r.md").read_text(encoding="utf-8")
    cost = text.split("## Cost", 1)[1].split("##", 1)[0]
    # Agent: 3 runs x 2 turns (booking_ok) + 2 ok + 1 "sorry" (flaky) + 2 (smoke) turns.
    # 10 turns at 120 tokens and one at 44 = 1,244 tokens, 11 requests.
    assert "| Agent | 1,040 | 204 | 1,244 | 11 |" in cost
    judges = re.search(r"\| Judges \| ([\d,]+) \| ([\d,]+) \| ([\d,]+) \| 3 \|", cost)
    assert judges, cost  # one judge call per booking_ok run
    assert "Over 8 runs: agent 1,244 (156/run)" in cost
    # Per run too.
    assert re.search(
        r"#### Run 1: ✅ passed · \d+\.\d\d s · agent tokens 240 \(200 in / 40 out\) · judge tokens",
        text,
    )


def test_report_when_nothing_ran_replaces_an_old_file(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project()
    old = root / "reports" / "evals.md"
    old.parent.mkdir()
    old.write_text("# stale report from yesterday: booking_ok PASS\n", encoding="utf-8")
    result = _run(pytester, "--agent-eval-report", "reports/evals.md")  # not live
    result.assert_outcomes(skipped=3)
    text = old.read_text(encoding="utf-8")
    assert "stale" not in text
    assert "No eval test ran in this session. 3 eval test(s) were skipped." in text
    result.stdout.fnmatch_lines(["*agent eval markdown report: *evals.md (no eval test ran)*"])
    assert list(old.parent.iterdir()) == [old]  # no temporary file left behind


def test_report_path_from_pyproject(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project(settings='report_path = "build/agent-eval.md"\n')
    _run(pytester, "--agent-eval-live")
    assert (
        (root / "build" / "agent-eval.md")
        .read_text(encoding="utf-8")
        .startswith("# Agent eval report")
    )


def test_github_step_summary_gets_the_report_appended(
    pytester: pytest.Pytester, eval_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_project()
    summary = pytester.path / "gh" / "step_summary.md"
    summary.parent.mkdir()
    summary.write_text("## Earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _run(pytester, "--agent-eval-live")  # no --agent-eval-report: the summary still gets it
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("## Earlier step\n# Agent eval report\n")
    assert "## Summary" in text and "### ❌ booking_flaky: FAIL" in text


def test_no_step_summary_for_sessions_without_evals(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makepyfile(test_plain="def test_x():\n    pass\n")
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _run(pytester).assert_outcomes(passed=1)
    assert not summary.exists()


def test_terminal_summary_table(
    pytester: pytest.Pytester, eval_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "160")  # wide enough for every column
    eval_project()
    result = _run(pytester, "--agent-eval-live")
    result.stdout.fnmatch_lines(
        [
            "*= agent eval summary =*",
            "transcript*runs*passed*score [[]95% CI[]]*threshold*verdict*agent tokens*judge tokens",
            "booking_flaky*3*2*0.67 [[]0.21–0.94[]]*1.00*FAIL*284 (95/run)*–",
            "booking_ok*3*3*1.00 [[]0.44–1.00[]]*0.50*PASS*720 (240/run)*",
            "smoke_ok*2*2*1.00*0.50*PASS*240 (120/run)*–",
            "2/3 evals passed",
            "tokens: agent 1,244 (1,040 in / 204 out); judges *",
        ]
    )


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_the_terminal_summary_fits_the_terminal(
    pytester: pytest.Pytester,
    eval_project: ProjectFactory,
    monkeypatch: pytest.MonkeyPatch,
    columns: int,
) -> None:
    # At 80 columns every row of the full table (102 columns here) used to wrap.
    monkeypatch.setenv("COLUMNS", str(columns))
    # pytest never shortens the short summary on a CI machine (CI or BUILD_NUMBER set);
    # this test is about a terminal, so it must not inherit the machine's CI variables.
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.delenv("BUILD_NUMBER", raising=False)
    eval_project(voice=True)
    result = _run(pytester, "--agent-eval-live")

    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if "= agent eval summary =" in line)
    end = next(i for i, line in enumerate(lines) if line.endswith("evals passed"))
    table = lines[start + 1 : end]
    assert table and all(len(line) <= columns for line in table), "\n".join(table)
    assert table[0].startswith("transcript") and "verdict" in table[0]
    assert any(line.startswith("booking_flaky") and "FAIL" in line for line in table)
    # What the narrow table leaves out is still said: the token totals, under it.
    result.stdout.fnmatch_lines(["tokens: agent *"])
    # The short summary starts with the first failed check, not "LLM eval failed: sco...".
    (short,) = [line for line in lines if line.startswith("FAILED ")]
    assert short.startswith(
        "FAILED tests/evals/booking_flaky.yaml::booking_flaky - reply_contains_any"
    ), short
    if columns >= 100:
        assert "reply_contains_any (line 9): reply contain" in short
    assert len(short) <= columns


def test_on_a_ci_machine_the_short_summary_keeps_the_whole_first_failed_check(
    pytester: pytest.Pytester,
    eval_project: ProjectFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CI logs are read after the fact, not in a terminal: pytest leaves the line whole there.
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("CI", "true")
    eval_project(voice=True)
    result = _run(pytester, "--agent-eval-live")
    (short,) = [line for line in result.stdout.lines if line.startswith("FAILED ")]
    assert short.endswith(
        "reply_contains_any (line 9): reply contains none of ['booked'] "
        "(reply was 'sorry, no slot')"
    ), short


def test_voice_transcripts_show_p95_latency(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project(transcripts={}, voice=True)
    result = _run(pytester, "--agent-eval-live", "--agent-eval-report", "r.md")
    result.assert_outcomes(passed=1)
    # Four turns with latencies 0.4, 0.5, 0.6, 0.4 s: nearest-rank p95 is 0.6 s.
    result.stdout.fnmatch_lines(["transcript*verdict*p95 latency*", "voice_booking*PASS*0.60 s*"])
    text = (root / "r.md").read_text(encoding="utf-8")
    assert "- p95 turn latency 0.60 s" in text
    assert "- Heard (WER 0.00): book by voice" in text  # what was heard, scored
    assert re.search(r"- Audio: .*voice_t1\.wav", text)
    assert re.search(r"- Reply audio: .*reply_audio/", text)


def test_junit_xml_carries_eval_properties(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project(voice=True)
    _run(pytester, "--agent-eval-live", "--junitxml", "junit.xml")
    tree = ET.parse(root / "junit.xml")
    cases = {case.get("name"): case for case in tree.iter("testcase")}
    props = {p.get("name"): p.get("value") for p in cases["booking_flaky"].iter("property")}
    assert props == {
        "agent_eval_score": "0.6667",
        "agent_eval_ci_low": "0.2077",
        "agent_eval_ci_high": "0.9385",
        "agent_eval_runs": "3",
        "agent_eval_passed_runs": "2",
        "agent_eval_threshold": "1.0",
        "agent_eval_verdict": "failed",
        # Tokens, so CI can chart cost from JUnit alone (no judge ran on this transcript).
        "agent_eval_agent_input_tokens": "240",
        "agent_eval_agent_output_tokens": "44",
        "agent_eval_agent_requests": "3",
    }
    voice = {p.get("name"): p.get("value") for p in cases["voice_booking"].iter("property")}
    assert voice["agent_eval_p95_latency_s"] == "0.6"


def test_python_test_with_two_evals_reports_both(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project(
        transcripts={},
        extra_files={
            "tests/test_py_eval.py": """
                import pytest
                from pytest_agent_eval import Expect, Turn

                @pytest.mark.agent_eval(runs=2, tags=["gate:booking"])
                async def test_two_evals(agent_eval):
                    first = await agent_eval.run(turns=[Turn("Book")], id="py_first")
                    flaky = Turn("FLAKY x", expect=Expect(reply_contains_any=["booked"]))
                    second = await agent_eval.run(turns=[flaky], id="py_second", runs=3)
                    first.assert_threshold()
                    second.assert_threshold()
            """
        },
    )
    _run(pytester, "--agent-eval-live", "--agent-eval-report", "r.md").assert_outcomes(passed=1)
    text = (root / "r.md").read_text(encoding="utf-8")
    assert "| py_first | 2 | 2 |" in text and "| tests/test_py_eval.py::test_two_evals |" in text
    assert "| py_second | 3 | 2 | 0.67 |" in text


def test_a_report_that_cannot_be_written_is_named_not_a_traceback(
    pytester: pytest.Pytester, eval_project: ProjectFactory
) -> None:
    root = eval_project()
    (root / "blocked").write_text("a file where a folder should be", encoding="utf-8")
    result = _run(pytester, "--agent-eval-live", "--agent-eval-report", "blocked/r.md")
    result.stdout.fnmatch_lines(
        ["agent-eval: could not write a report: *blocked*--agent-eval-report*"]
    )
    assert "Traceback" not in result.stdout.str()
    result.assert_outcomes(passed=2, failed=1)


def test_relative_paths_on_the_command_line_start_from_the_invocation_folder(
    pytester: pytest.Pytester, eval_project: ProjectFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = eval_project(settings='html_report_path = "build/r.html"\n')
    sub = root / "sub"
    sub.mkdir()
    monkeypatch.chdir(sub)
    _run(pytester, str(root), "--agent-eval-live", "--agent-eval-report", "here.md")
    assert (sub / "here.md").is_file()
    assert not (root / "here.md").exists()
    assert (root / "build" / "r.html").is_file()  # from pyproject.toml: next to it
