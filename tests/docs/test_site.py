"""The documentation site builds with warnings as errors, offline, and publishes what the docs
promise: the JSON Schema at the URL the ``yaml-language-server`` comments name, llms.txt at the
root, and an API reference entry for every public name."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import pytest_agent_eval
from pytest_agent_eval._schema import PACKAGED_SCHEMA

pytest.importorskip("mkdocs", reason="the docs extra is not installed")
pytest.importorskip("mkdocstrings", reason="the docs extra is not installed")

ROOT = Path(__file__).resolve().parents[2]
_SCHEMA_COMMENT = re.compile(r"yaml-language-server: \$schema=(https?://\S+)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    # Anything that tried to fetch would meet a closed port.
    env.update({name: "http://127.0.0.1:9" for name in ("HTTP_PROXY", "HTTPS_PROXY")})
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(folder)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return folder


def _site_url() -> str:
    # mkdocs.yml may hold python tags in other projects; ours is plain YAML.
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["site_url"]


def test_the_schema_is_published_where_the_comments_point(site: Path) -> None:
    texts = [
        ROOT / "README.md",
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "examples").rglob("*.yaml"),
    ]
    urls = {
        url for path in texts for url in _SCHEMA_COMMENT.findall(path.read_text(encoding="utf-8"))
    }
    assert urls, "no yaml-language-server comment found"
    for url in urls:
        assert url.startswith(_site_url()), url
        published = site / url.removeprefix(_site_url())
        assert published.is_file(), f"{url} is not in the site"
        # Each published schema (transcript.json, simulation.json) is the packaged one.
        packaged = PACKAGED_SCHEMA.with_name(published.name)
        assert json.loads(published.read_text(encoding="utf-8")) == json.loads(
            packaged.read_text(encoding="utf-8")
        )


def test_llms_txt_is_at_the_root(site: Path) -> None:
    assert (site / "llms.txt").read_text(encoding="utf-8") == (
        ROOT / "docs" / "llms.txt"
    ).read_text(encoding="utf-8")


def test_every_public_name_has_a_rendered_reference(site: Path) -> None:
    html = (site / "api-reference" / "index.html").read_text(encoding="utf-8")
    public = [name for name in pytest_agent_eval.__all__ if not name.startswith("__")]
    missing = [name for name in public if f'id="pytest_agent_eval.{name}"' not in html]
    assert not missing, f"the API reference lacks {missing}"


def test_every_page_is_built(site: Path) -> None:
    for page in (ROOT / "docs").glob("*.md"):
        built = site / ("index.html" if page.stem == "index" else f"{page.stem}/index.html")
        assert built.is_file(), f"{page.name} is not in the site"
