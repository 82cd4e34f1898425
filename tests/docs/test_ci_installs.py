"""Every CI recipe installs this package the way the README does: from its source.

Issue 32: the sharded workflow installed ``pytest-agent-eval[livekit,xdist]`` by name (the
package index has the earlier 0.3.0, which has no shards), and the plain one installed it from
the earlier package's repository, which is not this code. A recipe is a workflow in
``examples/ci/``, a file ``init`` writes (``_scaffold/templates/``), or a CI step shown in the
docs (a YAML block with ``run:`` steps); each ``pip install`` of this package in it names a
folder (``./.pytest-agent-eval[...]``, ``./pytest-agent-eval``), never the name alone nor a
URL, with extras pyproject.toml defines; and a workflow checks that folder out before it
installs from it.
"""

from __future__ import annotations

import re
import shlex
from typing import Any

import pytest
import yaml
from snippets import ROOT, pages, parse_page, project_extras

WORKFLOWS = sorted((ROOT / "examples" / "ci").glob("*.yml"))
TEMPLATES = sorted((ROOT / "src" / "pytest_agent_eval" / "_scaffold" / "templates").iterdir())

_PIP = re.compile(r"\bpip3?\s+install\s+(?P<args>[^\n;&|]*)")
_FOLDER = re.compile(r"(?P<folder>\.|\.?/[\w.-]+(?:/[\w.-]+)*|\.{3,})/?(?:\[(?P<extras>[\w,]+)\])?")
"""A folder: ``.``, ``./name``, an absolute ``/path/to/name``, or dots (a message quoted with the
part that varies, the folder, left out as ``...``)."""


def installs(text: str) -> list[str]:
    """The requirements of every ``pip install`` in ``text`` that name this package (by name,
    URL or a folder of its source)."""
    found = []
    for match in _PIP.finditer(text):
        words = shlex.split(match.group("args"), comments=True)
        found += [w for w in words if not w.startswith("-") and _is_this_package(w)]
    return found


def _is_this_package(requirement: str) -> bool:
    # By name, by URL or by a folder named for it; a bare '.[extras]' is the user's project.
    return "agent-eval" in requirement or "agent_eval" in requirement


def problems(requirement: str) -> list[str]:
    """Why ``requirement`` does not install this package from its source, if it does not."""
    match = _FOLDER.fullmatch(requirement)
    if match is None:
        return [
            f"{requirement!r} installs by name or URL (the package index and the earlier "
            "package's repository have 0.3, not this code); install the checked-out source, "
            "as the README does: pip install './<folder>[extras]'"
        ]
    extras = set((match.group("extras") or "").split(",")) - {""}
    unknown = sorted(extras - project_extras())
    if unknown:
        return [f"{requirement!r} names extras pyproject.toml does not define: {unknown}"]
    return []


def folder_of(requirement: str) -> str:
    match = _FOLDER.fullmatch(requirement)
    assert match is not None
    return match.group("folder").removeprefix("./")


def _run_steps(document: Any) -> list[str]:
    """The ``run:`` of every step of a workflow, or of a list of steps (a docs fragment)."""
    if isinstance(document, dict) and "jobs" in document:
        steps = [s for job in document["jobs"].values() for s in job.get("steps", [])]
    elif isinstance(document, list):
        steps = document
    else:
        return []
    return [s["run"] for s in steps if isinstance(s, dict) and isinstance(s.get("run"), str)]


def _docs_ci_blocks() -> list[tuple[str, str]]:
    """(where, text) of every YAML block in the docs that holds CI steps."""
    found = []
    for page in pages():
        for block in parse_page(page):
            if block.lang != "yaml" or not re.search(r"^\s*-?\s*run:", block.text, re.M):
                continue
            found.append((f"{block.page}:{block.line}", block.text))
    return found


def _recipes() -> list[tuple[str, str]]:
    recipes = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in WORKFLOWS]
    recipes += [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in TEMPLATES]
    return recipes + _docs_ci_blocks()


def test_the_rule_catches_what_the_recipes_used_to_do() -> None:
    # The two installs of issue 32, and the forms the README and the recipes use.
    assert problems("pytest-agent-eval[livekit,xdist] @ git+https://github.com/o/pytest-agent-eval")
    assert problems("pytest-agent-eval[livekit,xdist]")
    assert problems("pytest-agent-eval")
    assert problems("./.pytest-agent-eval[livekit,no-such-extra]")
    for good in ("./.pytest-agent-eval[livekit,xdist]", "./pytest-agent-eval", ".[dev]", "."):
        assert problems(good) == [], good
    assert installs("python -m pip install './.pytest-agent-eval[xdist]' && pytest") == [
        "./.pytest-agent-eval[xdist]"
    ]
    assert installs("pip install -e '.[test]'") == []  # the user's own project
    assert installs("- run: pip install 'pytest-agent-eval[voice]'") == ["pytest-agent-eval[voice]"]


RECIPES = _recipes()


@pytest.mark.parametrize(("where", "text"), RECIPES, ids=[where for where, _ in RECIPES])
def test_every_recipe_installs_this_package_from_its_source(where: str, text: str) -> None:
    found = [(r, p) for r in installs(text) for p in problems(r)]
    assert found == [], f"{where}: " + "; ".join(p for _, p in found)


def test_the_workflows_install_the_folder_they_check_out() -> None:
    # A folder a workflow installs from exists on the runner only if a step put it there:
    # its checkout step, in the same job, before the install.
    assert WORKFLOWS
    for path in WORKFLOWS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for name, job in document["jobs"].items():
            checked_out = {"."}  # the project's own checkout
            for step in job["steps"]:
                if step.get("uses", "").startswith("actions/checkout@"):
                    checked_out.add((step.get("with") or {}).get("path", "."))
                for requirement in installs(step.get("run", "")):
                    assert folder_of(requirement) in checked_out, (
                        f"{path.name}, job {name}: installs {requirement!r} before any step "
                        "checks that folder out"
                    )
            assert any(installs(step.get("run", "")) for step in job["steps"]) or name == "plan"


def _doc_pages() -> list[tuple[str, str]]:
    paths = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in paths]


@pytest.mark.parametrize(("where", "text"), _doc_pages(), ids=[w for w, _ in _doc_pages()])
def test_no_page_installs_this_package_by_name(where: str, text: str) -> None:
    # Prose too: "Install: `pip install 'pytest-agent-eval[livekit]'`" gets the earlier 0.3.0
    # from the package index, a newcomer's first wrong turn. Inline code ends at its backtick.
    found = [(r, p) for r in installs(text.replace("`", "\n")) for p in problems(r)]
    assert found == [], f"{where}: " + "; ".join(p for _, p in found)
