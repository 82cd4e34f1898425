"""``pytest --agent-eval-capacity``: the capacity run over the session's selected transcripts,
with the project's ``[tool.agent_eval.capacity]`` plan, its gate failing the session."""

from __future__ import annotations

import json

import pytest

AGENT = '''\
import asyncio

import pytest


async def waiting(history):
    """Waits on a provider: the loop stays free."""
    await asyncio.sleep(0.01)
    return "ok"


@pytest.fixture
def llm_eval_agent():
    return waiting
'''

TRANSCRIPT = """\
id: {id}
turns:
  - user: "hello"
  - user: "book a table"
"""

PYPROJECT = """\
[tool.agent_eval]
yaml_dirs = ["evals"]

[tool.agent_eval.capacity]
steps = [1]
repeats = 1
loop_lag_ms = 5000
p95_latency_ms = 60000
min_sessions_per_core = {gate}
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(AGENT)
    (pytester.path / "evals").mkdir()
    for name in ("chat", "booking"):
        (pytester.path / "evals" / f"{name}.yaml").write_text(TRANSCRIPT.format(id=name))
    return pytester


def test_a_knee_below_the_gate_fails_the_session_over_the_selected_transcripts(
    project: pytest.Pytester,
) -> None:
    # One session per core is all a step of K=1 can show: a gate of 1000 fails.
    (project.path / "pyproject.toml").write_text(PYPROJECT.format(gate=1000))
    result = project.runpytest("--agent-eval-capacity", "-k", "chat")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*= agent-eval capacity =*",
            "*sessions per core*",
            "capacity gate failed: * sessions per core < --min-sessions-per-core 1000",
        ]
    )
    result.assert_outcomes()  # the selected tests were measured, not run
    data = json.loads((project.path / "agent-eval-capacity.json").read_text())
    assert data["transcripts"] == ["chat"]  # -k left booking out
    assert data["gate"] == {"min_sessions_per_core": 1000.0, "passed": False}
    assert [s["turns"] for s in data["steps"]] == [2]


def test_a_knee_at_or_over_the_gate_passes(project: pytest.Pytester) -> None:
    (project.path / "pyproject.toml").write_text(PYPROJECT.format(gate=0.5))
    result = project.runpytest("--agent-eval-capacity")
    assert result.ret == 0, result.stdout.str()
    assert "capacity gate failed" not in result.stdout.str()
    data = json.loads((project.path / "agent-eval-capacity.json").read_text())
    assert sorted(data["transcripts"]) == ["booking", "chat"]
    assert data["gate"]["passed"] is True


def test_bad_capacity_settings_are_a_usage_error_naming_the_key(project: pytest.Pytester) -> None:
    (project.path / "pyproject.toml").write_text(PYPROJECT.format(gate=-1))
    result = project.runpytest("--agent-eval-capacity")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-eval-capacity: *min_sessions_per_core must be >= 0*"])
    assert not (project.path / "agent-eval-capacity.json").exists()


TURNS = """\
id: turns
turn_taking:
  categories: [pause]
  voices: 1
  seeds: 1
  budgets:
    pause_takeover_rate_max: 0.1
"""


def _plan(project: pytest.Pytester, gate: float = 0.5) -> None:
    (project.path / "pyproject.toml").write_text(PYPROJECT.format(gate=gate))


def test_collect_only_lists_the_items_and_runs_no_ramp(project: pytest.Pytester) -> None:
    _plan(project)
    result = project.runpytest("--agent-eval-capacity", "--collect-only", "-q")
    assert result.ret == 0, result.stdout.str()
    assert "agent-eval capacity" not in result.stdout.str()
    assert not (project.path / "agent-eval-capacity.json").exists()


def test_a_collection_error_stops_the_session_before_the_ramp(project: pytest.Pytester) -> None:
    _plan(project)
    (project.path / "evals" / "broken.yaml").write_text("id: broken\nturns: [ {user: \n")
    result = project.runpytest("--agent-eval-capacity")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*1 error during collection*"])
    assert not (project.path / "agent-eval-capacity.json").exists()


@pytest.mark.parametrize(
    ("option", "named"),
    [
        (["-p", "xdist", "-n", "2"], "drop -n"),
        (["--agent-eval-shard", "1/2"], "--agent-eval-shard"),
    ],
)
def test_xdist_and_shards_are_refused(
    project: pytest.Pytester, option: list[str], named: str
) -> None:
    pytest.importorskip("xdist")
    _plan(project)
    result = project.runpytest("--agent-eval-capacity", "-p", "no:cacheprovider", *option)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--agent-eval-capacity*one process*{named}*"])
    assert "no transcripts" not in result.stderr.str()


def test_turn_taking_tests_are_left_out_with_a_line(project: pytest.Pytester) -> None:
    _plan(project)
    (project.path / "evals" / "turns.yaml").write_text(TURNS)
    result = project.runpytest("--agent-eval-capacity", "-k", "chat or turns")
    assert result.ret == 0, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["capacity: left out 1 turn-taking or simulation test(s)*"])
    data = json.loads((project.path / "agent-eval-capacity.json").read_text())
    assert data["transcripts"] == ["chat"]


def test_only_turn_taking_selected_is_no_transcripts(project: pytest.Pytester) -> None:
    _plan(project)
    (project.path / "evals" / "turns.yaml").write_text(TURNS)
    result = project.runpytest("evals/turns.yaml", "--agent-eval-capacity")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-eval-capacity: no transcripts were selected*"])


def test_a_far_end_transcript_is_refused_as_the_command_refuses_it(
    project: pytest.Pytester,
) -> None:
    _plan(project)
    (project.path / "evals" / "call.yaml").write_text(
        'id: confirm\nfar_end: human\nturns:\n  - user: "Yes."\n'
    )
    result = project.runpytest("evals/call.yaml", "--agent-eval-capacity")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-eval-capacity: capacity: *has a far end (far_end:)*"])


def test_the_plan_is_read_from_the_sessions_pyproject(project: pytest.Pytester) -> None:
    # pytest.ini in sub/ makes the rootdir sub/; the session's pyproject is the one above it.
    _plan(project, gate=-1)
    (project.path / "sub").mkdir()
    (project.path / "sub" / "pytest.ini").write_text("[pytest]\n")
    result = project.runpytest("--rootdir=sub", "evals/chat.yaml", "--agent-eval-capacity")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--agent-eval-capacity: *min_sessions_per_core must be >= 0*"])


def test_a_usage_error_shows_the_error_once_without_progress(project: pytest.Pytester) -> None:
    # A fixture that takes other fixtures: the run's own error (code 2), after its progress.
    _plan(project)
    project.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef llm_eval_agent(tmp_path):\n    return None\n"
    )
    result = project.runpytest("--agent-eval-capacity", "-k", "chat")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert "takes other fixtures" in err
    assert "error: " not in err.replace("ERROR: ", "")
    assert "capacity: K=" not in err


def test_going_on_past_collection_errors_names_them_not_an_empty_selection(
    project: pytest.Pytester,
) -> None:
    _plan(project)
    (project.path / "evals" / "broken.yaml").write_text("id: broken\nturns: [ {user: \n")
    result = project.runpytest(
        "evals/broken.yaml", "--agent-eval-capacity", "--continue-on-collection-errors"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no transcripts to run: 1 collection error(s)*"])
    assert "no transcripts were selected" not in result.stderr.str()


def test_the_agent_fixture_comes_from_the_conftest_pytest_imported(
    project: pytest.Pytester,
) -> None:
    # A conftest whose import has an effect (it counts its executions): the capacity run
    # takes the fixture from pytest's module, so the conftest runs once, as in any session.
    conftest = project.path / "conftest.py"
    conftest.write_text(
        "from pathlib import Path\n"
        "with (Path(__file__).parent / 'imports.txt').open('a') as f:\n"
        "    f.write('imported\\n')\n" + conftest.read_text()
    )
    (project.path / "pyproject.toml").write_text(PYPROJECT.format(gate=0.5))
    result = project.runpytest("--agent-eval-capacity", "-k", "chat")
    assert result.ret == 0, result.stdout.str()
    assert (project.path / "imports.txt").read_text().splitlines() == ["imported"]
    data = json.loads((project.path / "agent-eval-capacity.json").read_text())
    assert data["agent"].startswith("llm_eval_agent (")
