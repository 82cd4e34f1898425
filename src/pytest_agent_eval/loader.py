"""YAML transcripts in, validated `Transcript` objects out.

Validation happens once, here, against the JSON Schema shipped in the package, plus the checks
a schema cannot express: duplicate keys here, and every problem of the built transcript
(`pytest_agent_eval._problems.transcript_problems`: regexes that must compile, pause markers,
conditions, interruptions), which the runner lists for a Python-built transcript too. Every problem becomes a single `TranscriptError` whose message names the
file, the line, the field path and, for a misspelt key, the closest valid one. ``expect:`` keys
are built into `Expect` by a loop over the expectation registry (`pytest_agent_eval.expectations`).
"""

from __future__ import annotations

import json
import re
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from ._problems import transcript_problems
from ._serialize import from_json
from ._text import did_you_mean, short_repr
from .conditions import (
    VARIANT_NAME_PATTERN,
    ConditionProblem,
    parse_conditions,
)
from .errors import TranscriptError
from .expectations import expect_keys, transcript_keys, turn_keys
from .models import AudioCondition, Case, Expect, Transcript, Turn, Variant, VoiceSettings

__all__ = [
    "MAX_YAML_NODES",
    "TRANSCRIPT_SUFFIXES",
    "Subject",
    "YamlDocument",
    "find_transcript_files",
    "is_ignored_file",
    "iter_audio_paths",
    "load_transcript_file",
    "load_transcript_text",
    "load_transcripts",
    "read_yaml_document",
    "transcript_schema",
]

TRANSCRIPT_SUFFIXES = (".yaml", ".yml")

_Path = tuple[str | int, ...]

Presets = Mapping[str, Sequence[AudioCondition]]
"""Named lists of audio conditions (``[tool.agent_eval.conditions]`` and the built-in ones)."""


@cache
def transcript_schema() -> dict[str, Any]:
    """The transcript JSON Schema (draft 2020-12) shipped inside the package."""
    text = (
        resources.files("pytest_agent_eval").joinpath("schema/transcript.json").read_text("utf-8")
    )
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(transcript_schema())


def is_ignored_file(path: Path) -> bool:
    """Files whose name starts with ``_`` or ``.`` are never collected (shared snippets)."""
    return path.name.startswith(("_", "."))


def find_transcript_files(dirs: Iterable[Path]) -> list[Path]:
    """Every ``*.yaml`` / ``*.yml`` under each folder (recursive), sorted, without duplicates.

    A path that is itself a YAML file is returned as is. Missing folders yield nothing; the
    caller decides whether that is an error.
    """
    found: set[Path] = set()
    for base in dirs:
        base = Path(base)
        if base.is_file():
            if base.suffix in TRANSCRIPT_SUFFIXES:
                found.add(base.resolve())
            continue
        if not base.is_dir():
            continue
        for path in base.rglob("*"):
            if path.suffix in TRANSCRIPT_SUFFIXES and path.is_file() and not is_ignored_file(path):
                found.add(path.resolve())
    return sorted(found)


def load_transcripts(
    paths: Sequence[Path],
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> list[Transcript]:
    """Load several files, rejecting an ``id`` used twice.

    Raises:
        TranscriptError: For the first invalid file or duplicated id.
    """
    seen: dict[str, Path] = {}
    out: list[Transcript] = []
    for path in paths:
        transcript = load_transcript_file(
            path,
            default_threshold=default_threshold,
            default_runs=default_runs,
            presets=presets,
            audio_roots=audio_roots,
        )
        if transcript.id in seen:
            raise duplicate_id_error(transcript, seen[transcript.id])
        seen[transcript.id] = path
        out.append(transcript)
    return out


def duplicate_id_error(transcript: Transcript, first: Path) -> TranscriptError:
    """The error for an ``id`` already used by another file."""
    where = f"{transcript.path}:{transcript.line}" if transcript.line else f"{transcript.path}"
    return TranscriptError(
        f"{where}: id {transcript.id!r} is already used by {first}; "
        "transcript ids must be unique because they name the tests"
    )


def load_transcript_file(
    path: Path,
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> Transcript:
    """Read and validate one YAML transcript.

    ``default_threshold`` and ``default_runs`` (from ``[tool.agent_eval]``) apply when the
    file does not set them; ``presets`` are the named audio conditions variants and
    ``conditions:`` may use (default: the built-in ones). ``audio:`` paths must resolve inside
    one of ``audio_roots`` (default: the folder of the nearest pyproject.toml above the file,
    else the file's folder).

    Raises:
        TranscriptError: With file, line, field path and a hint.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read transcript: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    return load_transcript_text(
        text,
        path=path.resolve(),
        default_threshold=default_threshold,
        default_runs=default_runs,
        presets=presets,
        audio_roots=audio_roots,
    )


def load_transcript_text(
    text: str,
    *,
    path: Path,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> Transcript:
    """Validate YAML ``text`` as a transcript; ``path`` names it and anchors ``audio:``,
    which must resolve inside ``audio_roots`` (see `load_transcript_file`)."""
    node, data = _parse(text, path)
    lines = _LineIndex.build(node)
    if not isinstance(data, dict) or not ({"id", "turns"} & set(data)):
        shape = "empty" if data is None else _yaml_type(data)
        raise TranscriptError(
            f"{path}: this YAML file is not a transcript (it is {shape} without 'id' and "
            "'turns' keys). Transcripts need 'id' and 'turns'; move other YAML files out of "
            "yaml_dirs, or start their name with '_' so they are not collected"
        )
    roots = tuple(audio_roots) if audio_roots is not None else (_project_folder(path),)
    if "cases" in data and isinstance(data.get("turns"), list):
        return _load_dataset(data, path, lines, default_threshold, default_runs, presets, roots)
    return _load_one(data, path, lines, default_threshold, default_runs, presets, roots)


def _load_one(
    data: dict[str, Any],
    path: Path,
    lines: _LineIndex,
    default_threshold: float,
    default_runs: int,
    presets: Presets | None,
    roots: Sequence[Path],
) -> Transcript:
    _validate_schema(data, path, lines)
    return _checked_build(data, path, lines, default_threshold, default_runs, presets, roots)


def _checked_build(
    data: dict[str, Any],
    path: Path,
    lines: _LineIndex,
    default_threshold: float,
    default_runs: int,
    presets: Presets | None,
    roots: Sequence[Path],
    *,
    audio_to_come: bool = False,
) -> Transcript:
    """The `Transcript` of data the schema already accepted, then every check beyond the
    schema (`transcript_problems`: regexes, pause markers, conditions, interruptions), the
    first problem raised with file, line and field; audio inside the project is checked as
    the turns are built. ``audio_to_come``: turns with audio will be added as it runs (a
    simulated caller speaks), so conditions need no written audio turn."""
    audio = _AudioConditions.read(data, path, lines, presets)
    transcript = _build(data, path, lines, default_threshold, default_runs, audio, roots)
    for found in transcript_problems(transcript, audio_to_come=audio_to_come):
        raise found.in_yaml(_where(path, lines, found.at, data), _format_path(found.at))
    return transcript


# --------------------------------------------------------------------------------------------
# Datasets: one transcript over a table of cases
# --------------------------------------------------------------------------------------------

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``{field}``, or ``{{`` / ``}}`` for a literal brace. Only identifiers are fields, so a
regex's ``\\d{3}`` stays as it is."""

_CASE_ID = re.compile(VARIANT_NAME_PATTERN)


def _load_dataset(
    data: dict[str, Any],
    path: Path,
    lines: _LineIndex,
    default_threshold: float,
    default_runs: int,
    presets: Presets | None,
    roots: Sequence[Path],
) -> Transcript:
    """A transcript with ``cases:``: each case's turns filled in and validated as a transcript
    of its own, so a bad value names its case. The template keeps the first case's turns."""
    rows = _read_cases(data, path, lines, roots)
    cases: list[Case] = []
    first: Transcript | None = None
    for case_id, source, fields in rows:
        try:
            turns = [_fill(turn, fields, (index,)) for index, turn in enumerate(data["turns"])]
        except _MissingField as exc:
            field: _Path = ("turns", *exc.at)
            known = ", ".join(sorted(fields)) or "(none)"
            raise TranscriptError(
                f"{_where(path, lines, field, data)}, {_format_path(field)}: {{{exc.name}}} "
                f"names no field of case {case_id!r} ({source}){did_you_mean(exc.name, fields)}; "
                f"its fields: {known} (write {{{{ and }}}} for a literal brace)"
            ) from None
        try:
            filled = _load_one(
                {**data, "turns": turns},
                path,
                lines,
                default_threshold,
                default_runs,
                presets,
                roots,
            )
        except TranscriptError as exc:
            raise TranscriptError(f"{exc} (in case {case_id!r}, {source})") from None
        first = first or filled
        cases.append(Case(id=case_id, fields=dict(fields), turns=filled.turns, source=source))
    assert first is not None  # _read_cases refuses an empty table
    first.cases = cases
    return first


class _MissingField(Exception):
    def __init__(self, at: tuple[Any, ...], name: str) -> None:
        super().__init__(name)
        self.at, self.name = at, name


def _fill(value: Any, fields: Mapping[str, Any], at: tuple[Any, ...]) -> Any:
    """``value`` (a turn, or part of one) with ``{field}`` replaced by the case's values. A
    string that is exactly one placeholder takes the value as it is (a JSONL number stays a
    number); inside text a value is written with str(). ``audio``, ``conditions`` and
    ``interrupt`` are left alone."""
    if isinstance(value, dict):
        return {
            k: v
            if k in ("audio", "conditions", "interrupt") and len(at) == 1
            else _fill(v, fields, (*at, k))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_fill(v, fields, (*at, i)) for i, v in enumerate(value)]
    if not isinstance(value, str):
        return value

    def field_value(name: str) -> Any:
        if name not in fields:
            raise _MissingField(at, name)
        return fields[name]

    whole = _PLACEHOLDER.fullmatch(value)
    if whole is not None and whole.group(1) is not None:
        found = field_value(whole.group(1))
        return found if at[-1] != "user" else str(found)

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group(0)[0]
        return str(field_value(match.group(1)))

    return _PLACEHOLDER.sub(replace, value)


def _read_cases(
    data: Mapping[str, Any], path: Path, lines: _LineIndex, roots: Sequence[Path]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The rows of ``cases:`` as (case id, where it came from, fields), ids checked."""
    value = data["cases"]
    where = f"{_where(path, lines, ('cases',), data)}, cases"
    if isinstance(value, str):
        rows = _read_case_file(value, path, where, roots)
    elif isinstance(value, list) and value:
        rows = []
        for index, row in enumerate(value):
            if not isinstance(row, dict):
                raise TranscriptError(
                    f"{where}[{index}]: a case is a mapping of field: value, got "
                    f"{_yaml_type(row)} {_short(row)}"
                )
            rows.append((f"{path}:{lines.line(('cases', index)) or '?'} (cases[{index}])", row))
    else:
        raise TranscriptError(
            f"{where}: expected a list of cases (mappings of field: value) or the path of a "
            f".csv or .jsonl file next to this YAML, got {_yaml_type(value)} {_short(value)}"
        )
    out: list[tuple[str, str, dict[str, Any]]] = []
    seen: dict[str, str] = {}
    for number, (source, row) in enumerate(rows, start=1):
        raw_id = row.get("id")
        case_id = f"case{number}" if raw_id in (None, "") else str(raw_id)
        if not _CASE_ID.match(case_id):
            raise TranscriptError(
                f"{source}: case id {case_id!r} may hold letters, digits, '_', '.' and '+' "
                "only (it becomes part of the test id, where '-' joins parts); e.g. "
                f"{re.sub(r'[^A-Za-z0-9_.+]+', '_', case_id)!r}"
            )
        if case_id in seen:
            raise TranscriptError(
                f"{source}: case id {case_id!r} is used twice (also {seen[case_id]}); case ids "
                "name the tests, so each must be unique"
            )
        seen[case_id] = source
        out.append((case_id, source, row))
    return out


MAX_CASES = 100_000
"""Most cases one transcript may have (each is a test)."""


def _read_case_file(
    name: str, path: Path, where: str, roots: Sequence[Path]
) -> list[tuple[str, dict[str, Any]]]:
    """The rows of a CSV (header row of field names) or JSONL (one object a line) file,
    relative to the YAML file and inside the project, each with ``file:line``."""
    import csv

    file = (path.parent / name).resolve()
    allowed = [Path(root).resolve() for root in roots]
    if not any(file == root or root in file.parents for root in allowed):
        raise TranscriptError(
            f"{where}: {name!r} resolves to {file}, outside the project "
            f"({', '.join(map(str, allowed))}); case files must live inside the project"
        )
    suffix = file.suffix.lower()
    if suffix not in (".csv", ".jsonl"):
        raise TranscriptError(f"{where}: {name!r}: a case file is .csv or .jsonl")
    try:
        text = file.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise TranscriptError(
            f"{where}: case file {name!r} not found (looked for {file}; the path is relative "
            "to this YAML file)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TranscriptError(f"{where}: case file {file} cannot be read: {exc}") from None
    rows: list[tuple[str, dict[str, Any]]] = []
    if suffix == ".jsonl":
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise TranscriptError(f"{file}:{number}: not a JSON object: {exc}") from None
            if not isinstance(row, dict):
                raise TranscriptError(
                    f"{file}:{number}: each line is one case, a JSON object of field: value; "
                    f"got {_short(row)}"
                )
            rows.append((f"{file}:{number}", row))
    else:
        reader = csv.reader(text.splitlines())
        try:
            header = next(reader, None)
            if not header or not any(h.strip() for h in header):
                raise TranscriptError(
                    f"{file}:1: a case CSV starts with a header row naming the fields"
                )
            header = [h.strip() for h in header]
            for blank in (i for i, h in enumerate(header) if not h):
                raise TranscriptError(f"{file}:1: column {blank + 1} of the header has no name")
            for duplicate in (h for i, h in enumerate(header) if h in header[:i]):
                raise TranscriptError(f"{file}:1: column {duplicate!r} is named twice")
            for values in reader:
                number = reader.line_num
                if not any(v.strip() for v in values):
                    continue
                if len(values) != len(header):
                    raise TranscriptError(
                        f"{file}:{number}: {len(values)} value(s) for the {len(header)} "
                        f"column(s) of the header ({', '.join(header)})"
                    )
                rows.append((f"{file}:{number}", dict(zip(header, values, strict=True))))
        except csv.Error as exc:
            raise TranscriptError(f"{file}:{reader.line_num}: not valid CSV: {exc}") from None
    if not rows:
        raise TranscriptError(f"{where}: case file {file} has no cases")
    if len(rows) > MAX_CASES:
        raise TranscriptError(
            f"{where}: case file {file} has {len(rows)} cases; at most {MAX_CASES}"
        )
    return rows


def _project_folder(path: Path) -> Path:
    """The folder of the nearest pyproject.toml above ``path``, else ``path``'s folder."""
    folder = path.resolve().parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return folder


# --------------------------------------------------------------------------------------------
# YAML with line numbers
# --------------------------------------------------------------------------------------------


# libyaml's C parser when present: collection parses every transcript, so it matters.
_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


MAX_YAML_NODES = 100_000
"""Most values a transcript may hold with its aliases expanded. A real transcript has a few
hundred; a "billion laughs" file of 400 bytes expands to billions and would hang collection."""


class _NodeProblem(Exception):
    """A problem found in the node tree, at a place in the file."""

    def __init__(self, message: str, mark: Any) -> None:
        super().__init__(message)
        self.message = message
        self.mark = mark


def _parse(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
    """Parse once: the node tree (for line numbers) and the data built from it."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        if node is not None:
            _check_size(node)
            _check_nodes(node)
        data = loader.construct_document(node) if node is not None else None
    except _NodeProblem as exc:
        where = f"{path}:{exc.mark.line + 1}" if exc.mark is not None else str(path)
        raise TranscriptError(f"{where}: {exc.message}") from None
    except RecursionError:
        raise TranscriptError(f"{path}: the YAML is nested too deeply to be a transcript") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = exc.problem or exc.context or "invalid YAML"
        if problem.startswith("duplicate key"):
            raise TranscriptError(f"{where}: {problem} ({exc.context}); keep only one") from exc
        context = ""
        if exc.context and exc.problem:
            started = exc.context_mark
            at = (
                f" at line {started.line + 1}"
                if started is not None and started is not mark
                else ""
            )
            context = f" ({exc.context}{at})"
        # "invalid YAML at line N": the earlier package's words, which CI logs are searched for.
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        fix = _yaml_fix(problem, exc.context or "", mark, exc.context_mark, text)
        raise TranscriptError(f"{where}: invalid YAML{at}: {problem}{context}; {fix}") from exc
    except yaml.YAMLError as exc:
        raise TranscriptError(f"{path}: invalid YAML: {exc}") from exc
    finally:
        loader.dispose()
    return node, data


def _yaml_fix(problem: str, context: str, mark: Any, started: Any, text: str) -> str:
    """What to do about a YAML syntax error, said beside YAML's own words: the fix for the
    mistakes transcripts are known to make (a regex's backslash in double quotes, a tab), else
    where to look."""
    lines = text.splitlines()
    line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
    column = mark.column if mark is not None else 0
    if "unknown escape" in problem:
        escape = line[column : column + 2] if line[column : column + 1] == "\\" else "\\d"
        quoted = _double_quoted_at(lines, started) or f'"{escape}"'
        inner = quoted[1:-1]
        single = "'" + inner.replace("'", "''") + "'"
        doubled = '"' + inner.replace("\\", "\\\\") + '"'
        return (
            f"inside double quotes a backslash starts an escape, and {escape} is not one: write "
            f"{doubled} (each backslash doubled) or use single quotes, in which a backslash is "
            f"just a backslash: {single}"
        )
    if "tab" in problem or line[column : column + 1] == "\t":
        return (
            f"there is a tab at line {mark.line + 1 if mark is not None else '?'}: YAML indents "
            "with spaces, never tabs; replace the tab with spaces"
        )
    if "cannot start any token" in problem and line[column : column + 1]:
        return f"a plain value cannot start with {line[column]!r}: put the value in quotes"
    if "mapping values are not allowed" in problem:
        return (
            "a value holds ': ' (put the value in quotes), or this line is indented deeper than "
            "the key it belongs to (align it)"
        )
    if "quoted scalar" in context and "end of stream" in problem:
        return "a quoted string is never closed: add its closing quote"
    return (
        "check indentation (spaces, the same for each item of a list) and quoting (quote "
        "strings containing ': ' or '#'; inside single quotes write ' as '')"
    )


def _double_quoted_at(lines: list[str], started: Any) -> str | None:
    """The double-quoted scalar that starts at ``started``, when it ends on the same line."""
    if started is None or started.line >= len(lines):
        return None
    line = lines[started.line]
    if line[started.column : started.column + 1] != '"':
        return None
    end = started.column + 1
    while end < len(line):
        if line[end] == "\\":
            end += 2
            continue
        if line[end] == '"':
            return str(line[started.column : end + 1])
        end += 1
    return None


_STR_TAG = "tag:yaml.org,2002:str"
_YAML11_SURPRISES = ("tag:yaml.org,2002:timestamp",)
_CORE = "tag:yaml.org,2002:"
_PLAIN_TAGS = frozenset(
    _CORE + name for name in ("str", "int", "float", "bool", "null", "seq", "map", "merge")
) | frozenset(_YAML11_SURPRISES)
_NOT_FINITE = re.compile(r"^[-+]?\.(?:nan|NaN|NAN|inf|Inf|INF)$")


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_size(root: yaml.Node) -> None:
    """Refuse a tree whose aliases expand past `MAX_YAML_NODES` values, or refer to themselves.

    Shared nodes are counted once per use but visited once (sizes are remembered), so the
    check itself stays fast on exactly the files it refuses.
    """
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        key = id(node)
        if finished:
            open_nodes.discard(key)
            size = 1 + sum(sizes[id(child)] for child in _children(node))
            if size > MAX_YAML_NODES:
                raise _NodeProblem(
                    f"the YAML expands to more than {MAX_YAML_NODES:,} values through its "
                    "aliases (*name); a transcript never needs that many, so aliases are "
                    "bounded: write the values out, or split the file",
                    node.start_mark,
                )
            sizes[key] = size
            continue
        if key in sizes:
            continue
        if key in open_nodes:
            raise _NodeProblem(
                "an alias (*name) refers to a value that contains it; a transcript cannot be "
                "recursive",
                node.start_mark,
            )
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in sizes)


def _shown_tag(tag: str) -> str:
    return "!!" + tag.removeprefix(_CORE) if tag.startswith(_CORE) else tag


def _check_nodes(root: yaml.Node) -> None:
    """Reject duplicate keys, and read YAML 1.1's surprising scalars as the text they look like.

    Also refuse YAML tags (``!!python/object``, ``!!binary``, ``!custom``: a transcript holds
    plain data only) and non-finite numbers (``.nan`` passes every range check of the schema).
    YAML silently keeps the last of two equal keys; a transcript author never means that.
    Unquoted ``2024-05-01`` would become a date and ``10:30`` the number 630 (base 60); in a
    transcript (tool arguments, expected text) they always mean the text, as in YAML 1.2.
    """
    stack = [root]
    seen_nodes: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen_nodes:  # an alias: its value was checked where it was defined
            continue
        seen_nodes.add(id(node))
        if node.tag not in _PLAIN_TAGS:
            raise _NodeProblem(
                f"YAML tags are not allowed in transcripts (found {_shown_tag(node.tag)}); "
                "write plain values: text, numbers, true/false, lists and mappings",
                node.start_mark,
            )
        if isinstance(node, yaml.ScalarNode):
            if not node.style and node.tag.endswith(":float") and _NOT_FINITE.match(node.value):
                raise _NodeProblem(
                    f"{node.value} is not a number a transcript can use (NaN and infinity "
                    "never compare as a check expects); write a finite number",
                    node.start_mark,
                )
            if not node.style and (  # plain (unquoted) scalars only
                node.tag in _YAML11_SURPRISES
                or (node.tag.endswith((":int", ":float")) and ":" in node.value)
            ):
                node.tag = _STR_TAG
        elif isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, value_node in node.value:
                key = getattr(key_node, "value", None)
                if isinstance(key, str) and key in seen:
                    raise yaml.MarkedYAMLError(
                        context=f"key {key!r} first given on line {seen[key] + 1}",
                        problem=f"duplicate key {key!r}",
                        problem_mark=key_node.start_mark,
                    )
                seen[key] = key_node.start_mark.line
                stack.append(value_node)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)


Subject = Callable[[Sequence[str | int], Mapping[str, Any]], list[str]]
"""What a field belongs to, for messages: ``(field, data) -> ["transcript 'booking'", "turn 2"]``
(a transcript's); other formats built on the loader name their own (``simulation 'refund'``,
``scenario 'Book a room'``)."""


def _transcript_subject(field: Sequence[str | int], data: Mapping[str, Any]) -> list[str]:
    parts = []
    tid = data.get("id")
    if isinstance(tid, str):
        parts.append(f"transcript {tid!r}")
    if len(field) >= 2 and field[0] == "turns" and isinstance(field[1], int):
        parts.append(f"turn {field[1] + 1}")
    return parts


@dataclass
class _LineIndex:
    """Field path -> 1-based line, for pointing users at the right place."""

    lines: dict[_Path, int]
    subject: Subject = field(default=_transcript_subject)
    """Names what a field belongs to (`Subject`)."""

    @classmethod
    def build(cls, root: yaml.Node | None, subject: Subject | None = None) -> _LineIndex:
        lines: dict[_Path, int] = {}

        def walk(node: yaml.Node, path: _Path) -> None:
            lines.setdefault(path, node.start_mark.line + 1)
            if isinstance(node, yaml.MappingNode):
                for key_node, value_node in node.value:
                    child = (*path, str(key_node.value))
                    lines[child] = key_node.start_mark.line + 1
                    walk(value_node, child)
            elif isinstance(node, yaml.SequenceNode):
                for i, item in enumerate(node.value):
                    walk(item, (*path, i))

        if root is not None:
            walk(root, ())
        return cls(lines, subject or _transcript_subject)

    def line(self, path: _Path) -> int | None:
        """The line of ``path`` or of its nearest ancestor."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return None


def _format_path(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _where(path: Path, lines: _LineIndex, field: _Path, data: Mapping[str, Any]) -> str:
    line = lines.line(field)
    head = f"{path}:{line}" if line else str(path)
    return ", ".join([head, *lines.subject(field, data)])


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


def _validate_schema(
    data: dict[str, Any],
    path: Path,
    lines: _LineIndex,
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
    lines: _LineIndex,
    hints: Mapping[str, str] | None = None,
) -> str:
    field: _Path = tuple(error.absolute_path)
    kind = error.validator
    if kind == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        key = extra[0]
        target = (*field, key)
        return (
            f"{_where(path, lines, target, data)}, {_format_path(target)}: unknown field "
            f"{key!r}{did_you_mean(key, allowed)}. Allowed here: {', '.join(allowed)}"
        )
    where = f"{_where(path, lines, field, data)}, {_format_path(field)}"
    value = error.instance
    if kind == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        name = missing[0] if missing else error.message
        hint = {
            "id": "add `id: some_name`; it becomes the test name",
            "turns": "add a `turns:` list with at least one `- user: ...` entry",
            "user": "every turn needs the user's words in `user:`",
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
            f"{where}: needs 'status' (ok or error), 'output_contains' or 'output_matches'; "
            "got none"
        )
    if kind == "minProperties":
        return f"{where}: is empty; give at least one check, e.g. `contains_any: [...]`"
    if kind == "minItems" and field == ("turns",):
        return f"{where}: 'turns' is empty; add at least one turn (`- user: ...`)"
    if kind == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        got = (
            "nothing (an empty value)" if value is None else f"{_yaml_type(value)} {_short(value)}"
        )
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
            f"{where}: {_short(value)} is not one of {', '.join(choices)}"
            f"{did_you_mean(str(value), choices)}"
        )
    if kind == "minLength":
        return f"{where}: must not be empty"
    if kind == "pattern":
        return (
            f"{where}: {_short(value)} may hold letters, digits, '_', '.' and '+' only (a "
            "variant name becomes part of test ids, where '-' joins parts)"
        )
    return f"{where}: {error.message}"


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


def _yaml_type(value: Any) -> str:
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


def _type_hint(field: _Path, expected: str, value: Any = None) -> str:
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


def _short(value: Any, limit: int = 60) -> str:
    return short_repr(value, limit)


@dataclass
class _AudioConditions:
    """The audio conditions of a transcript, read and resolved against the presets."""

    transcript: list[AudioCondition]
    turns: list[list[AudioCondition]]
    variants: list[Variant]

    @classmethod
    def read(
        cls, data: dict[str, Any], path: Path, lines: _LineIndex, presets: Presets | None
    ) -> _AudioConditions:
        def parse(value: Any, at: _Path) -> list[AudioCondition]:
            try:
                return parse_conditions(value, presets)
            except ConditionProblem as exc:
                inner = exc.path if isinstance(value, list) else exc.path[1:]
                field = (*at, *inner)
                raise TranscriptError(
                    f"{_where(path, lines, field, data)}, {_format_path(field)}: {exc}"
                ) from None

        transcript = parse(data["conditions"], ("conditions",)) if "conditions" in data else []
        turns = [
            parse(turn["conditions"], ("turns", i, "conditions")) if "conditions" in turn else []
            for i, turn in enumerate(data.get("turns", []))
        ]
        variants: list[Variant] = []
        seen: dict[str, int] = {}
        for i, raw in enumerate(data.get("variants", [])):
            at: _Path = ("variants", i)
            if isinstance(raw, str):
                name, threshold = raw, None
                conditions = parse(raw, at)
            else:
                name, threshold = raw["name"], raw.get("threshold")
                conditions = (
                    parse(raw["conditions"], (*at, "conditions")) if "conditions" in raw else []
                )
            if name in seen:
                raise TranscriptError(
                    f"{_where(path, lines, at, data)}, {_format_path(at)}: variant {name!r} is "
                    f"listed twice (also variants[{seen[name]}]); variant names name the tests"
                )
            seen[name] = i
            variants.append(Variant(name=name, conditions=conditions, threshold=threshold))
        return cls(transcript=transcript, turns=turns, variants=variants)


# --------------------------------------------------------------------------------------------
# Building the models
# --------------------------------------------------------------------------------------------


def _build(
    data: dict[str, Any],
    path: Path,
    lines: _LineIndex,
    default_threshold: float,
    default_runs: int,
    audio: _AudioConditions,
    audio_roots: Sequence[Path],
) -> Transcript:
    base = path.parent
    turns = [_build_turn(t, i, base, lines, audio.turns[i]) for i, t in enumerate(data["turns"])]
    for index, (turn, raw) in enumerate(zip(turns, data["turns"], strict=True)):
        turn.locations = _turn_locations(raw, index, lines, path.name)
    for index, turn in enumerate(turns):
        if turn.audio is not None:
            _check_audio_inside(Path(turn.audio), index, audio_roots, path, lines, data)
    return Transcript(
        id=data["id"],
        turns=turns,
        tags=list(data.get("tags", [])),
        description=data.get("description", ""),
        voice=_voice(data.get("voice")),
        path=path,
        line=lines.line(("id",)),
        threshold=float(data.get("threshold", default_threshold)),
        runs=int(data.get("runs", default_runs)),
        conditions=audio.transcript,
        variants=audio.variants,
        seed=int(data.get("seed", 0)),
        userdata=dict(data.get("userdata") or {}),
        **_key_values(Transcript, transcript_keys(), data),
        turn_timeout_s=data.get("turn_timeout_s"),
        locations={
            key.name: f"{path.name}:{lines.line((key.name,))}"
            for key in transcript_keys()
            if key.name in data
        },
    )


def _turn_locations(
    raw: Mapping[str, Any], index: int, lines: _LineIndex, file_name: str
) -> dict[str, str]:
    """``file:line`` of each check key of one turn (`Turn.locations`): every ``expect:`` key,
    each entry of a list of entries (``expect.tool_calls_args[1]``), and the turn-level keys."""
    at: _Path = ("turns", index)
    found: dict[str, int | None] = {}
    for name, value in (raw.get("expect") or {}).items():
        found[f"expect.{name}"] = lines.line((*at, "expect", name))
        if isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for j in range(len(value)):
                found[f"expect.{name}[{j}]"] = lines.line((*at, "expect", name, j))
    for key in turn_keys():
        if key.name in raw:
            found[key.name] = lines.line((*at, key.name))
    return {key: f"{file_name}:{line}" for key, line in found.items() if line is not None}


def _key_values(
    owner: type, keys: Iterable[Any], raw: dict[str, Any], *, path: str = ""
) -> dict[str, Any]:
    """The expectation keys that live outside ``expect:`` (``greeting`` on a transcript,
    ``interrupt`` on a turn), typed as the ``owner`` dataclass's fields of the same name."""
    hints = _type_hints(owner)
    return {
        key.name: from_json(hints[key.name], raw[key.name], path=f"{path}{key.name}")
        for key in keys
        if key.name in raw
    }


@cache
def _type_hints(owner: type) -> dict[str, Any]:
    return typing.get_type_hints(owner)


def _build_turn(
    raw: dict[str, Any],
    index: int,
    base: Path,
    lines: _LineIndex,
    conditions: list[AudioCondition],
) -> Turn:
    audio = raw.get("audio")
    resolved = None
    if audio is not None:
        # Joining onto an absolute path yields that path; folders are resolved, the file
        # itself is not, so a symlinked WAV keeps the name the transcript gave it.
        candidate = base / Path(audio).expanduser()
        resolved = candidate.parent.resolve() / candidate.name
    return Turn(
        user=raw["user"],
        audio=resolved,
        expect=_build_expect(raw.get("expect") or {}),
        voice=_voice(raw.get("voice")),
        line=lines.line(("turns", index)),
        conditions=conditions,
        **_key_values(Turn, turn_keys(), raw, path=f"turns[{index}]."),
    )


def _check_audio_inside(
    audio: Path,
    index: int,
    roots: Sequence[Path],
    path: Path,
    lines: _LineIndex,
    data: Mapping[str, Any],
) -> None:
    """Refuse an ``audio:`` file outside the project: ``/proc/self/environ`` or
    ``../../etc/passwd`` would otherwise be read and, in the HTML report, embedded."""
    real = audio.resolve()  # symlinks too: a link inside the project may point anywhere
    allowed = [Path(root).resolve() for root in roots]
    if any(real == root or root in real.parents for root in allowed):
        return
    field: _Path = ("turns", index, "audio")
    shown = ", ".join(str(root) for root in allowed)
    written = data["turns"][index].get("audio", str(audio))
    raise TranscriptError(
        f"{_where(path, lines, field, data)}, {_format_path(field)}: {written!r} resolves "
        f"to {real}, outside the project ({shown}); audio fixtures must live inside the "
        "project folder, or in a folder listed in audio_roots under [tool.agent_eval]"
    )


def _build_expect(raw: dict[str, Any]) -> Expect:
    """The `Expect` of a turn from its YAML values, which `Expect` decodes into its typed
    fields itself (once: the same decoding a Python-built `Expect` gets)."""
    return Expect(**{key.name: raw[key.name] for key in expect_keys() if key.name in raw})


def _voice(raw: Mapping[str, Any] | None) -> VoiceSettings | None:
    return VoiceSettings(**raw) if raw else None


def iter_audio_paths(transcripts: Iterable[Transcript]) -> Iterator[Path]:
    """Every resolved audio fixture path referenced by ``transcripts``."""
    for transcript in transcripts:
        for turn in transcript.turns:
            if turn.audio is not None:
                yield Path(turn.audio)


# --------------------------------------------------------------------------------------------
# Formats built on transcripts (simulations, LiveKit's scenarios.yaml)
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class YamlDocument:
    """A YAML file read the way transcripts are read (plain data only, bounded aliases,
    duplicate keys refused, every field's line known), for a file format that builds on
    transcripts: its mistakes get the same one-error messages, with file, line and field.

    Made by `read_yaml_document`.
    """

    path: Path
    data: Any
    """What the YAML holds."""
    _lines: _LineIndex = field(repr=False)

    def line(self, at: Sequence[str | int]) -> int | None:
        """The line of the field at path ``at`` (or of its nearest ancestor)."""
        return self._lines.line(tuple(at))

    def where(self, at: Sequence[str | int]) -> str:
        """``file:line, <subject>, field.path``, as the loader's messages start."""
        data = self.data if isinstance(self.data, Mapping) else {}
        return f"{_where(self.path, self._lines, tuple(at), data)}, {_format_path(tuple(at))}"

    def error(self, at: Sequence[str | int], problem: str) -> TranscriptError:
        """The error for ``problem`` at the field at path ``at``."""
        return TranscriptError(f"{self.where(at)}: {problem}")

    def validate(
        self, validator: Any, *, data: Any = None, hints: Mapping[str, str] | None = None
    ) -> None:
        """Check ``data`` (default: the whole document) against a JSON Schema validator;
        the first problem is raised as the loader words it (an unknown field first, with the
        closest known one). ``hints`` add what to write for a missing required field.

        Raises:
            TranscriptError: With file, line, field and a hint.
        """
        _validate_schema(
            self.data if data is None else data, self.path, self._lines, validator, hints
        )

    def build_transcript(
        self,
        data: dict[str, Any],
        *,
        default_threshold: float = 0.8,
        default_runs: int = 1,
        presets: Presets | None = None,
        audio_roots: Sequence[Path] | None = None,
        audio_to_come: bool = False,
    ) -> Transcript:
        """The `Transcript` of ``data``: the transcript fields of the document (``id``,
        ``turns``, ``runs``, ``voice``, ``conditions``, ``variants``...), already accepted by
        a schema that includes the transcript's. Every check the loader makes beyond the
        schema runs here, with the document's lines. ``turns`` may be empty.
        ``audio_to_come``: audio turns are added as it runs (a simulated caller speaks), so
        ``conditions`` and ``variants`` need no written audio turn.

        Raises:
            TranscriptError: With file, line, field and a hint.
        """
        roots = tuple(audio_roots) if audio_roots is not None else (_project_folder(self.path),)
        return _checked_build(
            {"turns": [], **data},
            self.path,
            self._lines,
            default_threshold,
            default_runs,
            presets,
            roots,
            audio_to_come=audio_to_come,
        )


def read_yaml_document(path: Path, *, subject: Subject | None = None) -> YamlDocument:
    """Read and parse ``path`` as transcripts are (`YamlDocument`); ``subject`` names what a
    field belongs to in messages (default: the transcript's id and turn).

    Raises:
        TranscriptError: The file cannot be read, is not UTF-8, or is not plain, valid YAML.
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise TranscriptError(f"{path}: cannot read the file: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise TranscriptError(f"{path}: not UTF-8 text ({exc.reason})") from exc
    resolved = path.resolve()
    node, data = _parse(text, resolved)
    return YamlDocument(resolved, data, _LineIndex.build(node, subject))
