"""Short text for messages and reports: cutting, compact JSON, tool calls, did-you-mean hints
and safe names.

Failure reasons, the pytest account, the reports and the judge prompt all show values cut to a
size and tool calls with their arguments; error messages suggest the closest valid name; test
names and file names made from a transcript id use the same safe form. One helper each keeps
them alike.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ._sanitize import strip_controls

if TYPE_CHECKING:
    from .models import ToolCall

__all__ = [
    "TOOL_ARGS_MAX_CHARS",
    "clip",
    "clip_middle",
    "compact_json",
    "did_you_mean",
    "format_tool_call",
    "patterns_as_written",
    "safe_name",
    "short_repr",
    "shorten",
]

TOOL_ARGS_MAX_CHARS = 400
"""Tool arguments and outputs are shortened past this; reports stay readable with big payloads."""


def shorten(text: str, limit: int, *, marker: str = "…") -> str:
    """``text`` cut to ``limit`` characters, the last of them ``marker``, when it is longer."""
    text = str(text)
    return text if len(text) <= limit else text[: max(0, limit - len(marker))] + marker


def clip(text: str, limit: int) -> str:
    """``text`` on one line (runs of whitespace become one space) without control sequences,
    then `shorten`-ed."""
    return shorten(" ".join(strip_controls(str(text)).split()), limit)


def clip_middle(text: str, limit: int, *, marker: str = " … ") -> str:
    """``text`` on one line, as `clip` makes it, cut in the middle when it is longer than
    ``limit``: its start (what happened) and its end (the fix, where our messages put it)
    both stay."""
    flat = " ".join(strip_controls(str(text)).split())
    if len(flat) <= limit:
        return flat
    keep = max(0, limit - len(marker))
    head = keep // 2
    return flat[:head] + marker + flat[len(flat) - (keep - head) :]


def short_repr(value: Any, limit: int) -> str:
    """``repr(value)`` cut to ``limit`` characters with ``...``, for error messages."""
    return shorten(repr(value), limit, marker="...")


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """``" (Did you mean 'x'?)"`` for the closest choice, or "" when nothing is close.

    "Did you mean" with a capital, as the earlier package wrote it: scripts search for it.
    """
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f" (Did you mean {close[0]!r}?)" if close else ""


# Characters a name keeps: letters and digits of any script, '_', '.', '+' and '-'. Everything
# else (spaces, ':', '[', ']', '/', control characters) could split a pytest node id, break
# `-k` or a file path.
_SAFE = r"\w.+\-"
_UNSAFE_EDGES = re.compile(rf"^[^{_SAFE}]+|[^{_SAFE}]+$")
_UNSAFE_RUN = re.compile(rf"[^{_SAFE}]+")


def safe_name(text: str, *, fallback: str = "transcript") -> str:
    """``text`` as a name for a pytest test or a file: each run of other characters becomes one
    ``_`` (at the ends it is dropped), so ``"booking: happy path"`` is ``booking_happy_path``.

    Deterministic and readable; a name that is already safe is returned unchanged. Different
    texts can share a safe name (``"a b"`` and ``"a_b"``); callers that need unique names check
    for that. ``fallback`` is returned when nothing is left.
    """
    return _UNSAFE_RUN.sub("_", _UNSAFE_EDGES.sub("", text)) or fallback


def patterns_as_written(patterns: Iterable[str]) -> str:
    """Regexes as their author wrote them, ``['RF-\\d{4}', '^ok']`` (not Python's repr, which
    doubles every backslash: ``'RF-\\\\d{4}'``), so a failure shows the pattern to look for."""
    return "[" + ", ".join(f"'{clip(p, 200)}'" for p in patterns) + "]"


def _json_default(value: Any) -> str:
    # Dates and times read best in ISO form (as results store them); anything else as repr.
    return value.isoformat() if hasattr(value, "isoformat") else repr(value)


def compact_json(value: Any) -> str:
    """One-line JSON with sorted keys and readable non-ASCII; ISO dates, ``repr`` for the rest."""
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=_json_default)
    except (TypeError, ValueError):
        return repr(value)


def format_tool_call(
    call: ToolCall, *, limit: int = TOOL_ARGS_MAX_CHARS, with_output: bool = True
) -> str:
    """``book_slot({"time": "10am"}) → "ok"``, with `` [error]`` for a failed call and
    `` [refused]`` for one the framework refused.

    Args:
        call: The tool call.
        limit: Arguments and output are each shortened to this many characters.
        with_output: Show what the tool returned, when it is known.
    """
    args = "" if call.args is None else shorten(compact_json(call.args), limit)
    text = f"{call.name}({args})"
    if with_output and call.output is not None:
        text += " → " + shorten(compact_json(call.output), limit)
    if call.refused:
        text += " [refused]"
    elif call.is_error:
        text += " [error]"
    return text
