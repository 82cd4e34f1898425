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
RUNNABLE_PAGES = [page for page in PAGES if page_plan(page)]
"""Pages with a block to run; the others (reference tables, prose) have only the form test."""


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


@pytest.mark.parametrize("page", RUNNABLE_PAGES, ids=_page_id)
def test_page_snippets_run(page: Path, tmp_path: Path) -> None:
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
    # The LiveKit guide once had this line: a backslash inside an f-string expression is fine
    # on 3.12 and a SyntaxError on 3.11.
    line = "Rule(r'what name', reply=lambda ctx: f\"It is under {ctx.recall(r'I am (\\w+)')}.\")"
    (block,) = _blocks(tmp_path, f"```python\n{line}\n```\n")
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


# The LiveKit guide once showed these rules beside its booking transcript: they pass no
# ``time`` to book_table and recall the name only from earlier messages, so the transcript's
# ``tool_calls_args`` cannot pass (the f-string is made 3.11-safe so only the mismatch is left).
_RULES_THAT_DO_NOT_FIT = """\
# tests/rules.py
from pytest_agent_eval.adapters.livekit import Rule, ScriptContext, ScriptedLLM, parse_number

NAME = r"I am (\\w+)"


def booking_args(ctx: ScriptContext) -> dict:
    return {"party_size": parse_number(ctx.group("party")), "name": ctx.recall(NAME)}


RULES = [
    Rule(r"table for (?P<party>\\w+)", tool="book_table", args=booking_args,
         reply="Booked: {output}."),
    Rule(r"(?P<diet>vegan|gluten)", tool="check_menu", args={"diet": "{diet}"},
         preamble="Let me check.", reply="We have {output}."),
    Rule(r"what name", reply=lambda ctx: f"It is under {ctx.recall(NAME)}."),
]
"""


def test_livekit_rules_that_do_not_satisfy_the_transcript_fail_the_page(tmp_path: Path) -> None:
    # The guide's own conftest, transcript and commands, with the rules swapped for the ones
    # it used to show: the page must fail where the transcript's check fails.
    guide = parse_page(ROOT / "docs" / "livekit.md")
    conftest, transcript, rules = (
        next(b for b in guide if b.path == path)
        for path in ("tests/conftest.py", "tests/evals/booking.yaml", "tests/rules.py")
    )
    command = next(b for b in guide if b.lang == "bash" and "pytest --agent-eval-live" in b.text)
    assert "time" in rules.text  # the guide's rules are the fixed ones
    blocks = [(conftest.lang, conftest.text), (transcript.lang, transcript.text)]
    blocks += [("python", _RULES_THAT_DO_NOT_FIT), ("bash", command.text)]
    page = tmp_path / "page" / "livekit.md"  # named so the guide's support files are used
    page.parent.mkdir()
    page.write_text("".join(f"```{lang}\n{text}```\n\n" for lang, text in blocks), "utf-8")

    status, output = run_page(page, tmp_path / "run")

    assert status == 1, output
    assert "FAIL " in output and "expect.tool_calls_args[0] (booking.yaml:" in output, output
