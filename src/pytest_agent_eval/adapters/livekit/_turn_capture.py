"""What one LiveKit turn captured: the records `TurnRecorder` (`_turn`) keeps while turns run
(each tool call, speech, thing said, and reply owed to tools) and the `TurnCapture` it hands
over when a turn ends, with the turn's items as reports show them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from livekit.agents import llm

from ...models import AgentSpeech, Handoff, ToolCall

__all__ = ["SpeechTexts", "TurnCapture"]


_UNKNOWN_FUNCTION = "Unknown function: "
"""How LiveKit answers a call to a tool the agent does not have (``voice/generation.py``)."""


@dataclass
class _CallRecord:
    """One tool call, from the moment it starts to its result."""

    call_id: str
    name: str
    arguments: str
    turn: int | None
    started: bool
    output: Any = None
    is_error: bool = False
    error: str | None = None
    ended_message: str | None = None
    done: bool = False
    cancelled: bool = False
    """LiveKit stopped the call before it returned (an interruption cut its reply): it gave
    nothing back, so it is shown unfinished, never as a call that returned nothing."""

    @property
    def finished(self) -> bool:
        """The call returned or failed (not still running, not cancelled)."""
        return self.done and not self.cancelled

    @property
    def refused(self) -> bool:
        """LiveKit refused the call before running anything: the model named a tool the agent
        active then does not have (LiveKit answers "Unknown function: ...")."""
        return (
            not self.started
            and self.is_error
            and isinstance(self.output, str)
            and self.output.startswith(_UNKNOWN_FUNCTION)
        )

    def tool_call(self) -> ToolCall:
        return ToolCall(
            self.name,
            _parse_args(self.arguments),
            output=self.output,
            is_error=self.is_error,
            call_id=self.call_id,
            error=self.error,
            done=self.finished,
            cancelled=self.cancelled,
            refused=self.refused,
        )

    def unfinished(self) -> dict[str, Any]:
        """How ``metadata["livekit"]["pending_tool_calls"]`` shows it."""
        return {"call_id": self.call_id, "name": self.name, "cancelled": self.cancelled}


@dataclass
class _Speech:
    """One speech handle the session created, and why."""

    handle: Any
    cause: str
    turn: int | None
    agent: str
    """The agent that created it (the one whose activity it was scheduled on)."""
    trigger_at: float | None = None
    """``time.perf_counter()`` of what made the agent speak on its own (the session start, the
    handoff that brought the agent in); None: the end of the user's speech, found per turn."""


@dataclass
class _ToolReply:
    """The reply the model owes to the results of tools a speech ran (``has_tool_reply``)."""

    handle: Any
    names: list[str]
    speeches: int
    """How many speeches the recorder had seen when the tools returned: a later one is the
    reply (a model that generates it on its own, ``auto_tool_reply_generation``)."""
    auto: bool
    """The model generates the reply itself (a new speech); else the same handle says it."""

    @property
    def what(self) -> str:
        return f"the reply to the tool results of {', '.join(self.names)}"


@dataclass
class _Said:
    """One thing the agent said, in the order it was said."""

    text: str
    agent: str
    handle_id: str | None
    item: Any = None


@dataclass
class TurnCapture:
    """Everything recorded between two turn boundaries."""

    reply: str
    items: list[Any]
    tool_calls: list[ToolCall]
    pending_tool_calls: list[dict[str, Any]]
    late_tool_results: list[dict[str, Any]]
    agent_speech: list[AgentSpeech]
    handoffs: list[Handoff]
    agent: str
    events: list[dict[str, Any]]
    late_speech: list[tuple[int | None, str]] = field(default_factory=list)
    """What speech of an earlier turn said during this one, as (that turn, text): a reply
    that went on after its turn ended (a barge-in cut it, its tool returned later). It belongs
    to that turn, not to this one's reply."""
    first_text_at: float | None = None
    """``time.perf_counter()`` of the first text of this turn's own speech (None: none, or not
    attributed to a speech)."""
    speech_ids: list[str] = field(default_factory=list)
    """The speeches this turn's reply came from, in order (with repeats)."""
    unfinished_calls: list[_CallRecord] = field(default_factory=list)
    """The turn's calls still running when it ended (their records go on being updated)."""

    def note_cancellations(self) -> None:
        """A barge-in ended the turn while these calls ran, and the interruption may since
        have cancelled them (LiveKit cancels the tools of an interrupted reply): such a call
        reads as cancelled from now on. A call that returned after the cut stays as the cut
        found it (pending; its result is the next turn's ``late_tool_results``)."""
        cancelled = {c.call_id: c for c in self.unfinished_calls if c.cancelled}
        if not cancelled:
            return
        self.tool_calls = [
            cancelled[c.call_id].tool_call() if c.call_id in cancelled else c
            for c in self.tool_calls
        ]
        for entry in self.pending_tool_calls:
            if entry["call_id"] in cancelled:
                entry["cancelled"] = True


class SpeechTexts(Protocol):
    """Where the recorder reads what each speech sent to the transcription output."""

    def text_of(self, speech_id: str) -> str:
        """The text speech ``speech_id`` sent (since the turn started)."""
        ...

    def first_text_time(self, speech_id: str) -> float | None:
        """``time.perf_counter()`` of its first text (since the turn started), if any."""
        ...


@dataclass
class _HandoffItem:
    """A handoff among a turn's items (for reports and LiveKit's ``RunAssert``)."""

    item: Any
    old: str
    new: str
    old_agent: Any
    new_agent: Any
    type: str = "agent_handoff"


def _speech_latency(speech: _Speech, first: float | None, anchors: Sequence[float]) -> float | None:
    """Seconds from what made the agent speak on its own to its first word: the session start
    (greeting), the handoff that brought it in (``on_enter``), else the last end of the user's
    speech before it. None when there is no such moment before the first word: an impossible
    value is not reported."""
    if first is None:
        return None
    trigger = speech.trigger_at
    if trigger is None:
        before = [a for a in anchors if a <= first]
        trigger = before[-1] if before else None
    if trigger is None or trigger > first:
        return None
    return first - trigger


def _events(items: list[Any]) -> list[dict[str, Any]]:
    """A turn's items as JSON-friendly dicts (for reports)."""
    out: list[dict[str, Any]] = []
    for item in items:
        if isinstance(item, llm.ChatMessage):
            out.append({"type": "message", "role": item.role, "text": item.text_content or ""})
        elif isinstance(item, llm.FunctionCall):
            out.append({"type": "function_call", "name": item.name, "arguments": item.arguments})
        elif isinstance(item, llm.FunctionCallOutput):
            out.append(
                {
                    "type": "function_call_output",
                    "name": item.name,
                    "output": item.output,
                    "is_error": item.is_error,
                }
            )
        elif isinstance(item, _HandoffItem):
            out.append({"type": "agent_handoff", "from": item.old, "to": item.new})
    return out


def _parse_args(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None
