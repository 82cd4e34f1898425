"""Hardened YAML with line numbers: size and node limits, tags refused, duplicate keys, and a
line index from field paths to lines, so every message can name where it points."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..errors import TranscriptError

__all__ = [
    "MAX_YAML_NODES",
    "FieldPath",
    "LineIndex",
    "Subject",
    "field_where",
    "format_path",
    "parse_yaml",
]

FieldPath = tuple[str | int, ...]


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


def parse_yaml(text: str, path: Path) -> tuple[yaml.Node | None, Any]:
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
class LineIndex:
    """Field path -> 1-based line, for pointing users at the right place."""

    lines: dict[FieldPath, int]
    subject: Subject = field(default=_transcript_subject)
    """Names what a field belongs to (`Subject`)."""

    @classmethod
    def build(cls, root: yaml.Node | None, subject: Subject | None = None) -> LineIndex:
        lines: dict[FieldPath, int] = {}

        def walk(node: yaml.Node, path: FieldPath) -> None:
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

    def line(self, path: FieldPath) -> int | None:
        """The line of ``path`` or of its nearest ancestor."""
        for end in range(len(path), -1, -1):
            found = self.lines.get(tuple(path[:end]))
            if found is not None:
                return found
        return None


def format_path(path: Sequence[str | int]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def field_where(path: Path, lines: LineIndex, field: FieldPath, data: Mapping[str, Any]) -> str:
    line = lines.line(field)
    head = f"{path}:{line}" if line else str(path)
    return ", ".join([head, *lines.subject(field, data)])
