"""The schema's verdicts in words: the shipped JSON Schema, and each validation error as one
message naming the file, line, field path, what was expected and (for a misspelt key) the
closest valid one."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from .._text import did_you_mean, short_repr
from ..errors import TranscriptError
from ._yaml import FieldPath, LineIndex, field_where, format_path

__all__ = [
    "short",
    "transcript_schema",
    "validate_schema",
    "yaml_type",
]


@cache
def transcript_schema() -> dict[str, Any]:
    """The transcript JSON Schema (draft 2020-12) shipped inside the package."""
    text = (
        resources.files("pytest_agent_eval").joinpath("_schema/transcript.json").read_text("utf-8")
    )
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(transcript_schema())


def validate_schema(
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
    validator: Any = None,
    hints: Mapping[str, str] | None = None,
) -> None:
    from jsonschema.exceptions import best_match

    errors = list((validator or _validator()).iter_errors(data))
    if not errors:
        return
    # Unknown keys are the most common mistake and the most fixable: report them first.
    unknown = [e for e in errors if e.validator == "additionalProperties"]
    error = unknown[0] if unknown else best_match(errors)
    raise TranscriptError(_describe(error, data, path, lines, hints))


def _describe(
    error: Any,
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
    hints: Mapping[str, str] | None = None,
) -> str:
    field: FieldPath = tuple(error.absolute_path)
    kind = error.validator
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = extra[0]
        target = (*field, key)
        return (
            f"{field_where(path, lines, target, data)}, {format_path(target)}: unknown field "
            f"{key!r}{did_you_mean(key, allowed)}. Allowed here: {', '.join(allowed)}"
        )
    where = f"{field_where(path, lines, field, data)}, {format_path(field)}"
    value = error.instance
    if kind == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        name = missing[0] if missing else error.message
        hint = {
            "id": "add `id: some_name`; it becomes the test name",
            "turns": "add a `turns:` list with at least one `- user: ...` entry",
            "user": (
                "every turn needs the user's words in `user:`, or, for a turn of keys alone, "
                "the keys in `dtmf:`"
            ),
            "rubric": "a judge needs a `rubric:` saying what a good reply does",
            "tool": "name the tool whose arguments to check in `tool:`",
            **(hints or {}),
        }.get(name, f"add '{name}'")
        return f"{where}: missing required field {name!r}; {hint}"
    if kind == "anyOf" and field and "tool_calls_args" in field:
        return (
            f"{where}: needs 'args' (deterministic check) or 'judge' (LLM-judged rubric); "
            "got neither"
        )
    if kind == "anyOf" and field and "tool_calls_outcome" in field:
        return (
            f"{where}: needs 'status' (ok, error, cancelled or refused), 'output_contains' or 'output_matches'; "
            "got none"
        )
    if kind == "minProperties":
        return f"{where}: is empty; give at least one check, e.g. `contains_any: [...]`"
    if kind == "minItems" and field == ("turns",):
        return f"{where}: 'turns' is empty; add at least one turn (`- user: ...`)"
    if kind == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        got = "nothing (an empty value)" if value is None else f"{yaml_type(value)} {short(value)}"
        return f"{where}: expected {_article(expected)}, got {got}" + _type_hint(
            field, expected, value
        )
    if kind in ("minimum", "maximum", "exclusiveMinimum"):
        if field and field[-1] == "threshold":
            return f"{where}: threshold must be between 0.0 and 1.0, got {value!r}"
        if field and field[-1] == "runs":
            if kind == "maximum":
                return f"{where}: runs must be at most {error.validator_value}, got {value!r}"
            return f"{where}: runs must be at least 1, got {value!r}"
        if field and field[-1] == "turn_timeout_s":
            return (
                f"{where}: turn_timeout_s must be a number of seconds > 0 and <= "
                f"3600, got {value!r}"
            )
        return f"{where}: {error.message}"
    if kind == "enum":
        choices = [str(c) for c in error.validator_value]
        return (
            f"{where}: {short(value)} is not one of {', '.join(choices)}"
            f"{did_you_mean(str(value), choices)}"
        )
    if kind == "minLength":
        if field and field[-1] == "user" and "dtmf" in _parent(data, field):
            return (
                f"{where}: must not be empty; for a turn of keys alone leave 'user:' out (the "
                "keys in 'dtmf:' are the turn)"
            )
        return f"{where}: must not be empty"
    if kind == "pattern":
        return (
            f"{where}: {short(value)} may hold letters, digits, '_', '.' and '+' only (a "
            "variant name becomes part of test ids, where '-' joins parts)"
        )
    return f"{where}: {error.message}"


def _parent(data: Any, field: FieldPath) -> Any:
    """The mapping holding ``field`` in ``data`` ({} when there is none)."""
    for key in field[:-1]:
        try:
            data = data[key]
        except (KeyError, IndexError, TypeError):
            return {}
    return data if isinstance(data, dict) else {}


def _article(word: str) -> str:
    names = {
        "object": "a mapping",
        "array": "a list",
        "string": "a string",
        "number": "a number",
        "integer": "an integer",
        "boolean": "true or false",
        "string or null": "a string or null",
    }
    return names.get(word, word)


def yaml_type(value: Any) -> str:
    if value is None:
        return "null"
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
    }.get(type(value), type(value).__name__)


def _type_hint(field: FieldPath, expected: str, value: Any = None) -> str:
    if expected == "array" and len(field) >= 2 and field[-2] == "expect":
        return '; write a list, e.g. `- "text"` on its own line or ["a", "b"]'
    if expected == "string" and isinstance(value, bool | int | float):
        return (
            f'; quote it to make it text: "{value}"'
            if not isinstance(value, bool)
            else (
                f'; quote it to make it text: "{str(value).lower()}" (YAML reads yes/no/true/false '
                "as booleans)"
            )
        )
    if expected == "object" and field and field[-1] == "expect":
        return "; `expect:` is a mapping of checks such as `reply_contains_any: [...]`"
    return ""


def short(value: Any, limit: int = 60) -> str:
    return short_repr(value, limit)
