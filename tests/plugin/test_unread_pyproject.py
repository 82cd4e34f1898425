"""A pyproject.toml nearer the tests than the one pytest read has settings nobody reads: pytest
counts a pyproject.toml only with a [tool.pytest.ini_options] table and reads one per session,
so its [tool.agent_eval] was silently ignored (issue 32). The plugin says so, naming both files
and the fix."""

from __future__ import annotations

import pytest

from pytest_agent_eval._options import unread_pyprojects

from .conftest import Project

WARNING = (
    "tests/voice/pyproject.toml [tool.agent_eval] is not read: the tests below tests/voice run "
    "with the settings of pyproject.toml (pytest counts a pyproject.toml only when it has a "
    "[tool.pytest.ini_options] table, and this one has none). Move its settings into "
    "pyproject.toml, or add [tool.pytest.ini_options] to it and run pytest in tests/voice"
)


def _suite(project: Project) -> None:
    project.pyproject('yaml_dirs = ["tests"]')
    project.echo_agent("hello")
    project.transcript("hello", "id: hello\nturns:\n  - user: hi\n", folder="tests/voice/evals")
    (project.path / "tests" / "voice" / "pyproject.toml").write_text(
        "# settings for the voice evals\n[tool.agent_eval]\nruns = 5\n"
    )


def test_a_sub_folder_pyproject_with_settings_is_named_with_the_fix(project: Project) -> None:
    _suite(project)
    result = project.run_live()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*tests/voice/pyproject.toml:2: PytestConfigWarning: " + WARNING.replace("[", "[[]"),
            "*hello*1*1*PASS*",  # one run: the sub-folder's runs = 5 was not read
        ]
    )


def test_under_w_error_it_is_a_usage_error(project: Project) -> None:
    _suite(project)
    result = project.run_live("-W", "error::pytest.PytestConfigWarning")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: *tests/voice/pyproject.toml:2: *is not read*"])


def test_a_read_or_unrelated_pyproject_is_not_named(project: Project) -> None:
    _suite(project)
    sub = project.path / "tests" / "voice" / "pyproject.toml"
    sub.write_text("[tool.ruff]\nline-length = 100\n")  # no [tool.agent_eval]: nothing to lose
    assert "is not read" not in project.run_live().stdout.str()
    # The file the settings came from is never "unread", and a folder above it is not looked at.
    assert unread_pyprojects(sub, sub.parent, [sub.parent / "evals" / "hello.yaml"]) == []
    sub.write_text("[tool.agent_eval]\nruns = 5\n[tool.pytest.ini_options]\n")
    (warning,) = unread_pyprojects(
        project.path / "pyproject.toml", project.path, [sub.parent / "evals" / "hello.yaml"]
    )
    assert "pytest reads one configuration file per session" in warning
    assert warning.endswith("or run pytest in tests/voice")
