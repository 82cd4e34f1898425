"""The README's install lines, which cannot run here (they clone and install), stay true: they
install this package, at this version, with extras it has; and the README links every docs
page. (tests/unit/test_readme.py checks the demo script and the suite line CI runs.)"""

from __future__ import annotations

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


def test_the_demo_line_installs_real_extras() -> None:
    # tests/unit/test_readme.py checks its script and the suite line CI runs.
    (demo,) = [text for text in _skipped_blocks() if "run_demo.sh" in text]
    for extras in re.findall(r"\.\[([\w,]+)\]", demo):
        assert set(extras.split(",")) <= project_extras(), extras


def test_the_readme_links_every_docs_page() -> None:
    text = README.read_text(encoding="utf-8")
    linked = set(re.findall(r"\(docs/([\w-]+\.md)", text))
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md", "contributing.md"}
    assert pages <= linked, f"README's documentation list lacks {sorted(pages - linked)}"
