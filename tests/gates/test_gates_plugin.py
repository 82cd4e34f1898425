"""Quality gates in real pytest runs: absorb, enforce, must_pass, empty groups, bad config."""

from __future__ import annotations

import textwrap

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
        if "FLAKY" in text and next(counter) % 3 == 0:
            return AgentReply("sorry", [])
        return AgentReply("booked", ["book"])

    return agent
"""

# Two booking transcripts (one misses its threshold: 2/3 runs against 1.0) and a smoke one.
TRANSCRIPTS = {
    "booking_ok": "id: booking_ok\nruns: 3\ntags: [gate:booking]\nturns:\n"
    "  - user: Book\n    expect:\n      reply_contains_any: [booked]\n",
    "booking_flaky": "id: booking_flaky\nruns: 3\nthreshold: 1.0\ntags: [gate:booking]\n"
    "turns:\n  - user: FLAKY book\n    expect:\n      reply_contains_any: [booked]\n",
    "smoke_ok": "id: smoke_ok\ntags: [smoke]\nturns:\n"
    "  - user: Hi\n    expect:\n      tool_calls_include: [book]\n",
}


def _project(pytester: pytest.Pytester, groups: str, *, unit_test: str | None = None) -> None:
    pyproject = '[tool.agent_eval]\nyaml_dirs = ["tests/evals"]\n' + textwrap.dedent(groups)
    pytester.makefile(".toml", pyproject=pyproject)
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("tests").joinpath("evals")
    evals.mkdir()
    for name, body in TRANSCRIPTS.items():
        evals.joinpath(f"{name}.yaml").write_text(body, encoding="utf-8")
    if unit_test is not None:
        pytester.path.joinpath("tests", "test_unit.py").write_text(unit_test, encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live", *args)


BOOKING_GROUP = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.5
"""


def test_passing_group_absorbs_an_eval_failure(pytester: pytest.Pytester) -> None:
    _project(pytester, BOOKING_GROUP)
    result = _run(pytester, "--agent-eval-report", "r.md")
    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*= group summary =*",
            "booking: 1/2 passed (50%) >= 50% required -- PASSED",
            "  failures: booking_flaky",
            "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: "
            "tests/evals/booking_flaky.yaml::booking_flaky",
        ]
    )
    text = pytester.path.joinpath("r.md").read_text(encoding="utf-8")
    assert "## Groups" in text
    assert "| booking | 1 | 2 | 0.50 | 0.50 | ✅ PASS |" in text
    assert "Gates: exit code overridden to 0: 1 eval failure(s) absorbed by passing groups" in text


def test_a_failing_unit_test_is_not_absorbed(pytester: pytest.Pytester) -> None:
    _project(pytester, BOOKING_GROUP, unit_test="def test_unit():\n    assert 1 == 2\n")
    result = _run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*1 eval failure(s) covered by passing groups, but 1 other failure(s) are not: "
            "tests/test_unit.py::test_unit (exit status 1)"
        ]
    )


def test_enforced_group_below_threshold_fails_the_run(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.booking]
        tags = ["gate:booking"]
        threshold = 0.9
        enforce = true
        """,
    )
    result = _run(pytester)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed (50%) >= 90% required -- FAILED",
            "  failures: booking_flaky",
            "  enforced: a FAILED here fails the run",
            "enforced group(s) failed: booking (exit status 1)",
        ]
    )


def test_enforced_must_pass_left_out_by_the_selection_warns(pytester: pytest.Pytester) -> None:
    """The earlier package's rule and words: what -k left out does not fail a gate."""
    _project(
        pytester,
        """
        [tool.agent_eval.groups.release]
        tags = ["smoke"]
        must_pass = ["smoke_ok", "booking_ok"]
        enforce = true
        """,
    )
    result = _run(pytester, "-k", "smoke_ok")  # every test that runs passes
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "release: 1/1 passed (100%) >= 100% required -- PASSED",
            "  must_pass: smoke_ok ok",
            "  WARNING: must_pass entry 'booking_ok' did not run",
            "  enforced: a FAILED here fails the run",
            "gates did not change the outcome (exit status 0)",
        ]
    )


def test_unenforced_failing_group_says_it_is_reported_only(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.booking]
        tags = ["gate:booking"]
        """,
    )
    result = _run(pytester, "-k", "booking")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed (50%) >= 100% required -- FAILED",
            "group(s) FAILED but not enforced (reported only): booking; "
            "gates did not change the outcome (exit status 1)",
        ]
    )


def test_enforced_must_pass_that_failed_blocks_absorbing(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.booking]
        tags = ["gate:booking"]
        threshold = 0.5
        must_pass = ["booking_flaky"]
        enforce = true
        """,
    )
    result = _run(pytester)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/2 passed (50%) >= 50% required -- FAILED",
            "  failures: booking_flaky",
            "  must_pass: booking_flaky FAILED",
        ]
    )


def test_enforced_group_left_out_by_the_selection_is_skipped(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.payments]
        pytest_markers = ["payments"]
        enforce = true
        """,
    )
    result = _run(pytester, "-k", "smoke_ok or booking_ok")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "payments: SKIPPED (no member selected)",
            "  WARNING: group 'payments' matched no eval that ran (left out by the selection)",
            "  enforced: a FAILED here fails the run",
            "gates did not change the outcome (exit status 0)",
        ]
    )


def test_group_by_pytest_marker_on_a_python_eval(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.payments]
        pytest_markers = ["payments"]
        enforce = true
        """,
    )
    pytester.path.joinpath("tests", "test_pay.py").write_text(
        textwrap.dedent(
            """
            import pytest
            from pytest_agent_eval import Turn

            pytestmark = pytest.mark.payments

            @pytest.mark.agent_eval(runs=2)
            async def test_pay(agent_eval):
                (await agent_eval.run(turns=[Turn("Pay")])).assert_threshold()
            """
        ),
        encoding="utf-8",
    )
    result = _run(pytester, "-k", "pay")
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["payments: 1/1 passed (100%) >= 100% required -- PASSED"])
    # the group's marker is registered: no unknown-mark warning
    result.stdout.no_fnmatch_line("*PytestUnknownMarkWarning*")


def test_gates_do_not_fail_a_run_that_is_not_live(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.payments]
        pytest_markers = ["payments"]
        enforce = true
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=3)
    assert result.ret == 0
    result.stdout.no_fnmatch_line("payments: *")
    result.stdout.fnmatch_lines(["*= group summary =*", "gates not evaluated: no eval test ran"])


def test_bad_gate_config_is_a_usage_error(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.booking]
        tags = ["gate:booking"]
        threshold = 1.5
        """,
    )
    result = _run(pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pyproject.toml [[]tool.agent_eval[]].groups.booking: 'threshold' must be "
            "between 0.0 and 1.0, got 1.5"
        ]
    )


def test_nothing_is_absorbed_when_the_session_stopped_early(pytester: pytest.Pytester) -> None:
    # threshold 0: the group passes with the one eval that ran, so only -x stops the absorbing.
    _project(pytester, BOOKING_GROUP.replace("threshold = 0.5", "threshold = 0.0"))
    result = _run(pytester, "-x")
    result.assert_outcomes(failed=1)  # booking_flaky is collected first and stops the session
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 0/1 passed (0%) >= 0% required -- PASSED",
            "  failures: booking_flaky",
            "failures are not absorbed because the session stopped early (-x / --maxfail) "
            "(exit status 1)",
        ]
    )
