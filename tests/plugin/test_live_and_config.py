"""Live gating (flag, env, config), the not-live summary line, config checks and xdist."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest

from .conftest import Project

# The earlier package's line, word for word, then how to make it permanent.
SUMMARY = (
    "{n} eval test(s) skipped — live mode is off. Pass --agent-eval-live or set EVAL_LIVE=1."
    " To run them every time, set live = true in [[]tool.agent_eval]."
)

PASSING = """\
    id: {tid}
    turns:
      - user: hello
        expect:
          reply_contains_any: [hello]
"""


def _summary(n: int) -> str:
    return SUMMARY.format(n=n)


@pytest.fixture
def evals(project: Project) -> Project:
    """Two passing transcripts, one Python eval test and one ordinary test."""
    project.echo_agent("hello there")
    project.transcript("one", PASSING.format(tid="one"))
    project.transcript("two", PASSING.format(tid="two"))
    project.test_file(
        "test_python.py",
        """
        @pytest.mark.agent_eval(runs=2)
        def test_python_eval(agent_eval):
            agent_eval.run_sync(turns=[Turn("hello", expect=Expect(reply_contains_any=["hello"]))]).assert_threshold()


        def test_ordinary():
            assert 1 + 1 == 2
        """,
    )
    return project


def test_not_live_skips_evals_with_one_summary_line(evals: Project) -> None:
    result = evals.run("-rs")

    assert result.ret == pytest.ExitCode.OK
    # Ordinary tests still run; the three evals are skipped, with one line saying how to run them.
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([_summary(3)])
    assert sum("eval test(s) skipped — live mode is off" in line for line in result.outlines) == 1
    result.stdout.fnmatch_lines(
        ["SKIPPED [[]*] *: agent_eval: live mode disabled (use --agent-eval-live or EVAL_LIVE=1*"]
    )


def test_not_live_skip_is_located_at_the_transcript_and_test(evals: Project) -> None:
    result = evals.run("-rs")

    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines_random(
        [
            "SKIPPED [[]1] tests/evals/one.yaml*: agent_eval: live mode disabled*",
            "SKIPPED [[]1] tests/evals/two.yaml*: agent_eval: live mode disabled*",
            "SKIPPED [[]1] tests/test_python.py:*: agent_eval: live mode disabled*",
        ]
    )
    result.stdout.no_fnmatch_line("SKIPPED*plugin.py*")


def test_not_live_summary_with_a_single_eval(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("one", PASSING.format(tid="one"))

    result = project.run()

    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines([_summary(1)])


def test_no_summary_line_when_live(evals: Project) -> None:
    result = evals.run_live()

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4)
    result.stdout.no_fnmatch_line("*not live*")


def test_no_summary_line_without_evals(project: Project) -> None:
    project.test_file("test_plain.py", "def test_plain():\n    pass\n")

    result = project.run()

    result.assert_outcomes(passed=1)
    result.stdout.no_fnmatch_line("*agent-eval:*")


@pytest.mark.parametrize("value", ["1", "true", "yes", "on", "TRUE", "Yes"])
def test_eval_live_env_turns_evals_on(
    evals: Project, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("EVAL_LIVE", value)

    result = evals.run()

    result.assert_outcomes(passed=4)


def test_live_in_config_turns_evals_on(evals: Project) -> None:
    evals.pyproject("live = true")

    result = evals.run()

    result.assert_outcomes(passed=4)


@pytest.mark.parametrize("value", ["0", "false", "no", "off"])
def test_eval_live_0_overrides_live_true_in_config(
    evals: Project, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    evals.pyproject("live = true")
    monkeypatch.setenv("EVAL_LIVE", value)

    result = evals.run()

    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([_summary(3)])


def test_live_flag_wins_over_eval_live_0(evals: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVAL_LIVE", "0")

    result = evals.run_live()

    result.assert_outcomes(passed=4)


def test_empty_eval_live_means_unset(evals: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    evals.pyproject("live = true")
    monkeypatch.setenv("EVAL_LIVE", "")

    result = evals.run()

    result.assert_outcomes(passed=4)


def test_bad_eval_live_value_is_a_usage_error(
    evals: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EVAL_LIVE", "maybe")

    result = evals.run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: EVAL_LIVE='maybe' is not understood; use 1/true/yes to enable,"
            " 0/false/no to disable"
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ('runs = "three"', "'runs' must be an integer >= 1, got str 'three'"),
        ("runs = true", "'runs' must be an integer >= 1, got bool True"),
        ('threshold = "high"', "'threshold' must be a number between 0.0 and 1.0, got str 'high'"),
        ('live = "yes"', "'live' must be true or false, got str 'yes'"),
        ('yaml_dirs = "tests/evals"', "'yaml_dirs' must be a list of folder paths, got str *"),
        ("concurrency = 0", "'concurrency' must be >= 1, got 0"),
        ("runs = 0", "'runs' must be >= 1, got 0"),
        ("threshold = 1.2", "'threshold' must be between 0.0 and 1.0, got 1.2"),
        ("early_stop = 1", "'early_stop' must be true or false, got int 1"),
        ("yaml_dirs = [1, 2]", "'yaml_dirs' must be a list of strings, got [[]1, 2]"),
        ("timeout = 0", "'timeout' must be > 0 seconds, got 0"),
        ("retries = -1", "'retries' must be >= 0, got -1"),
        (
            'stale_audio = "skipp"',
            "'stale_audio' must be one of fail, skip, synthesize, got 'skipp'"
            " (Did you mean 'skip'?)",
        ),
    ],
)
def test_bad_config_value_is_a_usage_error_naming_the_key(
    evals: Project, setting: str, message: str
) -> None:
    evals.pyproject(setting)

    result = evals.run()

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: pyproject.toml [[]tool.agent_eval]: {message}"])
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stderr.no_fnmatch_line("*Traceback*")


def test_unknown_config_key_warns_with_did_you_mean(evals: Project) -> None:
    evals.pyproject("treshold = 0.5\nlive = true")

    result = evals.run()

    # A warning, not an error: the run goes on with the key ignored.
    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=4, warnings=1)
    # Shown at the pyproject line it is about, with that line, not at this package's code.
    result.stdout.fnmatch_lines(
        [
            "pyproject.toml:2",
            "*/pyproject.toml:2: PytestConfigWarning: pyproject.toml [[]tool.agent_eval]: unknown"
            " key 'treshold' (Did you mean 'threshold'?); it is ignored",
            "    treshold = 0.5",
        ]
    )
    result.stdout.no_fnmatch_line("*plugin.py*")


def test_an_unknown_key_in_a_sub_table_is_shown_at_its_line(evals: Project) -> None:
    evals.pyproject('live = true\n\n[tool.agent_eval.voice]\nseed = 1\nbackendd = "x"')

    result = evals.run()

    result.stdout.fnmatch_lines(
        [
            "pyproject.toml:6",
            "*PytestConfigWarning: pyproject.toml [[]tool.agent_eval].voice: unknown key"
            " 'backendd' (Did you mean 'backend'?); it is ignored",
            '    backendd = "x"',
        ]
    )


def test_an_unknown_key_made_an_error_by_w_error_is_a_usage_error(evals: Project) -> None:
    evals.pyproject("treshold = 0.5\nlive = true")

    result = evals.run("-W", "error::pytest.PytestConfigWarning")

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: */pyproject.toml:2: pyproject.toml [[]tool.agent_eval]: unknown key"
            " 'treshold' (Did you mean 'threshold'?); fix or remove it (this warning is an error"
            " here: -W or filterwarnings turns PytestConfigWarning into errors)"
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("", None),
        ("stt_cache = true", ".agent_eval_cache/stt"),
        ('stt_cache = true\nstt_cache_dir = "ci/stt"', "ci/stt"),
        ('stt_cache_dir = "ci/stt"', None),
    ],
)
def test_stt_cache_sets_the_recognizers_disk_folder_for_the_run_only(
    project: Project, setting: str, expected: str | None
) -> None:
    from pytest_agent_eval.voice._fixtures import default_transcript_cache_dir

    project.pyproject(setting)
    want = "None" if expected is None else f"pytestconfig.rootpath / {expected!r}"
    project.test_file(
        "test_folder.py",
        f"""
        from pytest_agent_eval.voice._fixtures import default_transcript_cache_dir


        def test_folder(pytestconfig):
            assert default_transcript_cache_dir() == {want}
        """,
    )
    before = default_transcript_cache_dir()

    project.run().assert_outcomes(passed=1)

    assert default_transcript_cache_dir() == before  # restored when the run ends


def test_not_live_under_xdist_prints_the_summary_once(evals: Project) -> None:
    result = evals.pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1, skipped=3)
    result.stdout.fnmatch_lines([_summary(3)])
    assert sum("live mode is off" in line for line in result.outlines) == 1


def test_live_under_xdist_runs_shows_the_account_and_keeps_junit_properties(
    project: Project,
) -> None:
    project.echo_agent("hello there")
    project.transcript("one", PASSING.format(tid="one"))
    project.transcript("two", PASSING.format(tid="two"))
    project.transcript("bad", PASSING.format(tid="bad").replace("[hello]", "[goodbye]"))

    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--agent-eval-live", "--junitxml=report.xml"
    )

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "LLM eval failed: score=0.00 < threshold=0.80 (0/1 runs passed)",
            "*",
            "  run 1: FAILED*",
            "    turn 1 [[]FAIL] user: 'hello'",
            "      reply: 'hello there'",
        ]
    )
    # Results travel from the workers inside the reports, so JUnit properties survive.
    cases = {c.get("name"): c for c in ET.parse(project.path / "report.xml").iter("testcase")}
    for tid, score in (("one", "1.0"), ("two", "1.0"), ("bad", "0.0")):
        props = {p.get("name"): p.get("value") for p in cases[tid].iter("property")}
        assert props["agent_eval_score"] == score
        assert props["agent_eval_runs"] == "1"


def test_not_live_never_builds_the_agent(project: Project) -> None:
    # A real agent fixture may need API keys or start servers: skipped evals must not touch it.
    project.conftest(
        """
        @pytest.fixture
        def llm_eval_agent():
            open("agent_built.txt", "w").close()
            return lambda history: "hello"
        """
    )
    project.transcript("one", PASSING.format(tid="one"))
    project.test_file(
        "test_python.py",
        """
        @pytest.mark.agent_eval
        def test_python_eval(agent_eval, llm_eval_agent):
            agent_eval.run_sync(agent=llm_eval_agent, turns=[Turn("hello")]).assert_threshold()
        """,
    )

    not_live = project.run()

    not_live.assert_outcomes(skipped=2)
    assert not (project.path / "agent_built.txt").exists()

    live = project.run_live()

    live.assert_outcomes(passed=2)
    assert (project.path / "agent_built.txt").exists()
