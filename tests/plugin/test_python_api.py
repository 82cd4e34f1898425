"""The Python API: the ``agent_eval`` marker and fixture, in async and sync tests."""

from __future__ import annotations

import pytest

from .conftest import Project, lit

# A fresh agent per test whose FAIL_ON-th calls answer badly (runs go one at a time).
AGENT = """
import itertools

FAIL_ON = {fail_on!r}


@pytest.fixture
def llm_eval_agent():
    calls = itertools.count(1)

    async def agent(history):
        n = next(calls)
        if n in FAIL_ON:
            return AgentReply("Sorry, no.", [])
        return AgentReply(f"Booked (call {{n}}).", [ToolCall("create_booking", {{"party": 2}})])

    return agent
"""


def _project(project: Project, fail_on: set[int] | None = None) -> Project:
    project.pyproject("concurrency = 1")
    project.conftest(AGENT.format(fail_on=fail_on or set()))
    return project


def test_async_test_with_marker_and_fixture_runs_without_an_async_plugin(
    project: Project,
) -> None:
    _project(project, fail_on={2})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(threshold=0.6, runs=3, tags=["smoke"])
        @pytest.mark.parametrize("word", ["booked", "BOOKED"])
        async def test_booking(agent_eval, word):
            result = await agent_eval.run(
                turns=[Turn("Book a table", expect=Expect(reply_contains_any=[word]))]
            )
            assert len(result.runs) == 3
            result.assert_threshold()
        """,
    )

    # anyio's pytest plugin is installed here; switch it off to show we need no async plugin.
    result = project.run_live("-v", "-p", "no:anyio")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "tests/test_booking.py::test_booking[[]booked] PASSED*",
            "tests/test_booking.py::test_booking[[]BOOKED] PASSED*",
        ]
    )
    result.stdout.no_fnmatch_line("*async def functions are not natively supported*")


def test_sync_test_uses_run_sync(project: Project) -> None:
    _project(project, fail_on={2})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(threshold=0.6, runs=3)
        @pytest.mark.parametrize("party", [2, 4])
        def test_booking(agent_eval, llm_eval_agent, party):
            result = agent_eval.run_sync(
                agent=llm_eval_agent,
                turns=[
                    Turn(
                        f"Book for {party}",
                        expect=Expect(tool_calls_include=["create_booking"]),
                    )
                ],
            )
            assert result.passed_run_count == 2
            result.assert_threshold()
        """,
    )

    result = project.run_live("-v")

    result.assert_outcomes(passed=2)


def test_python_api_failure_shows_the_seed_message_and_the_account(project: Project) -> None:
    _project(project, fail_on={2})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(threshold=0.8, runs=3)
        async def test_booking(agent_eval):
            result = await agent_eval.run(
                turns=[Turn("Book a table", expect=Expect(reply_contains_any=["booked"]))]
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: LLM eval failed: score=0.67 < threshold=0.80"
            " (2/3 runs passed)",
            "*- agent eval: test_booking -*",
            "score=0.67 (95% CI *) threshold=0.80, 2/3 runs passed",
            "  run 1: passed*",
            "  run 2: FAILED*",
            "    turn 1 [[]FAIL] user: 'Book a table'",
            "      reply: 'Sorry, no.'",
            # Built in Python, the check is named by its key, without a line.
            lit(
                "      - turns[0].expect.reply_contains_any fail: reply contains none of "
                "['booked'] (reply was 'Sorry, no.')"
            ),
            "  run 3: passed*",
        ]
    )


def test_async_failure_traceback_has_no_internal_runtime_error(project: Project) -> None:
    _project(project, fail_on={1})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(runs=1)
        async def test_booking(agent_eval):
            result = await agent_eval.run(
                turns=[Turn("Book a table", expect=Expect(reply_contains_any=["booked"]))]
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["E       AssertionError: LLM eval failed: *"])
    result.stdout.no_fnmatch_line("*RuntimeError: no running event loop*")
    result.stdout.no_fnmatch_line("*During handling of the above exception*")


def test_threshold_and_runs_fall_back_to_config(project: Project) -> None:
    _project(project, fail_on={1})
    project.pyproject("concurrency = 1\nruns = 4\nthreshold = 0.9")
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval
        def test_booking(agent_eval):
            agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(reply_contains_any=["booked"]))]
            ).assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LLM eval failed: score=0.75 < threshold=0.90 (3/4 runs passed)"])


def test_run_arguments_win_over_the_marker(project: Project) -> None:
    _project(project, fail_on={1})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(threshold=1.0, runs=5)
        def test_booking(agent_eval):
            result = agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(reply_contains_any=["booked"]))],
                threshold=0.5,
                runs=2,
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(passed=1)


def test_runs_option_applies_to_python_evals(project: Project) -> None:
    _project(project, fail_on={1, 2, 3, 4, 5})
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(runs=5)
        def test_booking(agent_eval):
            agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(reply_contains_any=["booked"]))]
            ).assert_threshold()
        """,
    )

    result = project.run_live("--agent-eval-runs=1")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LLM eval failed: score=0.00 < threshold=0.80 (0/1 runs passed)"])


def test_custom_evaluators_and_multi_turn_from_python(project: Project) -> None:
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        from pytest_agent_eval import EvalResult


        class MentionsCall:
            name = "mentions_call"

            def __init__(self, n):
                self.n = n

            async def evaluate(self, ctx):
                ok = f"(call {self.n})" in ctx.reply
                return EvalResult(ok, f"wanted call {self.n} in {ctx.reply!r}")


        @pytest.mark.agent_eval(runs=1)
        async def test_two_turns(agent_eval):
            result = await agent_eval.run(
                turns=[
                    Turn("first", expect=Expect(evaluators=[MentionsCall(1)])),
                    Turn("second", expect=Expect(evaluators=[MentionsCall(3)])),
                ]
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    turn 1 [[]ok] user: 'first'",
            "    turn 2 [[]FAIL] user: 'second'",
            "      reply: 'Booked (call 2).'",
            "      - mentions_call fail: wanted call 3 in 'Booked (call 2).'",
        ]
    )


def test_run_without_turns_explains_what_it_needs(project: Project) -> None:
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval
        async def test_booking(agent_eval):
            await agent_eval.run()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["agent_eval.run() needs turns=[[]Turn(...), ...] or transcript="])


def test_fixture_without_marker_is_an_eval_too(project: Project) -> None:
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        def test_booking(agent_eval):
            agent_eval.run_sync(turns=[Turn("Book")]).assert_threshold()
        """,
    )

    not_live = project.run()
    live = project.run_live()

    not_live.assert_outcomes(skipped=1)
    live.assert_outcomes(passed=1)


def test_a_crashing_evaluator_is_reported_as_errored_not_as_a_no(project: Project) -> None:
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        class Broken:
            def evaluate(self, ctx):
                raise RuntimeError("judge is down")


        @pytest.mark.agent_eval(runs=2)
        def test_booking(agent_eval):
            agent_eval.run_sync(
                turns=[Turn("Book", expect=Expect(evaluators=[Broken()]))]
            ).assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*LLM eval ERROR: 2 of 2 run(s) could not evaluate the agent (ERROR, left out of the score): run 1: Broken errored: evaluator raised RuntimeError: judge is down (0/0 evaluated runs passed)",
            "*",
            "    turn 1 [[]ERROR] user: 'Book'",
            "*",
            "      - Broken errored: evaluator raised RuntimeError: judge is down",
        ]
    )


def test_bad_marker_value_is_a_short_message(project: Project) -> None:
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval(runs=0)
        def test_booking(agent_eval):
            agent_eval.run_sync(turns=[Turn("Book")]).assert_threshold()
        """,
    )

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*transcript 'test_booking': runs must be at least 1, got 0*"])
    result.stdout.no_fnmatch_line("*no running event loop*")
    result.stdout.no_fnmatch_line("*asyncio/runners.py*")


def test_an_async_plugin_marker_takes_over(project: Project) -> None:
    # anyio's pytest plugin is installed here: its marker runs the test on its own loop.
    _project(project)
    project.test_file(
        "test_booking.py",
        """
        @pytest.fixture
        def anyio_backend():
            return "asyncio"


        @pytest.mark.anyio
        @pytest.mark.agent_eval(runs=2)
        async def test_booking(agent_eval):
            result = await agent_eval.run(
                turns=[Turn("Book", expect=Expect(reply_contains_any=["booked"]))]
            )
            result.assert_threshold()
        """,
    )

    result = project.run_live("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/test_booking.py::test_booking PASSED*"])


def test_default_agent_without_the_fixture_names_it(project: Project) -> None:
    project.test_file(
        "test_booking.py",
        """
        @pytest.mark.agent_eval
        async def test_booking(agent_eval):
            (await agent_eval.run(turns=[Turn("Book")])).assert_threshold()
        """,
    )

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*agent_eval.run() got no agent= and there is no 'llm_eval_agent' fixture*"]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
