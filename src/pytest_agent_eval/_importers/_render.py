"""The imported transcript as YAML text: plain data through PyYAML's emitter (so every value
reads back as written), with comments saying where each turn came from and which keys are
drafts. The same conversation always renders to the same bytes."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from ._draft import Draft

__all__ = ["TurnText", "render_transcript"]

_WIDTH = 100


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnText:
    """One turn as written: its text, fixture and comments, and its drafts."""

    user: str
    audio: str | None = None
    notes: Sequence[str] = ()
    """Comment lines above the turn (where it came from, what was heard)."""
    drafts: Sequence[Draft] = field(default_factory=tuple)
    quiet_note: str | None = None
    """A comment in place of ``expect:`` when nothing was drafted."""


def _comment(text: str, indent: str) -> list[str]:
    return [
        f"{indent}# {line}"
        for line in textwrap.wrap(
            text, _WIDTH - len(indent) - 2, break_long_words=False, break_on_hyphens=False
        )
    ] or [f"{indent}#"]


_FLOW_ITEM_LIMIT = 72
"""A list item of scalars up to this long is written on one line: ``- {tool: x, status: ok}``."""


def _flow(value: Any) -> str:
    """``value`` on one line: a scalar as PyYAML quotes it (a text holding an apostrophe in
    double quotes, so it is not doubled), a collection in flow style."""
    style = '"' if isinstance(value, str) and "'" in value else None
    text = yaml.safe_dump(
        value,
        default_flow_style=True,
        default_style=style,
        sort_keys=False,
        allow_unicode=True,
        width=1 << 20,
    )
    if text.endswith("\n...\n"):  # the end marker PyYAML puts after a lone plain scalar
        text = text[: -len("\n...\n")]
    return text.strip()


def _dump(key: str, value: Any, indent: str) -> list[str]:
    """``key: value`` in block style, its leaves (scalars, lists of scalars, a tool call's
    arguments) in flow style, so each reads on one line."""
    head = f"{indent}{_flow(key)}:"
    if isinstance(value, dict) and value:
        lines = [head]
        for sub_key, sub_value in value.items():
            lines += _dump(sub_key, sub_value, indent + "  ")
        return lines
    if isinstance(value, list) and value and all(isinstance(v, dict) and v for v in value):
        lines = [head]
        for item in value:
            scalars = not any(isinstance(v, dict | list) for v in item.values())
            if scalars and len(one := _flow(item)) <= _FLOW_ITEM_LIMIT:
                lines.append(f"{indent}  - {one}")
                continue
            entries = [f"{_flow(k)}: {_flow(v)}" for k, v in item.items()]
            lines.append(f"{indent}  - {entries[0]}")
            lines.extend(f"{indent}    {entry}" for entry in entries[1:])
        return lines
    return [f"{head} {_flow(value)}"]


def _draft_lines(draft: Draft, indent: str) -> list[str]:
    lines = _comment(draft.note, indent)
    body = _dump(draft.key, draft.value, indent)
    if not draft.active:
        body = [f"{indent}# {line[len(indent) :]}" for line in body]
    return lines + body


def render_transcript(
    *,
    transcript_id: str,
    description: str,
    header: Sequence[str],
    greeting: Draft | None,
    greeting_notes: Sequence[str],
    turns: Sequence[TurnText],
) -> str:
    """The transcript's YAML text."""
    lines: list[str] = []
    for paragraph in header:
        lines.extend(_comment(paragraph, ""))
    lines += _dump("id", transcript_id, "")
    lines += _dump("description", description, "")
    for note in greeting_notes:
        lines.extend(_comment(note, ""))
    if greeting is not None:
        lines += _draft_lines(greeting, "")
    lines.append("turns:")
    for turn in turns:
        for note in turn.notes:
            lines.extend(_comment(note, "  "))
        first = _dump("user", turn.user, "")
        lines.append(f"  - {first[0]}")
        lines.extend(f"    {line}" for line in first[1:])
        if turn.audio is not None:
            lines += _dump("audio", turn.audio, "    ")
        active = [d for d in turn.drafts if d.active]
        if turn.drafts:
            if active:
                lines.append("    expect:")
            else:
                lines.append("    # expect:")
            for draft in turn.drafts:
                lines += _draft_lines(draft, "      ")
        elif turn.quiet_note:
            lines.extend(_comment(turn.quiet_note, "    "))
    return "\n".join(lines) + "\n"
