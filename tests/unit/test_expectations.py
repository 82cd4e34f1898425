"""The expectation registry is the one definition of ``expect:``: the schema, the docs table,
`Expect`, the loader and the evaluators all follow it."""

from __future__ import annotations

import asyncio
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

import pytest_agent_eval._expectations as registry
from pytest_agent_eval._expectations import (
    EXPECTATIONS,
    build_call_checks,
    build_evaluators,
    build_greeting_checks,
    build_result_checks,
    build_turn_checks,
    expect_defs,
    expect_keys,
    transcript_keys,
    turn_keys,
)
from pytest_agent_eval._loader import load_transcript_text, transcript_schema
from pytest_agent_eval._schema import (
    PACKAGED_SCHEMA,
    build_schema,
    expectations_table,
    reference_page,
    render_schema,
    replace_table,
)
from pytest_agent_eval._serialize import from_json
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import Expect, Transcript, Turn, TurnContext

ROOT = Path(__file__).resolve().parents[2]
REGENERATE = "stale: run `python -m pytest_agent_eval._schema` from the repository root"
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


def test_expect_has_exactly_one_field_per_registered_key_with_an_empty_default() -> None:
    fields = {f.name: f for f in dataclasses.fields(Expect)}
    assert set(fields) - {"evaluators"} == set(KEYS)
    assert len(KEYS) == len(expect_keys()), "a key is registered twice"
    for name, field in fields.items():
        default = field.default_factory() if callable(field.default_factory) else field.default
        assert default in ([], None, False), f"Expect.{name} must default to 'not checked'"


def test_expect_keeps_its_positional_order_and_new_fields_go_last() -> None:
    names = [f.name for f in dataclasses.fields(Expect)]
    assert names[:13] == [
        # the seed's order (Expect is constructed positionally)
        "evaluators",
        "judge",
        "tool_calls_include",
        "tool_calls_exclude",
        "tool_calls_ordered",
        "tool_calls_args",
        "reply_contains_any",
        "reply_contains_all",
        "reply_matches_any",
        "reply_matches_all",
        # added before the registry
        "heard_contains_any",
        "heard_contains_all",
        "max_latency_ms",
    ]


def test_every_module_of_the_package_is_registered_once() -> None:
    modules = {
        m.name.removeprefix("_")
        for m in pkgutil.iter_modules(registry.__path__)
        if m.name != "_base"
    }
    registered = [e.name for e in EXPECTATIONS]
    assert len(registered) == len(set(registered))
    assert modules == set(registered), "list every expectation module in EXPECTATIONS"
    for expectation in EXPECTATIONS:
        module = __import__(f"pytest_agent_eval._expectations._{expectation.name}", fromlist=["x"])
        assert module.EXPECTATION is expectation


def _load_expect(raw: dict[str, object]) -> Expect:
    text = yaml.safe_dump({"id": "t", "turns": [{"user": "hi", "expect": raw}]})
    return load_transcript_text(text, path=Path("t.yaml")).turns[0].expect


@pytest.mark.parametrize("name", sorted(KEYS))
def test_every_key_validates_loads_and_builds_an_evaluator(name: str) -> None:
    key = KEYS[name]
    assert key.description.endswith(".") and "description" not in key.schema
    expect = _load_expect({name: key.example})
    hint = typing.get_type_hints(Expect)[name]
    assert getattr(expect, name) == from_json(hint, key.example)
    assert getattr(expect, name) != getattr(Expect(), name)
    # A key that is set must be checked by something, or it would pass unchecked (alone,
    # tool_calls_ordered orders nothing: its check errors, saying so).
    family = next(e for e in EXPECTATIONS if key in e.keys)
    assert build_evaluators(_load_expect({k.name: k.example for k in family.keys}))
    assert build_evaluators(expect), f"{name} set alone builds no evaluator"


def test_tool_calls_ordered_without_tools_to_order_errors_instead_of_passing() -> None:
    (check,) = build_evaluators(_load_expect({"tool_calls_ordered": True}))
    verdict = asyncio.run(
        check.evaluate(TurnContext(user="hi", reply="ok", tool_calls=[], history=[]))
    )
    assert verdict.errored and not verdict.passed
    assert "names no tools to order" in verdict.reasoning
    assert "tool_calls_include" in verdict.reasoning
    assert not build_evaluators(_load_expect({"tool_calls_ordered": False}))


@pytest.mark.parametrize("name", sorted(k.name for k in transcript_keys()))
def test_every_top_level_key_validates_loads_and_builds_a_check(name: str) -> None:
    key = next(k for k in transcript_keys() if k.name == name)
    assert key.description.endswith(".") and "description" not in key.schema
    assert name in build_schema()["properties"]
    assert f"| `{name}` (top level) | {key.description} |" in expectations_table()
    text = yaml.safe_dump({"id": "t", name: key.example, "turns": [{"user": "hi"}]})
    transcript = load_transcript_text(text, path=Path("t.yaml"))
    field = next(f for f in dataclasses.fields(Transcript) if f.name == name)
    assert field.default is None, f"Transcript.{name} must default to 'not checked'"
    hint = typing.get_type_hints(Transcript)[name]
    assert getattr(transcript, name) == from_json(hint, key.example)
    # A top-level key checks what the agent said before turn 1, one whole call, or the whole
    # result.
    assert _top_level_checks(transcript), f"{name} set builds no check"
    assert not _top_level_checks(Transcript(id="t", turns=transcript.turns))


def _top_level_checks(transcript: Transcript) -> list[object]:
    return [
        *build_greeting_checks(transcript),
        *build_call_checks(transcript),
        *build_result_checks(transcript),
    ]


@pytest.mark.parametrize("name", sorted(k.name for k in turn_keys()))
def test_every_turn_level_key_validates_loads_and_builds_a_check(name: str) -> None:
    key = next(k for k in turn_keys() if k.name == name)
    assert key.description.endswith(".") and "description" not in key.schema
    assert name in build_schema()["$defs"]["turn"]["properties"]
    assert f"| `{name}` (turn level) | {key.description} |" in expectations_table()
    turns = [{"user": "hi", "audio": "a.wav"}, {"user": "ho", "audio": "b.wav", name: key.example}]
    transcript = load_transcript_text(
        yaml.safe_dump({"id": "t", "turns": turns}), path=Path("t.yaml")
    )
    field = next(f for f in dataclasses.fields(Turn) if f.name == name)
    assert field.default is None, f"Turn.{name} must default to 'not checked'"
    turn = transcript.turns[1]
    assert getattr(turn, name) == from_json(typing.get_type_hints(Turn)[name], key.example)
    assert build_turn_checks(turn), f"{name} set builds no check"
    assert build_evaluators(turn.expect, turn=turn), "the runner would not check it"
    assert not build_turn_checks(transcript.turns[0])


def test_definitions_are_shared_not_redefined() -> None:
    defs = expect_defs()
    assert {"judge", "tool_call_args"} <= set(defs)
    schema = build_schema()
    refs = {ref.split("/")[-1] for ref in _refs(schema)}
    assert refs <= set(schema["$defs"]), "a $ref points at nothing"


def _refs(node: object) -> list[str]:
    if isinstance(node, dict):
        found = [node["$ref"]] if "$ref" in node else []
        return found + [r for v in node.values() for r in _refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in _refs(v)]
    return []


def test_the_regex_check_declared_by_reply_text_runs_in_the_loader() -> None:
    text = textwrap.dedent(
        """\
        id: t
        turns:
          - user: hi
            expect:
              reply_matches_all:
                - ok
                - "BK-(\\\\d+"
        """
    )
    with pytest.raises(TranscriptError) as info:
        load_transcript_text(text, path=Path("t.yaml"))
    assert "t.yaml:7, transcript 't', turn 1, turns[0].expect.reply_matches_all[1]: " in str(
        info.value
    )
    assert "invalid regex 'BK-(\\d+'" in str(info.value)


def test_the_command_regenerates_and_checks(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "schema").mkdir(parents=True)
    (docs / "schema" / "transcript.json").write_text(render_schema(), encoding="utf-8")
    page = reference_page()
    stale = page.replace("| `judge` |", "| `judge` (old words) |")
    (docs / "yaml-reference.md").write_text(stale, encoding="utf-8")
    command = [sys.executable, "-m", "pytest_agent_eval._schema", "--root", str(tmp_path)]

    check = subprocess.run([*command, "--check"], capture_output=True, text=True)
    assert check.returncode == 1
    assert f"out of date: {docs / 'yaml-reference.md'}" in check.stdout
    assert "transcript.json" not in check.stdout

    write = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"rewritten: {docs / 'yaml-reference.md'}" in write.stdout
    assert (docs / "yaml-reference.md").read_text(encoding="utf-8") == page
    again = subprocess.run([*command, "--check"], capture_output=True, text=True)
    assert again.returncode == 0, again.stdout
