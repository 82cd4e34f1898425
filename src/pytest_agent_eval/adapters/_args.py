"""Tool-call arguments as frameworks report them (a dict, a JSON string, anything else) turned
into the dict our records hold."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["coerce_args", "reply_text"]


def coerce_args(raw: Any) -> dict[str, Any] | None:
    """``raw`` as a dict of arguments.

    A dict is returned as is, a JSON object string parsed, None or "" gives ``{}`` (a call
    without arguments). Anything else (malformed JSON, a JSON list, a bare value) is kept
    visible as ``{"_raw": raw}`` so an argument check fails showing what the model sent,
    instead of the arguments silently counting as "not captured".
    """
    if isinstance(raw, dict):
        return raw
    if raw is None or raw == "":
        return {}
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            return {"_raw": raw}
        return value if isinstance(value, dict) else {"_raw": raw}
    return {"_raw": raw}


def reply_text(output: Any) -> str:
    """The reply text for a framework's final output: a string as is, anything else as JSON
    (or its ``repr`` when it is not serialisable)."""
    if output is None:
        return ""
    if isinstance(output, str):
        return output
    try:
        return json.dumps(output, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(output)
