"""The docs name no code host or registry where the reader should find this code: the site
config has no ``repo_url`` (it named the earlier package's repository, which is not this code)
and no page links an example into that repository; examples are named by their path in the
source tree."""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
_EARLIER_REPOSITORY = "github.com/datarootsio/pytest-agent-eval"


def test_the_site_config_names_no_repository() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    assert "repo_url" not in config and "repo_name" not in config and "edit_uri" not in config


def test_no_page_links_into_the_earlier_package_s_repository() -> None:
    pages = [ROOT / "README.md", ROOT / "mkdocs.yml", *sorted((ROOT / "docs").rglob("*.md"))]
    found = [
        f"{page.relative_to(ROOT)}:{n}"
        for page in pages
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if _EARLIER_REPOSITORY in line
    ]
    assert not found, f"links into the earlier package's repository: {found}"
