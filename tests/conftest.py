"""Shared test configuration (pytester itself is enabled in pyproject with ``-p pytester``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class ExampleProjects:
    """Copies a project from ``examples/`` into pytester's folder and edits it there."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self._pytester = pytester

    def copy(self, name: str) -> Path:
        """Copy ``examples/name`` into pytester's folder (which becomes the rootdir)."""
        shutil.copytree(
            EXAMPLES / name,
            self._pytester.path,
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".agent_eval_cache"),
        )
        return self._pytester.path

    @staticmethod
    def edit(path: Path, old: str, new: str, count: int = -1) -> None:
        """Replace ``old`` (which must be there) with ``new`` in ``path``."""
        text = path.read_text()
        assert old in text, f"{old!r} not in {path}"
        path.write_text(text.replace(old, new, count))


@pytest.fixture
def examples(pytester: pytest.Pytester) -> ExampleProjects:
    """The example projects, ready to copy into a pytester run."""
    return ExampleProjects(pytester)


@pytest.fixture(autouse=True)
def _eighty_column_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every pytest run a test starts (in-process or as a subprocess) sees 80 columns, the width
    pytest assumes without a terminal. Tests read what a user's terminal shows; pytest cuts its
    short summary to the width (or prints it whole on a wide one), so without this a narrow or
    wide ``COLUMNS`` in the environment running the suite would change what they read."""
    monkeypatch.setenv("COLUMNS", "80")
