"""ERROR against FAIL in real pytest runs: a run that could not evaluate the agent is an ERROR
(a pytest error, a JUnit ``<error>``, never in a pass rate, never absorbed by a gate); a run
in which the agent did something wrong is a FAIL. One test per class of the table in
docs/reports.md ("Run outcomes")."""

from __future__ import annotations

import json
import textwrap
import xml.etree.ElementTree as ET

import pytest

from .conftest import Project

# An adapter that fails where the transcript's id says: at start, in the greeting, in a turn
# (with one of our errors or with the agent's own exception), or at close.
ADAPTER = """
from pytest_agent_eval import AdapterError, AgentReply, AudioFixtureError, JudgeError


class Conversation:
    def __init__(self, where):
        self.where = where

    def greeting(self):
        if self.where == "greeting":
            raise AdapterError("the greeting could not be observed: the session never started")
        return None

    async def respond(self, turn):
        if self.where == "adapter_turn":
            raise AdapterError(
                f"turn {turn.index + 1}: the worker left the room; start it again"
            )
        if self.where == "fixture_turn":
            raise AudioFixtureError(
                f"turn {turn.index + 1}: FixtureTextSTT refuses this recording (no sidecar "
                "text); use WhisperSTT or synthesize the fixture"
            )
        if self.where == "agent_turn":
            raise ValueError("the agent's own tool crashed")
        if self.where == "agent_says_no":
            return AgentReply("sorry", [])
        return AgentReply("booked", ["book"])

    async def aclose(self):
        if self.where == "close":
            raise AdapterError("the session could not be closed: the worker is gone")


class FailingAdapter:
    consumes_audio = False

    async def start_conversation(self, info):
        where = info.transcript.case or info.transcript.id
        if where == "start":
            raise RuntimeError("session factory raised: no API key")
        return Conversation(where)


@pytest.fixture
def llm_eval_agent():
    return FailingAdapter()
"""

GROUP = """
yaml_dirs = ["tests/evals"]

[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.5
"""


def _transcript(project: Project, where: str, *, runs: int = 2) -> None:
    project.transcript(
        where,
        f"""
        id: {where}
        runs: {runs}
        tags: [gate:booking]
        turns:
          - user: Book a table
            expect:
              reply_contains_any: [booked]
        """,
    )


def _setup(project: Project, *failing: str) -> None:
    project.pyproject(GROUP)
    project.conftest(ADAPTER)
    _transcript(project, "ok")
    _transcript(project, "ok2")
    for where in failing:
        _transcript(project, where)


def _junit(project: Project) -> ET.Element:
    return ET.parse(project.path / "junit.xml").getroot()


@pytest.mark.parametrize(
    ("where", "reason"),
    [
        ("start", "starting the conversation failed: RuntimeError: session factory raised"),
        ("greeting", "reading the greeting failed: AdapterError: the greeting could not"),
        ("adapter_turn", "AdapterError: turn 1: the worker left the room"),
        ("fixture_turn", "AudioFixtureError: turn 1: FixtureTextSTT refuses this recording"),
        ("close", "closing the conversation failed: AdapterError: the session could not"),
    ],
)
def test_a_run_that_could_not_evaluate_the_agent_is_an_error_no_gate_absorbs(
    project: Project, where: str, reason: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _setup(project, where)
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(project.path / "step.md"))

    result = project.run_live(
        "--junitxml=junit.xml",
        "--agent-eval-report=r.md",
        "--agent-eval-html=r.html",
        "--agent-eval-results=r.json",
        "-rA",
    )

    # A pytest error, not a failure; the passing group does not absorb it: exit 1.
    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == 1
    out = result.stdout.str()
    assert "absorbed by" not in out
    assert "overridden" not in out
    assert reason in out
    result.stdout.fnmatch_lines([f"{where} *ERROR*"])  # the summary table's verdict
    # The gate's pass rate leaves it out (2/2 evaluated), and says it errored.
    result.stdout.fnmatch_lines(
        [
            "booking: 2/2 passed (100%) >= 50% required -- PASSED",
            f"  errored (verdict not reached, not counted): {where}",
        ]
    )
    # JUnit: an <error>, with the reason.
    root = _junit(project)
    suite = root if root.tag == "testsuite" else root.find("testsuite")
    assert suite is not None
    assert (suite.get("errors"), suite.get("failures")) == ("1", "0")
    error = suite.find(f"testcase[@name='{where}']/error")
    assert error is not None and reason in (error.get("message") or "") + (error.text or "")
    # The reports and the results file say ERROR with the reason.
    markdown = (project.path / "r.md").read_text()
    assert f"### ⚠️ {where}: ERROR" in markdown
    assert reason in markdown
    evals = {
        e["transcript_id"]: e for e in json.loads((project.path / "r.json").read_text())["evals"]
    }
    assert evals[where]["verdict"] == "error"
    assert reason in evals[where]["reason"]
    step = (project.path / "step.md").read_text()
    assert f"### ⚠️ {where}: ERROR" in step and reason in step
    html = (project.path / "r.html").read_text()
    assert ">ERROR<" in html and reason.split(": ", 1)[1][:30] in html


def test_the_agent_raising_in_a_turn_is_a_crash_no_gate_absorbs(project: Project) -> None:
    _setup(project, "agent_turn")

    result = project.run_live("--junitxml=junit.xml")

    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 2/3 passed (67%) >= 50% required -- FAILED",
            "  failures: agent_turn",
            "  crashed (the agent crashed; fails the group whatever its pass rate): agent_turn",
            "1 crash(es) of the agent (never absorbed): *",
        ]
    )
    # A FAIL of its own kind: a pytest failure, not an error.
    suite = _junit(project).find("testsuite")
    assert suite is not None and (suite.get("errors"), suite.get("failures")) == ("0", "1")


def test_with_crashes_fail_gates_off_a_crash_is_a_fail_a_gate_may_absorb(
    project: Project,
) -> None:
    _setup(project, "agent_turn")
    pyproject = project.path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            "[tool.agent_eval]\n", "[tool.agent_eval]\ncrashes_fail_gates = false\n", 1
        )
    )

    result = project.run_live()

    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "booking: 2/3 passed (67%) >= 50% required -- PASSED",
            "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: *",
        ]
    )


def test_the_agent_saying_no_is_a_fail(project: Project) -> None:
    _setup(project, "agent_says_no")

    result = project.run_live()

    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 0


def test_a_suite_whose_only_failure_is_a_setup_error_never_exits_0(project: Project) -> None:
    """Under xdist too: the controller sees the error as the worker made it."""
    _setup(project, "start")

    for args in ((), ("-n", "2")):
        result = project.run_live(*args)
        result.assert_outcomes(passed=2, errors=1)
        assert result.ret == 1, args
        assert "exit code overridden" not in result.stdout.str()


def test_one_errored_run_is_not_in_the_pass_rate_and_makes_the_eval_an_error(
    project: Project,
) -> None:
    project.pyproject(GROUP)
    project.conftest(
        """
        from pytest_agent_eval import AgentReply

        class SecondRunFails:
            consumes_audio = False

            async def start_conversation(self, info):
                if info.run_index == 1:
                    raise ConnectionError("the server refused the second room")
                return self

            async def respond(self, turn):
                return AgentReply("booked", [])

            async def aclose(self):
                pass

        @pytest.fixture
        def llm_eval_agent():
            return SecondRunFails()
        """
    )
    _transcript(project, "flaky_setup", runs=3)

    result = project.run_live("--agent-eval-results=r.json")

    result.assert_outcomes(errors=1)
    record = json.loads((project.path / "r.json").read_text())["evals"][0]
    assert record["verdict"] == "error"
    # The errored run is left out of the score: 2 of the 2 evaluated runs passed.
    assert (record["runs"], record["passed_runs"], record["score"]) == (3, 2, 1.0)
    assert "1 of 3 run(s) could not evaluate the agent" in record["reason"]
    assert "ConnectionError: the server refused the second room" in record["reason"]


PY_TEST = """
from pytest_agent_eval import AgentReply


class NoStart:
    consumes_audio = False

    async def start_conversation(self, info):
        raise RuntimeError("session factory raised")


@pytest.mark.agent_eval(runs=2, tags=["gate:booking"])
def test_asserted(agent_eval):
    agent_eval.run_sync(agent=NoStart(), turns=[Turn("Book")]).assert_threshold()


@pytest.mark.agent_eval(runs=1, tags=["gate:booking"], assert_threshold=False)
def test_judged_by_the_test_itself(agent_eval):
    result = agent_eval.run_sync(agent=NoStart(), turns=[Turn("Book")])
    assert not result.passed  # a check that a bad agent fails: a setup error must not pass it


@pytest.mark.agent_eval(runs=1, tags=["gate:booking"])
def test_catches_the_assertion(agent_eval):
    result = agent_eval.run_sync(agent=NoStart(), turns=[Turn("Book")])
    with pytest.raises(AssertionError):
        result.assert_threshold()


@pytest.mark.agent_eval(runs=1, tags=["gate:booking"])
def test_ok(agent_eval):
    agent_eval.run_sync(agent=lambda h: "booked", turns=[Turn("Book")]).assert_threshold()
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_the_python_api_errors_the_test_whatever_the_test_does_with_the_result(
    project: Project, xdist: tuple[str, ...]
) -> None:
    project.pyproject(GROUP)
    project.test_file("test_api.py", PY_TEST)

    result = project.run_live("--junitxml=junit.xml", *xdist)

    result.assert_outcomes(passed=1, errors=3)
    assert result.ret == 1
    assert "exit code overridden" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*starting the conversation failed: RuntimeError*"])
    suite = _junit(project).find("testsuite")
    assert suite is not None and (suite.get("errors"), suite.get("failures")) == ("3", "0")


def test_an_adapter_that_cannot_prepare_is_an_error(project: Project) -> None:
    project.pyproject(GROUP)
    project.conftest(
        """
        class CannotPrepare:
            consumes_audio = False

            async def prepare(self, transcript):
                raise OSError("the worker file agent_worker.py does not exist")

            async def start_conversation(self, info):
                raise AssertionError("never reached")

        @pytest.fixture
        def llm_eval_agent():
            return CannotPrepare()
        """
    )
    _transcript(project, "prep")

    result = project.run_live("--agent-eval-results=r.json")

    result.assert_outcomes(errors=1)
    record = json.loads((project.path / "r.json").read_text())["evals"][0]
    assert record["verdict"] == "error"
    assert "OSError: the worker file agent_worker.py does not exist" in record["reason"]


def test_a_judge_that_is_down_is_an_error_not_absorbed(project: Project) -> None:
    project.pyproject(GROUP)
    project.conftest(
        """
        from pytest_agent_eval import AgentReply, EvalResult

        class JudgeDown:
            name = "judge"

            async def evaluate(self, ctx):
                return EvalResult(False, "judge errored: 503 from the judge's API", errored=True)

        @pytest.fixture
        def llm_eval_agent():
            return lambda history: AgentReply("booked", [])
        """
    )
    _transcript(project, "ok")
    project.test_file(
        "test_judged.py",
        """
        from conftest import JudgeDown

        @pytest.mark.agent_eval(runs=2, tags=["gate:booking"])
        def test_judged(agent_eval):
            agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(evaluators=[JudgeDown()]))]
            ).assert_threshold()
        """,
    )

    result = project.run_live("--junitxml=junit.xml")

    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == 1
    assert "exit code overridden" not in result.stdout.str()


def test_datasets_and_variants_error_per_case(project: Project) -> None:
    """Each case of a dataset is its own eval: the case whose run cannot start is the ERROR,
    the others keep their verdicts."""
    project.pyproject(GROUP)
    project.conftest(ADAPTER)
    project.transcript(
        "cases",
        textwrap.dedent(
            """
            id: cases
            tags: [gate:booking]
            cases:
              - {id: ok}
              - {id: start}
              - {id: agent_says_no}
            turns:
              - user: Book
                expect:
                  reply_contains_any: [booked]
            """
        ),
    )

    result = project.run_live("-v")

    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines_random(
        ["*cases.yaml::cases[[]start[]] ERROR*", "*cases.yaml::cases[[]agent_says_no[]] FAILED*"]
    )


def test_a_marker_only_test_failing_its_own_assertion_is_a_fail_its_fixture_an_error(
    project: Project,
) -> None:
    project.pyproject(GROUP)
    project.test_file(
        "test_own.py",
        """
        @pytest.fixture
        def client():
            raise ConnectionError("the test's own client could not connect")


        @pytest.mark.agent_eval(tags=["gate:booking"])
        def test_own_check():
            assert "booked" in "sorry"


        @pytest.mark.agent_eval(tags=["gate:booking"])
        def test_own_fixture(client):
            pass
        """,
    )

    result = project.run_live("--agent-eval-results=r.json")

    result.assert_outcomes(failed=1, errors=1)
    verdicts = {
        e["transcript_id"]: e["verdict"]
        for e in json.loads((project.path / "r.json").read_text())["evals"]
    }
    assert verdicts == {"test_own_check": "failed", "test_own_fixture": "error"}


def test_an_eval_whose_every_run_errored_has_no_score_anywhere(project: Project) -> None:
    """Every run an ERROR: no run evaluated the agent, so there is no score (``–``), never a
    score of 0.00 with an interval of 0.00–1.00 that reads as a measured failure."""
    _setup(project, "adapter_turn")

    result = project.run_live("--agent-eval-report=r.md", "--agent-eval-html=r.html", "-rA")

    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    row = next(line for line in out.splitlines() if line.startswith("adapter_turn "))
    assert "0.00" not in row and "–" in row and "ERROR" in row, row
    assert "score=– (no run evaluated the agent) threshold=" in out
    markdown = (project.path / "r.md").read_text()
    assert "No score (no run evaluated the agent) against threshold" in markdown
    md_row = next(line for line in markdown.splitlines() if line.startswith("| adapter_turn"))
    assert "0.00" not in md_row, md_row
    html = (project.path / "r.html").read_text()
    assert "No score (no run evaluated the agent)" in html
    assert "0.00 [0.00–1.00]" not in html
