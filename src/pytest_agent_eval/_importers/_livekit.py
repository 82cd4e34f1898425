"""Read a LiveKit session report (``ctx.make_session_report().to_dict()``) into an `ImportedCall`.

The chat history is the source of truth, as it is for LiveKit Cloud: its items in order
(messages with their speaking times, function calls and outputs, handoffs). Speaking times are
wall-clock seconds; they are placed on the recording's timeline by the report's
``audio_recording_started_at``. The file's reading and its layout's check are
`.._session_report`'s (livekit-agents 1.x, written against 1.8.9), shared with the stand-ins'
replayed latency.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from .._session_report import MAKE_REPORT, SUPPORTED_MAJOR, SessionReportError, check_layout, load
from .._text import shorten
from ._call import (
    AgentSwitch,
    CallImportError,
    ImportedCall,
    Notice,
    Span,
    ToolUse,
    UserTurn,
    Utterance,
    tool_use,
)

__all__ = ["SUPPORTED_MAJOR", "read_report"]

_MAKE_REPORT = MAKE_REPORT


def read_report(path: Path) -> ImportedCall:
    """Read the report at ``path``.

    Raises:
        CallImportError: The file is not JSON, not a session report, of an unsupported
            layout, or holds no user message.
    """
    try:
        data = load(path)
    except SessionReportError as exc:
        raise CallImportError(str(exc)) from None
    return parse_report(data, name=str(path))


def parse_report(data: Any, *, name: str) -> ImportedCall:
    """Read a report already loaded from JSON; ``name`` names it in messages."""
    if not isinstance(data, Mapping):
        raise CallImportError(
            f"{name}: a session report is a JSON object ({_MAKE_REPORT}), this is a "
            f"{type(data).__name__}"
        )
    _check_layout(data, name)
    items = data["chat_history"]["items"]
    started = _number(data.get("audio_recording_started_at"))
    on_recording = started is not None
    if started is None:
        started = _number(data.get("started_at")) or _first_time(items)
    conversation = ImportedCall(
        source=_describe(data, name),
        kind="livekit",
        name_hint=str(data.get("room") or data.get("job_id") or Path(name).stem),
        turns=[],
        timeline_is_recording=on_recording,
        timeline_end_s=_timeline_end(data),
    )
    reader = _Reader(conversation, origin=started or 0.0, name=name)
    for index, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise CallImportError(
                f"{name}: chat_history.items[{index}] is a {type(item).__name__}, not an item "
                "object; the report is damaged"
            )
        reader.add(item, index)
    reader.finish()
    if not conversation.turns:
        raise CallImportError(
            f"{name}: the session report has no user message (chat_history holds "
            f"{_count_roles(items)}): there is no turn to replay. The caller never spoke, or "
            "their speech was never transcribed; import a call in which the user spoke"
        )
    return conversation


def _check_layout(data: Mapping[str, Any], name: str) -> None:
    try:
        check_layout(data, name)
    except SessionReportError as exc:
        raise CallImportError(str(exc)) from None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _first_time(items: list[Any]) -> float | None:
    for item in items:
        if isinstance(item, Mapping) and (t := _number(item.get("created_at"))) is not None:
            return t
    return None


def _timeline_end(data: Mapping[str, Any]) -> float | None:
    duration_ms = _number(data.get("duration_ms"))
    if duration_ms is not None:
        return duration_ms / 1000
    started = _number(data.get("audio_recording_started_at"))
    ended = _number(data.get("timestamp"))
    if started is not None and ended is not None:
        return ended - started
    return None


def _describe(data: Mapping[str, Any], name: str) -> str:
    parts = [f"livekit-agents {data.get('sdk_version')}"]
    if room := data.get("room"):
        parts.append(f"room {room}")
    if job := data.get("job_id"):
        parts.append(f"job {job}")
    if agent := data.get("agent_name"):
        parts.append(f"agent {agent}")
    return f"{Path(name).name} ({', '.join(str(p) for p in parts)})"


def _count_roles(items: list[Any]) -> str:
    counts: dict[str, int] = {}
    for item in items:
        if isinstance(item, Mapping):
            key = str(item.get("role") or item.get("type") or "?")
            counts[key] = counts.get(key, 0) + 1
    if not counts:
        return "no items"
    return ", ".join(f"{n} {key}" for key, n in sorted(counts.items()))


def _text_of(content: Any) -> str:
    """The text parts of a message's content, joined as LiveKit's ``text_content`` does."""
    if isinstance(content, str):
        return content.strip()
    if not isinstance(content, list):
        return ""
    return "\n".join(part for part in content if isinstance(part, str)).strip()


class _Reader:
    """Walks the chat history once, opening a turn at each user message."""

    def __init__(self, conversation: ImportedCall, *, origin: float, name: str) -> None:
        self._out = conversation
        self._origin = origin
        self._name = name
        self._open_calls: dict[str, tuple[list[ToolUse], int]] = {}
        self._skipped: dict[str, int] = {}

    def _span(self, metrics: Any) -> Span | None:
        if not isinstance(metrics, Mapping):
            return None
        start = _number(metrics.get("started_speaking_at"))
        end = _number(metrics.get("stopped_speaking_at"))
        if start is None or end is None or end < start:
            return None
        return Span(start - self._origin, end - self._origin)

    @property
    def _turn(self) -> UserTurn | None:
        return self._out.turns[-1] if self._out.turns else None

    def _notice(self, text: str, turn: int | None = None) -> None:
        self._out.notices.append(Notice(text=text, turn=turn))

    def add(self, item: Mapping[str, Any], index: int) -> None:
        kind = item.get("type")
        if kind == "message":
            self._message(item, index)
        elif kind == "function_call":
            self._function_call(item)
        elif kind == "function_call_output":
            self._function_output(item)
        elif kind == "agent_handoff":
            self._handoff(item)
        elif kind == "agent_config_update":
            return  # instructions and tool changes: nothing a caller hears
        else:
            label = str(kind)
            self._skipped[label] = self._skipped.get(label, 0) + 1

    def _message(self, item: Mapping[str, Any], index: int) -> None:
        role = item.get("role")
        text = _text_of(item.get("content"))
        metrics = item.get("metrics")
        if role == "user":
            number = len(self._out.turns) + 1
            if not text:
                self._notice(
                    f"chat_history.items[{index}] is a user message with no text; skipped "
                    f"(it would have been turn {number})"
                )
                return
            spoken = "transcript_confidence" in item or (
                isinstance(metrics, Mapping) and "started_speaking_at" in metrics
            )
            self._out.turns.append(UserTurn(text=text, spoken=spoken, span=self._span(metrics)))
        elif role == "assistant":
            if not text:
                return
            said = Utterance(
                text=text, interrupted=bool(item.get("interrupted")), span=self._span(metrics)
            )
            if self._turn is None:
                self._out.greeting.append(said)
            else:
                self._turn.replies.append(said)
        # system and developer messages: the agent's own prompt, which the test agent has

    def _function_call(self, item: Mapping[str, Any]) -> None:
        name = str(item.get("name") or "")
        use = tool_use(name, item.get("arguments", ""))
        where = self._turn.tools if self._turn is not None else self._out.greeting_tools
        where.append(use)
        if use.args is None:
            self._notice(
                f"the call to {name} had arguments that are not a JSON object "
                f"({shorten(use.raw_args, 80)!r}); its arguments are not drafted",
                len(self._out.turns) or None,
            )
        call_id = item.get("call_id")
        if isinstance(call_id, str):
            self._open_calls[call_id] = (where, len(where) - 1)

    def _function_output(self, item: Mapping[str, Any]) -> None:
        call_id = item.get("call_id")
        if not isinstance(call_id, str) or call_id not in self._open_calls:
            return
        where, position = self._open_calls.pop(call_id)
        output = item.get("output")
        where[position] = replace(
            where[position],
            output=output if isinstance(output, str) else json.dumps(output),
            is_error=bool(item.get("is_error")),
        )

    def _handoff(self, item: Mapping[str, Any]) -> None:
        new = item.get("new_agent_id")
        old = item.get("old_agent_id")
        if not isinstance(new, str) or old is None or self._turn is None:
            return  # the session's first agent starting, or a handoff before the caller spoke
        self._turn.switches.append(AgentSwitch(from_agent=str(old), to_agent=new))

    def finish(self) -> None:
        for kind, count in sorted(self._skipped.items()):
            self._notice(f"{count} chat item(s) of type {kind!r} are not imported")
        self._check_overlaps()

    def _check_overlaps(self) -> None:
        """Say where the user spoke while the agent spoke: the fixture holds only the user,
        and the replay does not re-enact the barge-in."""
        agent: list[Utterance] = list(self._out.greeting)
        for turn in self._out.turns:
            agent.extend(turn.replies)
        for number, turn in enumerate(self._out.turns, 1):
            if turn.span is None:
                continue
            for said in agent:
                if said.span is None or not turn.span.overlaps(said.span):
                    continue
                cut = " (it was interrupted)" if said.interrupted else ""
                self._notice(
                    f"the user spoke over the agent: the user {turn.span}, the agent "
                    f"{said.span} saying {shorten(said.text, 60)!r}{cut}. The replay streams "
                    "this turn after the agent is done, so the overlap is not re-enacted "
                    "(add interrupt: to the turn to test a barge-in)",
                    number,
                )
                break
