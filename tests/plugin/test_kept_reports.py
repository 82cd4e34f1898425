"""A report path from pyproject.toml is not overwritten by a later session that ran no eval (a
unit-test step in the same CI job, ``--co``): the report of the eval step survives. A path
given on the command line is always written, so an old report never passes for a new one."""

from __future__ import annotations

import json

import pytest

from .conftest import Project

CONFIG = """
yaml_dirs = ["tests/evals"]
report_path = "build/evals.md"
html_report_path = "build/evals.html"
results_path = "build/evals.json"
"""

PATHS = ("build/evals.md", "build/evals.html", "build/evals.json")


def _eval_step(project: Project) -> dict[str, str]:
    project.pyproject(CONFIG)
    project.echo_agent("booked")
    project.transcript("booking", "id: booking\nturns:\n  - user: Book\n")
    project.test_file("test_unit.py", "def test_unit():\n    pass\n")
    result = project.run_live("tests/evals")
    result.assert_outcomes(passed=1)
    return {p: (project.path / p).read_text(encoding="utf-8") for p in PATHS}


@pytest.mark.parametrize(
    "later",
    [("tests/test_unit.py",), ("--co",), ()],
    ids=["unit-test-step", "collect-only", "not-live"],
)
def test_a_session_without_evals_leaves_configured_reports_alone(
    project: Project, later: tuple[str, ...]
) -> None:
    before = _eval_step(project)
    assert "booking" in before["build/evals.md"]

    result = project.run(*later)

    assert result.ret == 0
    after = {p: (project.path / p).read_text(encoding="utf-8") for p in PATHS}
    assert after == before
    result.stdout.fnmatch_lines(
        ["*agent eval markdown report: *build/evals.md kept (no eval test ran in this session)*"]
    )


def test_a_path_on_the_command_line_is_written_even_when_no_eval_ran(project: Project) -> None:
    _eval_step(project)

    result = project.run(
        "tests/test_unit.py",
        "--agent-eval-report=build/evals.md",
        "--agent-eval-results=build/evals.json",
    )

    assert result.ret == 0
    text = (project.path / "build/evals.md").read_text(encoding="utf-8")
    assert "No eval test ran in this session" in text
    assert json.loads((project.path / "build/evals.json").read_text())["evals"] == []
    # The one from pyproject.toml that was not on the command line is kept.
    assert "booking" in (project.path / "build/evals.html").read_text(encoding="utf-8")


def test_a_configured_report_that_does_not_exist_yet_is_written(project: Project) -> None:
    project.pyproject(CONFIG)
    project.test_file("test_unit.py", "def test_unit():\n    pass\n")

    project.run("tests/test_unit.py")

    # Nothing to keep: the session says that no eval ran (as it did before).
    assert "No eval test ran" in (project.path / "build/evals.md").read_text(encoding="utf-8")
