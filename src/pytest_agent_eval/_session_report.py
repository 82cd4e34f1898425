"""A LiveKit session report on disk (``ctx.make_session_report().to_dict()`` as JSON): read,
its layout checked, and the delays its assistant messages saw.

Low in the package so both readers use it: the importer (``agent-eval import``, which reads
the whole call) and the scripted stand-ins' replayed latency (`adapters`), which only need the
delays. The layout read is livekit-agents 1.x's (written against 1.8.9); a report of another
major version is refused rather than half read.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import AgentEvalError

__all__ = [
    "MAKE_REPORT",
    "SUPPORTED_MAJOR",
    "SessionReportError",
    "check_layout",
    "load",
    "report_delays",
]

SUPPORTED_MAJOR = 1
"""livekit-agents major version whose report layout this reader knows."""

MAKE_REPORT = "json.dumps(ctx.make_session_report().to_dict())"


class SessionReportError(AgentEvalError):
    """A session report that cannot be read; the message names the file and the fix."""


def load(path: Path) -> Any:
    """The JSON at ``path``.

    Raises:
        SessionReportError: Unreadable, or not JSON.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SessionReportError(f"{path}: cannot read the session report ({exc})") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SessionReportError(
            f"{path}:{exc.lineno}: not JSON ({exc.msg}); a session report is the JSON of "
            f"{MAKE_REPORT}"
        ) from None
    return data


def check_layout(data: Mapping[str, Any], name: str) -> None:
    """Refuse a report whose layout this reader does not know.

    Raises:
        SessionReportError: No ``sdk_version``, another major version, or no chat history.
    """
    version = data.get("sdk_version")
    if not isinstance(version, str) or not version:
        raise SessionReportError(
            f"{name}: no sdk_version, so this is not a LiveKit session report; save one with "
            f"{MAKE_REPORT} (livekit-agents {SUPPORTED_MAJOR}.x)"
        )
    major = version.split(".", 1)[0]
    if major != str(SUPPORTED_MAJOR):
        raise SessionReportError(
            f"{name}: a report of livekit-agents {version}, whose layout this importer does not "
            f"know (it reads the layout of livekit-agents {SUPPORTED_MAJOR}.x, written against "
            "1.8.9); export the call with livekit-agents 1.x, or open an issue with the report"
        )
    history = data.get("chat_history")
    if not isinstance(history, Mapping) or not isinstance(history.get("items"), list):
        raise SessionReportError(
            f"{name}: the report (livekit-agents {version}) has no chat_history.items, which is "
            "what the turns are read from; write it with to_dict() (not "
            "to_dict(include_chat_history=False))"
        )


def report_delays(path: Path, metric: str) -> list[float]:
    """Every assistant message's ``metrics[metric]`` (seconds: ``llm_node_ttft``,
    ``tts_node_ttfb``, ...) in the report at ``path``, in order.

    Raises:
        SessionReportError: The file is not JSON, not a session report of a known layout, or
            holds a delay that is not a finite number of seconds >= 0.
    """
    data = load(path)
    if not isinstance(data, Mapping):
        raise SessionReportError(f"{path}: a session report is a JSON object ({MAKE_REPORT})")
    check_layout(data, str(path))
    found: list[float] = []
    for index, item in enumerate(data["chat_history"]["items"]):
        if not (isinstance(item, Mapping) and item.get("role") == "assistant"):
            continue
        metrics = item.get("metrics")
        value = metrics.get(metric) if isinstance(metrics, Mapping) else None
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if not math.isfinite(value) or value < 0:
            raise SessionReportError(
                f"{path}: chat_history.items[{index}].metrics.{metric} is {value!r}, not a "
                "delay (finite seconds >= 0); the report is damaged: save it again, or leave "
                "it out"
            )
        found.append(float(value))
    return found
