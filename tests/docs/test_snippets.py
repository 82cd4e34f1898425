"""Every code block of README.md and docs/*.md is run, or marked as output, a fragment or a copy.

The rules are in tests/docs/snippets.py and docs/contributing.md. One test per page builds the
page's scratch project and runs its blocks in a process of its own; the form tests check every
block's tag, marker and syntax (for Python 3.11) without running anything.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from snippets import (
    ROOT,
    Block,
    form_problems,
    page_plan,
    pages,
    parse_page,
    pip_install_problems,
    project_extras,
    run_page,
)

PAGES = pages()


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_blocks_are_tagged_marked_and_parse(page: Path) -> None:
    extras = project_extras()
    problems = [
        problem
        for block in parse_page(page)
        for problem in form_problems(block) + pip_install_problems(block, extras)
    ]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("page", PAGES, ids=_page_id)
def test_page_snippets_run(page: Path, tmp_path: Path) -> None:
    if not page_plan(page):
        pytest.skip(f"{_page_id(page)} has no block to run")

    status, output = run_page(page, tmp_path)

    assert status == 0, f"snippets of {_page_id(page)} failed:\n{output}"


# ---- the checker itself ------------------------------------------------------------------------


def _blocks(tmp_path: Path, markdown: str) -> list[Block]:
    page = tmp_path / "page.md"
    page.write_text(markdown, encoding="utf-8")
    return parse_page(page)


def test_a_block_without_a_tag_is_refused(tmp_path: Path) -> None:
    (block,) = _blocks(tmp_path, "text\n\n```\nx = 1\n```\n")
    assert "needs a language tag" in form_problems(block)[0]


def test_python_is_compiled_for_the_lowest_supported_version(tmp_path: Path) -> None:
    # The LiveKit guide once had this: a backslash inside an f-string expression, fine on 3.12.
    (block,) = _blocks(tmp_path, "```python\nx = f\"{'a\\\\w'}\"\n```\n")
    (problem,) = form_problems(block)
    assert "Python 3.11 cannot compile it" in problem


def test_markers_skip_syntax_and_file(tmp_path: Path) -> None:
    markdown = (
        "<!-- snippet: skip needs a LiveKit Cloud project -->\n```bash\nexit 1\n```\n\n"
        "<!-- snippet: syntax -->\n```yaml\n- run: pytest\n```\n\n"
        "<!-- snippet: skip -->\n```bash\nexit 1\n```\n\n"
        "<!-- snippet: file pyproject.toml -->\n```toml\n[project]\n```\n"
    )
    skip, syntax, bare_skip, copy = _blocks(tmp_path, markdown)
    assert (skip.directive, skip.argument) == ("skip", "needs a LiveKit Cloud project")
    assert form_problems(skip) == [] and form_problems(syntax) == []
    assert "needs a reason" in form_problems(bare_skip)[0]
    assert "differs from pyproject.toml" in form_problems(copy)[0]


def test_indented_blocks_in_lists_are_found(tmp_path: Path) -> None:
    (block,) = _blocks(tmp_path, "1. Build it:\n   ```bash\n   echo hi\n   ```\n")
    assert (block.lang, block.text, block.line) == ("bash", "echo hi\n", 2)


def test_a_path_comment_makes_a_project_file(tmp_path: Path) -> None:
    conftest, plain = _blocks(
        tmp_path, "```python\n# tests/conftest.py\nimport pytest\n```\n```python\nx = 1\n```\n"
    )
    assert conftest.path == "tests/conftest.py"
    assert plain.path is None


def test_pip_install_names_only_real_extras(tmp_path: Path) -> None:
    (block,) = _blocks(
        tmp_path, "```bash\npip install 'pytest-agent-eval[voice,nosuch]' numpy\n```\n"
    )
    (problem,) = pip_install_problems(block, project_extras())
    assert "'nosuch'" in problem


def test_a_failing_snippet_fails_its_page(tmp_path: Path) -> None:
    # The scripted rules and the transcript next to them must agree: a page whose transcript
    # expects a tool the agent does not call fails when its pytest command runs.
    page = tmp_path / "page.md"
    page.write_text(
        "```toml\n# pyproject.toml\n[tool.agent_eval]\nyaml_dirs = ['tests/evals']\n```\n\n"
        "```yaml\n# tests/evals/t.yaml\nid: t\nturns:\n  - user: hi\n    expect:\n"
        "      tool_calls_include: [book]\n```\n\n"
        "```python\n# tests/conftest.py\nimport pytest\n\n@pytest.fixture\n"
        "def llm_eval_agent():\n    return lambda history: 'hello'\n```\n\n"
        "```bash\npytest --agent-eval-live -q -p no:cacheprovider\n```\n",
        encoding="utf-8",
    )
    status, output = run_page(page, tmp_path)

    assert status == 1
    assert "FAIL docs" not in output
    assert "FAIL " in output and "expected tool calls not made: ['book']" in output
