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
