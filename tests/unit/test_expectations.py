"""The expectation registry is the one definition of ``expect:``: the schema, the docs table,
`Expect`, the loader and the evaluators all follow it."""

from __future__ import annotations

import dataclasses
import pkgutil
import subprocess
import sys
import textwrap
import typing
from pathlib import Path

import pytest
import yaml
from jsonschema import Draft202012Validator

import pytest_agent_eval.expectations as registry
from pytest_agent_eval._serialize import from_json
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.expectations import (
    EXPECTATIONS,
    build_evaluators,
    build_greeting_checks,
    expect_defs,
    expect_keys,
    transcript_keys,
)
from pytest_agent_eval.loader import load_transcript_text, transcript_schema
from pytest_agent_eval.models import Expect, Transcript
from pytest_agent_eval.schema import (
    PACKAGED_SCHEMA,
    build_schema,
    expectations_table,
    reference_page,
    render_schema,
    replace_table,
)

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "stale: run `python -m pytest_agent_eval.schema` from the repository root"
KEYS = {key.name: key for key in expect_keys()}


def test_shipped_and_published_schemas_are_what_the_registry_generates() -> None:
    rendered = render_schema()
    assert PACKAGED_SCHEMA.read_text(encoding="utf-8") == rendered, REGENERATE
    published = ROOT / "docs" / "schema" / "transcript.json"
    assert published.read_text(encoding="utf-8") == rendered, REGENERATE
    assert transcript_schema() == build_schema()  # what the loader validates against
    Draft202012Validator.check_schema(build_schema())


def test_the_yaml_reference_is_what_the_registry_generates() -> None:
    text = (ROOT / "docs" / "yaml-reference.md").read_text(encoding="utf-8")
    assert text == reference_page(), REGENERATE
    assert expectations_table() in text
    assert replace_table(text) == text
    for key in expect_keys():
        assert f"| `{key.name}` | {key.description} |" in expectations_table()


def test_the_yaml_reference_has_every_field_and_description_once() -> None:
    page = reference_page()
    schema = build_schema()
    sections = [("transcript", schema), *schema["$defs"].items()]
    top_level = {key.name for key in transcript_keys()}
    described = 0
    for section, obj in sections:
        assert page.count(f"{{#{section}}}") == 1, section
        body = page.split(f"{{#{section}}}", 1)[1].split("\n## ", 1)[0]
        for name, prop in obj.get("properties", {}).items():
            rows = [row for row in body.split("\n") if row.startswith(f"| `{name}`")]
            assert len(rows) == 1, (section, name, rows)
            elsewhere = section == "transcript" and name in top_level  # in the expect table
            if "description" in prop and not elsewhere:
                assert rows[0].endswith(f" {prop['description']} |"), (section, name)
                described += 1
        if "description" in obj:
            assert page.count(obj["description"]) == 1, section
    assert described > 40
    # Expectations are described once on the page, top-level ones (greeting) included.
    for key in (*expect_keys(), *transcript_keys()):
        assert page.count(key.description) == 1, key.name


def test_the_command_regenerates_and_checks(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "schema").mkdir(parents=True)
    (docs / "schema" / "transcript.json").write_text(render_schema(), encoding="utf-8")
    page = reference_page()
    stale = page.replace("| `judge` |", "| `judge` (old words) |")
    (docs / "yaml-reference.md").write_text(stale, encoding="utf-8")
    command = [sys.executable, "-m", "pytest_agent_eval.schema", "--root", str(tmp_path)]

    check = subprocess.run([*command, "--check"], capture_output=True, text=True)
    assert check.returncode == 1
    assert f"out of date: {docs / 'yaml-reference.md'}" in check.stdout
    assert "transcript.json" not in check.stdout

    write = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"rewritten: {docs / 'yaml-reference.md'}" in write.stdout
    assert (docs / "yaml-reference.md").read_text(encoding="utf-8") == page
    again = subprocess.run([*command, "--check"], capture_output=True, text=True)
    assert again.returncode == 0, again.stdout
