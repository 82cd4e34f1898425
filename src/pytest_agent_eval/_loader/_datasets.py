"""Datasets: one transcript over a table of cases (inline ``cases:`` or a CSV/JSON/YAML file
beside it), each case filled into the transcript's placeholders and built as a transcript."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._conditions import (
    VARIANT_NAME_PATTERN,
)
from .._text import did_you_mean
from ..errors import TranscriptError
from ..models import Case, Transcript
from ._build import Presets, load_one
from ._messages import short, yaml_type
from ._yaml import FieldPath, LineIndex, field_where, format_path

__all__ = [
    "load_dataset",
    "project_folder",
]

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}")
"""``{field}``, or ``{{`` / ``}}`` for a literal brace. Only identifiers are fields, so a
regex's ``\\d{3}`` stays as it is."""

_CASE_ID = re.compile(VARIANT_NAME_PATTERN)


def load_dataset(
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
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
            field: FieldPath = ("turns", *exc.at)
            known = ", ".join(sorted(fields)) or "(none)"
            raise TranscriptError(
                f"{field_where(path, lines, field, data)}, {format_path(field)}: {{{exc.name}}} "
                f"names no field of case {case_id!r} ({source}){did_you_mean(exc.name, fields)}; "
                f"its fields: {known} (write {{{{ and }}}} for a literal brace)"
            ) from None
        try:
            filled = load_one(
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
    data: Mapping[str, Any], path: Path, lines: LineIndex, roots: Sequence[Path]
) -> list[tuple[str, str, dict[str, Any]]]:
    """The rows of ``cases:`` as (case id, where it came from, fields), ids checked."""
    value = data["cases"]
    where = f"{field_where(path, lines, ('cases',), data)}, cases"
    if isinstance(value, str):
        rows = _read_case_file(value, path, where, roots)
    elif isinstance(value, list) and value:
        rows = []
        for index, row in enumerate(value):
            if not isinstance(row, dict):
                raise TranscriptError(
                    f"{where}[{index}]: a case is a mapping of field: value, got "
                    f"{yaml_type(row)} {short(row)}"
                )
            rows.append((f"{path}:{lines.line(('cases', index)) or '?'} (cases[{index}])", row))
    else:
        raise TranscriptError(
            f"{where}: expected a list of cases (mappings of field: value) or the path of a "
            f".csv or .jsonl file next to this YAML, got {yaml_type(value)} {short(value)}"
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
                    f"got {short(row)}"
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


def project_folder(path: Path) -> Path:
    """The folder of the nearest pyproject.toml above ``path``, else ``path``'s folder."""
    folder = path.resolve().parent
    for candidate in (folder, *folder.parents):
        if (candidate / "pyproject.toml").is_file():
            return candidate
    return folder
