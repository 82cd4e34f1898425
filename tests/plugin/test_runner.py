"""Runs, thresholds, isolated failures, early stop and the failure account, end to end."""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from .conftest import Project, lit

# An agent that behaves differently per call (a fresh one per test): runs go one at a time
# (concurrency = 1), so the n-th call is the n-th run of a one-turn transcript. FAIL_ON and
# RAISE_ON pick the bad runs; every call is logged to calls.txt.
COUNTING_AGENT = """
import itertools


@pytest.fixture
def llm_eval_agent():
    calls = itertools.count(1)

    def agent(history):
        n = next(calls)
        with open("calls.txt", "a") as f:
            f.write(f"{n}\\n")
        if n in RAISE_ON:
            raise ValueError(f"agent exploded on call {n}")
        if n in FAIL_ON:
            return AgentReply("Sorry, no tables left.", ["check_slots"])
        return AgentReply("Booked for tomorrow.", ["check_slots", "create_booking"])

    return agent
"""

ONE_TURN = """\
    id: booking
    runs: {runs}
    threshold: {threshold}
    turns:
      - user: Book a table
        expect:
          reply_contains_any: [booked]
          tool_calls_include: [create_booking]
"""


def _counting_project(
    project: Project, *, fail_on: Iterable[int] = (), raise_on: Iterable[int] = ()
) -> None:
    project.pyproject("concurrency = 1")
    project.conftest(f"FAIL_ON = {set(fail_on)!r}\nRAISE_ON = {set(raise_on)!r}\n" + COUNTING_AGENT)


def _calls(project: Project) -> int:
    path = project.path / "calls.txt"
    return len(path.read_text().split()) if path.exists() else 0


def test_two_of_three_passes_a_threshold_of_0_6(project: Project) -> None:
    _counting_project(project, fail_on=(2,))
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=0.6))

    result = project.run_live("-v")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/evals/booking.yaml::booking PASSED*"])
    assert _calls(project) == 3


def test_two_of_three_fails_a_threshold_of_0_8_with_the_seed_wording(project: Project) -> None:
    _counting_project(project, fail_on=(2,))
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=0.8))

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ transcript: booking _*",
            "LLM eval failed: score=0.67 < threshold=0.80 (2/3 runs passed)",
            "score=0.67 (95% CI *) threshold=0.80, 2/3 runs passed",
            "  run 1: passed (*s)",
            "  run 2: FAILED (*s)",
            "    turn 1 [[]FAIL] user: 'Book a table'",
            "      reply: 'Sorry, no tables left.'",
            "      tools: check_slots()",
            "*",
            "  run 3: passed (*s)",
        ]
    )
    # The short summary starts with the first failed check (at 80 columns pytest cuts it).
    summary = "FAILED tests/evals/booking.yaml::booking - reply_contains_any (line *): reply*"
    if int(pytest.__version__.split(".")[0]) < 9:
        # pytest 8 shows no reason for a failure whose report is plain text.
        summary = "FAILED tests/evals/booking.yaml::booking*"
    result.stdout.fnmatch_lines([summary])


def test_threshold_is_inclusive(project: Project) -> None:
    _counting_project(project, fail_on=(1,))
    project.transcript("booking", ONE_TURN.format(runs=4, threshold=0.75))

    result = project.run_live()

    result.assert_outcomes(passed=1)


def test_agent_raising_crashes_only_that_run_and_fails_the_eval(project: Project) -> None:
    _counting_project(project, raise_on=(2,))
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=0.6))

    result = project.run_live()

    # One run exploded; the other two ran and passed, so the threshold is met, but a crash
    # fails the eval whatever its pass rate.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    assert _calls(project) == 3
    result.stdout.fnmatch_lines(["booking*3*2*0.67*0.60*CRASHED*"])


def test_agent_exception_is_shown_with_a_traceback_summary(project: Project) -> None:
    _counting_project(project, raise_on=(2,))
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=1.0))

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "CRASHED: 1 of 3 run(s) crashed: run 2, turn 1: ValueError: agent exploded on call 2 "
            "(at conftest.py:* in agent)",
            "LLM eval CRASHED: 1 of 3 run(s) crashed: *",
            "*",
            "  run 1: passed*",
            "  run 2: CRASHED*",
            "    turn 1 [[]CRASHED] user: 'Book a table'",
            "      crashed: ValueError: agent exploded on call 2 (at conftest.py:* in agent)",
            "      error: ValueError: agent exploded on call 2 (at conftest.py:* in agent*",
            "  run 3: passed*",
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_a_run_stops_at_the_turn_whose_agent_raised(project: Project) -> None:
    _counting_project(project, raise_on=(1,))
    project.transcript(
        "two_turns",
        """\
        id: two_turns
        turns:
          - user: first
          - user: second
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["    turn 1 [[]CRASHED] user: 'first'", "      crashed: ValueError: agent exploded*"]
    )
    result.stdout.no_fnmatch_line("*user: 'second'*")
    assert _calls(project) == 1


def test_every_failed_check_is_listed_with_reply_and_tool_calls(project: Project) -> None:
    project.echo_agent(
        "Let me check.", "[ToolCall('check_slots', {'day': 'mon'}), ToolCall('cancel_booking')]"
    )
    project.transcript(
        "checks",
        """\
        id: checks
        turns:
          - user: Book Monday
            expect:
              reply_contains_any: [booked, confirmed]
              reply_contains_all: [monday, check]
              reply_matches_any: ["BK-\\\\d+"]
              reply_matches_all: ["^let", "\\\\d{2}:\\\\d{2}"]
              tool_calls_include: [check_slots, create_booking]
              tool_calls_exclude: [cancel_booking]
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    turn 1 [[]FAIL] user: 'Book Monday'",
            "      reply: 'Let me check.'",
            '      tools: check_slots({"day": "mon"}), cancel_booking()',
            # One line per failed key, each naming its key and line.
            lit(
                "      - turns[0].expect.reply_contains_any (checks.yaml:5) fail: reply contains"
                " none of ['booked', 'confirmed'] (reply was 'Let me check.')"
            ),
            lit(
                "      - turns[0].expect.reply_contains_all (checks.yaml:6) fail: reply is missing"
                " ['monday'] (reply was 'Let me check.')"
            ),
            lit(
                "      - turns[0].expect.reply_matches_any (checks.yaml:7) fail: reply matches"
                " none of the patterns ['BK-\\d+'] (reply was 'Let me check.')"
            ),
            lit(
                "      - turns[0].expect.reply_matches_all (checks.yaml:8) fail: reply does not"
                " match ['\\d{2}:\\d{2}'] (reply was 'Let me check.')"
            ),
            lit(
                "      - turns[0].expect.tool_calls_include (checks.yaml:9) fail: expected tool"
                " calls not made: ['create_booking']"
                ' (saw check_slots({"day": "mon"}), cancel_booking())'
            ),
            lit(
                "      - turns[0].expect.tool_calls_exclude (checks.yaml:10) fail: forbidden tool"
                ' calls made: [\'cancel_booking\'] (saw check_slots({"day": "mon"}),'
                " cancel_booking())"
            ),
        ]
    )


def test_account_shows_each_run_and_turn(project: Project) -> None:
    project.pyproject("concurrency = 1")
    project.conftest(
        """
        import itertools


        @pytest.fixture
        def llm_eval_agent():
            calls = itertools.count(1)

            def agent(history):
                n = next(calls)
                # Two turns per run: calls 1-2 are run 1, calls 3-4 run 2.
                if n == 4:
                    return "I forgot."
                return f"answer {n}"

            return agent
        """
    )
    project.transcript(
        "story",
        """\
        id: story
        runs: 2
        threshold: 1.0
        turns:
          - user: first question
            expect:
              reply_contains_any: [answer]
          - user: second question
            expect:
              reply_contains_any: [answer]
        """,
    )

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "LLM eval failed: score=0.50 < threshold=1.00 (1/2 runs passed)",
            "score=0.50 (95% CI *) threshold=1.00, 1/2 runs passed",
            "  run 1: passed (*s)",
            "  run 2: FAILED (*s)",
            "    turn 1 [[]ok] user: 'first question'",
            "    turn 2 [[]FAIL] user: 'second question'",
            "      reply: 'I forgot.'",
            lit(
                "      - turns[1].expect.reply_contains_any (story.yaml:10) fail: reply contains"
                " none of ['answer'] (reply was 'I forgot.')"
            ),
        ]
    )


@pytest.mark.parametrize("how", ["option", "config"])
def test_early_stop_saves_runs_and_says_so(project: Project, how: str) -> None:
    _counting_project(project, fail_on=set(range(1, 11)))
    if how == "config":
        project.pyproject("concurrency = 1\nearly_stop = true")
    project.transcript("booking", ONE_TURN.format(runs=10, threshold=0.8))

    args = ["--agent-eval-early-stop"] if how == "option" else []
    result = project.run_live(*args)

    # 8 of 10 must pass; after 3 failures that is impossible, so 7 runs never start.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "LLM eval failed: score=0.00 < threshold=0.80 (0/3 runs passed)",
            "score=0.00 (95% CI *) threshold=0.80, 0/3 runs passed; early stop: 7 of 10 runs not"
            " started (verdict already settled)",
        ]
    )
    assert _calls(project) == 3


def test_early_stop_also_stops_once_the_threshold_is_reached(project: Project) -> None:
    _counting_project(project)
    project.transcript("booking", ONE_TURN.format(runs=10, threshold=0.3))

    result = project.run_live("--agent-eval-early-stop")

    result.assert_outcomes(passed=1)
    assert _calls(project) == 3


def test_without_early_stop_every_run_happens(project: Project) -> None:
    _counting_project(project, fail_on=set(range(1, 11)))
    project.transcript("booking", ONE_TURN.format(runs=10, threshold=0.8))

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["LLM eval failed: score=0.00 < threshold=0.80 (0/10 runs passed)"])
    result.stdout.no_fnmatch_line("*early stop*")
    assert _calls(project) == 10


def test_runs_option_overrides_every_transcript(project: Project) -> None:
    _counting_project(project, fail_on=set(range(1, 20)))
    project.transcript("booking", ONE_TURN.format(runs=7, threshold=0.8))

    result = project.run_live("--agent-eval-runs=2")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["LLM eval failed: score=0.00 < threshold=0.80 (0/2 runs passed)"])
    assert _calls(project) == 2


def test_config_runs_and_threshold_are_defaults_the_yaml_can_override(project: Project) -> None:
    _counting_project(project, fail_on=(1,))
    project.pyproject("concurrency = 1\nruns = 4\nthreshold = 0.75")
    project.transcript(
        "defaults",
        """\
        id: defaults
        turns:
          - user: Book
            expect: {reply_contains_any: [booked]}
        """,
    )
    project.transcript(
        "own",
        """\
        id: own
        runs: 2
        threshold: 0.5
        turns:
          - user: Book
            expect: {reply_contains_any: [booked]}
        """,
    )

    result = project.run_live("-v")

    # Each test gets a fresh agent whose first call fails: defaults.yaml runs 4 times
    # (3/4 >= 0.75), own.yaml twice with its own threshold (1/2 >= 0.5).
    result.assert_outcomes(passed=2)
    assert _calls(project) == 6


PEAK_AGENT = """
import asyncio

state = {"active": 0, "peak": 0}


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        state["active"] += 1
        state["peak"] = max(state["peak"], state["active"])
        # Yield to the event loop so every run allowed to start can do so.
        for _ in range(5):
            await asyncio.sleep(0)
        state["active"] -= 1
        with open("peak.txt", "w") as f:
            f.write(str(state["peak"]))
        return AgentReply("booked", ["create_booking"])

    return agent
"""


@pytest.mark.parametrize(
    ("setting", "args", "peak"),
    [
        ("concurrency = 2", [], 2),
        ("concurrency = 1", [], 1),
        ("", [], 4),  # the default
        ("concurrency = 1", ["--agent-eval-concurrency=3"], 3),  # the option wins
    ],
)
def test_concurrency_bounds_runs_in_flight(
    project: Project, setting: str, args: list[str], peak: int
) -> None:
    project.pyproject(setting)
    project.conftest(PEAK_AGENT)
    project.transcript("booking", ONE_TURN.format(runs=8, threshold=1.0))

    result = project.run_live(*args)

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
    assert (project.path / "peak.txt").read_text() == str(peak)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--agent-eval-runs=0"], "ERROR: --agent-eval-runs must be >= 1, got 0"),
        (["--agent-eval-concurrency=0"], "ERROR: --agent-eval-concurrency must be >= 1, got 0"),
        (["--agent-eval-runs=many"], "*argument --agent-eval-runs: invalid int value: 'many'"),
    ],
)
def test_bad_runner_options_are_usage_errors(
    project: Project, args: list[str], message: str
) -> None:
    project.echo_agent("booked")

    result = project.run_live(*args)

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_identical_failed_runs_are_folded_but_different_ones_are_shown(project: Project) -> None:
    project.pyproject("concurrency = 1")
    project.conftest(
        """
        import itertools


        @pytest.fixture
        def llm_eval_agent():
            calls = itertools.count(1)

            def agent(history):
                n = next(calls)
                return "Sorry, no tables." if n < 3 else f"Sorry, no tables (try {n})."

            return agent
        """
    )
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=0.5))

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  run 1: FAILED (*s)",
            "      reply: 'Sorry, no tables.'",
            "*",
            "  run 2: FAILED (*s) same as run 1",
            "  run 3: FAILED (*s)",
            "    turn 1 [[]FAIL] user: 'Book a table'",
            "      reply: 'Sorry, no tables (try 3).'",
        ]
    )


def test_agent_calling_pytest_skip_skips_cleanly(project: Project) -> None:
    project.agent('pytest.skip("no OPENAI_API_KEY")\n')
    project.transcript("booking", ONE_TURN.format(runs=3, threshold=1.0))

    # A subprocess: the noise comes from asyncio when the tasks are garbage collected.
    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--agent-eval-live", "-rs"
    )

    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED [[]1] *: no OPENAI_API_KEY"])
    assert "Task exception was never retrieved" not in result.stdout.str() + result.stderr.str()
