"""Whatever an agent returns, a red eval stays red and every report gets written; an
interrupted session says so in every report."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from child_pytest import child_pytest_env, hears_ctrl_c

from .conftest import Project

LONE_SURROGATE_AGENT = """\
def agent(history):
    # A lone surrogate, as json.loads('"\\\\ud83d"') or surrogateescape decoding gives.
    bad = json.loads('"\\\\ud83d"') + " broken " + b"\\xff".decode("utf-8", "surrogateescape")
    return AgentReply(
        "booked " + bad,
        [ToolCall("book", {"note": bad}, output={"echo": bad})],
        heard=bad,
    )
"""


def _surrogate_project(project: Project, *, passing: bool) -> None:
    project.conftest(
        "import json\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        + textwrap.indent(LONE_SURROGATE_AGENT, "    ")
        + "    return agent\n"
    )
    want = "booked" if passing else "cancelled"
    project.transcript(
        "surrogate",
        f"""
        id: surrogate
        turns:
          - user: Book a table
            expect:
              reply_contains_any: [{want}]
        """,
    )


def test_a_failing_eval_with_a_lone_surrogate_fails_the_session_under_xdist(
    project: Project,
) -> None:
    _surrogate_project(project, passing=False)
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "-n", "2"
    )
    assert result.ret == 1, result.stdout.str()
    result.assert_outcomes(failed=1)
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.fnmatch_lines(["*broken*"])


def test_a_passing_eval_with_a_lone_surrogate_writes_every_report(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    _surrogate_project(project, passing=True)
    summary = project.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    result = project.pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "-n",
        "2",
        "--agent-eval-report=report.md",
        "--agent-eval-html=report.html",
        "--junitxml=junit.xml",
    )
    assert result.ret == 0, result.stdout.str()
    result.assert_outcomes(passed=1)
    for name in ("report.md", "report.html", "junit.xml"):
        text = (project.path / name).read_text(encoding="utf-8")
        assert "surrogate" in text
    markdown = (project.path / "report.md").read_text(encoding="utf-8")
    assert "booked \ufffd broken \ufffd" in markdown  # replaced visibly, not dropped
    assert "booked \ufffd broken" in summary.read_text(encoding="utf-8")


INTERRUPTING_AGENT = """\
@pytest.fixture
def llm_eval_agent():
    def agent(history):
        if "stop" in history[-1].content:
            raise KeyboardInterrupt  # what Ctrl-C raises in the test process
        return AgentReply("done")
    return agent
"""


def test_after_ctrl_c_every_report_says_interrupted_and_lists_what_never_ran(
    project: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.conftest(INTERRUPTING_AGENT)
    for name, words in (("a_first", "hello"), ("b_stops", "stop now"), ("c_never", "hello")):
        project.transcript(name, f"id: {name}\nturns:\n  - user: {words}\n")
    summary = project.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))

    result = project.pytester.runpytest(
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-report=report.md",
        "--agent-eval-html=report.html",
        no_reraise_ctrlc=True,
    )

    assert result.ret == pytest.ExitCode.INTERRUPTED
    markdown = (project.path / "report.md").read_text()
    html = (project.path / "report.html").read_text()
    # Verbatim everywhere (the markdown report escapes no `_`).
    plain = {"b": "tests/evals/b_stops.yaml::b_stops", "c": "tests/evals/c_never.yaml::c_never"}
    for text, names in (
        (markdown, plain),
        (summary.read_text(), plain),
        (html, plain),
        (result.stdout.str(), plain),
    ):
        assert "Interrupted: the session was stopped (Ctrl-C)" in text
        assert "2 eval(s) never ran or never finished" in text
        assert names["b"] in text
        assert names["c"] in text
    # The eval that finished is reported as usual; the cut-off one is not called "skipped".
    result.stdout.fnmatch_lines(["*a_first*PASS*", "1/1 evals passed"])
    assert "skipped" not in markdown


@pytest.mark.parametrize("delivered_to", ["process", "agent_thread"])
def test_the_first_ctrl_c_stops_a_session_whose_sync_agent_hangs(
    project: Project, delivered_to: str
) -> None:
    """The kernel delivers Ctrl-C's SIGINT to any thread of the process: to the main thread
    (waiting in the event loop), or to the sync agent's thread, which ``agent_thread`` makes
    sure of. Python runs the handler only in the main thread; before the loop was woken by
    signals, the second case hung the session (seen once in CI, on a loaded machine)."""
    to_itself = (
        "signal.pthread_kill(threading.get_ident(), signal.SIGINT)"
        if delivered_to == "agent_thread"
        else "pass"
    )
    project.conftest(
        f"""
        import signal
        import sys
        import threading

        @pytest.fixture
        def llm_eval_agent():
            def agent(history):
                print("AGENT STARTED", flush=True)
                sys.__stdout__.write("AGENT STARTED\\n")
                sys.__stdout__.flush()
                {to_itself}
                threading.Event().wait()  # hangs forever, ignoring everything
            return agent
        """
    )
    project.transcript("hangs", "id: hangs\nturns:\n  - user: hello\n")
    env = child_pytest_env({**os.environ, "PYTHONUNBUFFERED": "1"})
    env.pop("EVAL_LIVE", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--agent-eval-live", "-s"],
        cwd=project.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
        preexec_fn=hears_ctrl_c,
    )
    assert process.stdout is not None
    seen = []
    for line in process.stdout:  # wait for the agent to be inside its hang
        seen.append(line)
        if "AGENT STARTED" in line:
            break
    started = time.monotonic()
    if delivered_to == "process":
        process.send_signal(signal.SIGINT)
    try:
        rest, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    output = "".join(seen) + rest
    assert process.returncode == pytest.ExitCode.INTERRUPTED, output
    assert time.monotonic() - started < 60
    assert "KeyboardInterrupt" in output
    assert "Traceback" not in output
    assert "INTERNALERROR" not in output


def test_parametrized_agent_collects_one_item_per_param(project: Project) -> None:
    # Relies on pytest's private call-spec class, renamed in 9.2: one item per agent on every
    # supported pytest (CI runs this file on the lowest declared versions too).
    project.conftest(
        """
        @pytest.fixture(params=["fast", "slow"])
        def llm_eval_agent(request):
            return lambda history: AgentReply(f"booked by {request.param}")
        """
    )
    project.transcript(
        "booking",
        "id: booking\nturns:\n  - user: Book\n    expect:\n      reply_contains_any: [booked]\n",
    )
    result = project.run_live("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*booking[[]fast[]] PASSED*", "*booking[[]slow[]] PASSED*"])


def test_a_parametrized_agent_without_agent_argument_gets_a_clear_message(
    project: Project,
) -> None:
    project.conftest(
        """
        @pytest.fixture(params=["a", "b"])
        def llm_eval_agent(request):
            return lambda history: "ok"
        """
    )
    project.test_file(
        "test_python.py",
        """
        def test_booking(agent_eval):
            agent_eval.run_sync(turns=[Turn("Book")]).assert_threshold()
        """,
    )
    result = project.run_live()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*'llm_eval_agent' is parametrized, so pytest must run this test once per agent*"]
    )
    result.stdout.no_fnmatch_line("*The requested fixture has no parameter defined*")


def test_junit_and_records_carry_no_surrogate(project: Project) -> None:
    _surrogate_project(project, passing=False)
    result = project.run_live("--junitxml=junit.xml", "--agent-eval-report=report.md")
    result.assert_outcomes(failed=1)
    junit = (project.path / "junit.xml").read_bytes().decode("utf-8")
    assert "\ufffd" in junit
    json.dumps(junit)  # plain, encodable text
    assert Path(project.path / "report.md").read_text(encoding="utf-8")
