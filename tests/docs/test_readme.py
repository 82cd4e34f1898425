"""The README's newcomer commands, which cannot run here (they clone, make virtualenvs and
install), stay true: they install this package with extras it has, start a demo that exists,
and run the suite the way CI does."""

from __future__ import annotations

import os
import re
import tomllib

from snippets import ROOT, parse_page, project_extras

import pytest_agent_eval

README = ROOT / "README.md"


def _skipped_blocks() -> list[str]:
    return [b.text for b in parse_page(README) if b.lang == "bash" and b.directive == "skip"]


def test_the_install_line_installs_this_package_at_this_version() -> None:
    (install,) = [text for text in _skipped_blocks() if "git clone" in text]
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "pytest-agent-eval"
    # The block says which version a clone gives; it must be this one.
    (version,) = re.findall(r"This is version (\S+);", install)
    assert version == pytest_agent_eval.__version__
    # It installs the clone (the folder the clone command makes), not the index's 0.3.
    assert re.search(r"^git clone (?:<[^>]+>|\S+) pytest-agent-eval$", install, re.MULTILINE)
    assert re.search(r"^pip install \./pytest-agent-eval\s", install, re.MULTILINE)
    for extras in re.findall(r"pytest-agent-eval\[([\w,]+)\]", install):
        assert set(extras.split(",")) <= project_extras(), extras


def test_the_demo_line_installs_real_extras_and_runs_a_script_that_exists() -> None:
    (demo,) = [text for text in _skipped_blocks() if "run_demo.sh" in text]
    for extras in re.findall(r"\.\[([\w,]+)\]", demo):
        assert set(extras.split(",")) <= project_extras(), extras
    (script,) = re.findall(r"(examples/\S+/run_demo\.sh)", demo)
    assert (ROOT / script).is_file() and os.access(ROOT / script, os.X_OK), script


def test_the_suite_line_is_what_ci_runs() -> None:
    (suite,) = [text for text in _skipped_blocks() if "-m pytest" in text and "venv" in text]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").split("\n")
    assert suite.strip() in ci
    for extras in re.findall(r"\.\[([\w,]+)\]", suite):
        assert set(extras.split(",")) <= project_extras(), extras


def test_the_readme_links_every_docs_page() -> None:
    text = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\(docs/([\w-]+\.md)", text))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md", "contributing.md"}
    assert pages <= linked, f"README's documentation list lacks {sorted(pages - linked)}"
