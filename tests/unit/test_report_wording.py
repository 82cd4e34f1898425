"""The renderers take the text they share from one module (_report/_format.py), never from each
other: a sentence changed there changes in every report at once."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_agent_eval

REPORT = Path(pytest_agent_eval.__file__).parent / "_report"
RENDERERS = {"_terminal", "_markdown", "_html", "_results_file", "_account"}
"""The modules that turn records into text: the terminal summary, markdown, HTML, the results
file and the failure text (pytest's short summary and the JUnit properties)."""


def _imported_report_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            if node.module:
                found.add(node.module.split(".")[0])
            else:
                found.update(alias.name for alias in node.names)
    return found


def test_no_renderer_imports_another_renderer() -> None:
    crossing = {
        name: sorted(_imported_report_modules(REPORT / f"{name}.py") & (RENDERERS - {name}))
        for name in sorted(RENDERERS)
    }
    assert {name: mods for name, mods in crossing.items() if mods} == {}


def test_the_shared_sentences_are_the_same_objects_in_every_renderer() -> None:
    from pytest_agent_eval._report import _format
    from pytest_agent_eval._report import _html as html
    from pytest_agent_eval._report import _markdown as markdown
    from pytest_agent_eval._report import _results_file as results_file
    from pytest_agent_eval._report import _terminal as terminal

    assert markdown.NOTHING_RAN is html.NOTHING_RAN is _format.NOTHING_RAN
    assert terminal.interrupted_lines is markdown.interrupted_lines is _format.interrupted_lines
    for module in (html, markdown, terminal, results_file):
        assert module.BASELINE_HEADER is _format.BASELINE_HEADER
        assert module.baseline_rows is _format.baseline_rows
