"""Nothing hangs and nothing blows up: bounded YAML, bounded settings, a per-turn timeout,
sync agents in threads, and agents that misbehave recorded as that run's failure."""

from __future__ import annotations

import time

import pytest

from .conftest import Project

LAUGHS = """\
id: laughs
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
turns: [{user: hi}]
"""


def test_a_billion_laughs_file_fails_fast_with_one_clear_error(project: Project) -> None:
    assert len(LAUGHS.encode()) < 450
    project.echo_agent("hi")
    project.transcript("laughs", LAUGHS)
    started = time.monotonic()
    result = project.run()
    assert time.monotonic() - started < 60  # before the bound: > 120 s and 4 GB
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*laughs.yaml:7: the YAML expands to more than 100,000 values through its aliases*"]
    )


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "id: t\nturns:\n  - user: !!python/object:os.system hi\n",
            "*t.yaml:3: YAML tags are not allowed in transcripts (found !!python/object:os.system)*",
        ),
        (
            "id: t\nturns:\n  - user: !custom hi\n",
            "*t.yaml:3: YAML tags are not allowed in transcripts (found !custom)*",
        ),
        (
            "id: t\nthreshold: .nan\nturns:\n  - user: hi\n",
            "*t.yaml:2: .nan is not a number a transcript can use*",
        ),
        (
            "id: t\nruns: 99999999999999999999999\nturns:\n  - user: hi\n",
            "*t.yaml:2, transcript 't', runs: runs must be at most 10000, got 99999999999999999999999",
        ),
        (
            "id: t\nturn_timeout_s: 0\nturns:\n  - user: hi\n",
            "*t.yaml:2, transcript 't', turn_timeout_s: turn_timeout_s must be a number of seconds > 0*",
        ),
        (
            "id: t\nloop: &x [*x]\nturns:\n  - user: hi\n",
            "*t.yaml:2: an alias (*name) refers to a value that contains it*",
        ),
    ],
    ids=["python-tag", "local-tag", "nan", "huge-runs", "zero-timeout", "recursive-alias"],
)
def test_hostile_yaml_gets_one_clear_error(project: Project, body: str, message: str) -> None:
    project.echo_agent("hi")
    project.transcript("t", body)
    result = project.run()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message.replace("[", "[[]").replace("(*", "([*]")])
    result.stdout.no_fnmatch_line("*check indentation*")
    result.stdout.no_fnmatch_line("*Traceback*")


@pytest.mark.parametrize(
    ("table", "message"),
    [
        (
            "runs = 100000",
            "*'runs' must be <= 10000 (the most pytest-agent-eval allows), got 100000",
        ),
        ("concurrency = 100000", "*'concurrency' must be <= 256*"),
        ("retries = 50", "*'retries' must be <= 10*"),
        ("timeout = 100000", "*'timeout' must be <= 600 seconds*"),
        ("turn_timeout_s = 0", "*'turn_timeout_s' must be > 0 seconds, got 0"),
        ("judge_max_chars = 10", "*'judge_max_chars' must be >= 1000, got 10"),
        ("threshold = nan", "*'threshold' must be between 0.0 and 1.0, got nan"),
    ],
)
def test_settings_have_documented_maxima(project: Project, table: str, message: str) -> None:
    project.pyproject(table)
    result = project.run()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_command_line_runs_are_bounded_too(project: Project) -> None:
    result = project.run("--agent-eval-runs=1000000")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-eval-runs must be <= 10000*"])


def test_a_missing_yaml_dirs_folder_warns(project: Project) -> None:
    project.pyproject('yaml_dirs = ["tests/evalz"]')
    result = project.run()
    result.stdout.fnmatch_lines(["*yaml_dirs: 'tests/evalz' does not exist*"])


HANGING_SYNC = """\
def agent(history):
    import threading

    if "hang" in history[-1].content:
        threading.Event().wait()
    return AgentReply("ok")
"""

HANGING_ASYNC = """\
async def agent(history):
    import asyncio

    if "hang" in history[-1].content:
        await asyncio.Event().wait()
    return AgentReply("ok")
"""


@pytest.mark.parametrize("agent", [HANGING_SYNC, HANGING_ASYNC], ids=["sync", "async"])
def test_yaml_turn_timeout_fails_a_hung_turn(project: Project, agent: str) -> None:
    project.agent(agent)
    project.transcript(
        "hangs", "id: hangs\nturn_timeout_s: 0.5\nturns:\n  - user: fine\n  - user: hang now\n"
    )
    result = project.run_live()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*turn 2 [[]FAIL[]]*", "*no reply within turn_timeout_s=0.5s*"])


def test_config_and_marker_turn_timeouts(project: Project) -> None:
    project.pyproject("turn_timeout_s = 0.5")
    project.agent(HANGING_SYNC)
    project.transcript("hangs", "id: hangs\nturns:\n  - user: hang now\n")
    project.test_file(
        "test_marker.py",
        """
        @pytest.mark.agent_eval(turn_timeout_s=0.2)
        def test_marker(agent_eval):
            agent_eval.run_sync(turns=[Turn("hang please")]).assert_threshold()
        """,
    )
    result = project.run_live()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*no reply within turn_timeout_s=0.5s*"])
    result.stdout.fnmatch_lines(["*no reply within turn_timeout_s=0.2s*"])


def test_sync_agents_run_concurrently_in_threads(project: Project) -> None:
    # Four runs meet at a barrier: run one at a time, the first would wait there in vain.
    project.pyproject("concurrency = 4")
    project.conftest(
        """
        import threading

        @pytest.fixture
        def llm_eval_agent():
            barrier = threading.Barrier(4, timeout=20)

            def agent(history):
                barrier.wait()
                return AgentReply("all four met")

            return agent
        """
    )
    project.transcript(
        "together",
        "id: together\nruns: 4\nturns:\n  - user: hi\n    expect:\n"
        "      reply_contains_any: [met]\n",
    )
    result = project.run_live()
    result.assert_outcomes(passed=1)


def test_system_exit_from_an_agent_fails_that_run_only(project: Project) -> None:
    project.agent(
        """
        def agent(history):
            import sys

            if "exit" in history[-1].content:
                sys.exit(3)
            return AgentReply("fine")
        """
    )
    project.transcript("exits", "id: exits\nturns:\n  - user: please exit\n")
    project.transcript("fine", "id: fine\nturns:\n  - user: hello\n")
    result = project.run_live()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*the agent raised SystemExit(3): an agent must not end*"])
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*runner.py*")


def test_async_system_exit_is_recorded_too(project: Project) -> None:
    project.agent(
        """
        async def agent(history):
            raise SystemExit("bye")
        """
    )
    project.transcript("exits", "id: exits\nturns:\n  - user: hi\n")
    result = project.run_live()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the agent raised SystemExit('bye')*"])


def test_agent_reply_rejects_bytes(project: Project) -> None:
    project.agent('return AgentReply(b"Booked!")\n')
    project.transcript("bytes", "id: bytes\nturns:\n  - user: hi\n")
    result = project.run_live()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*AgentReply got bytes as its reply (b'Booked!'); pass text*"])
    result.stdout.no_fnmatch_line("*b'Booked!'\\'*")
