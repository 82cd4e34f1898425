"""What an imported conversation holds, whatever it came from: the records the readers fill
(a LiveKit session report, an OpenAI message list) and the drafter and renderer read."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..errors import AgentEvalError

__all__ = [
    "AgentSwitch",
    "CallImportError",
    "ImportedCall",
    "Notice",
    "Span",
    "ToolUse",
    "UserTurn",
    "Utterance",
    "tool_use",
]


class CallImportError(AgentEvalError):
    """The input cannot be imported; the message names the file, the turn and the fix.
    Nothing is written when it is raised."""


@dataclass(frozen=True, slots=True)
class Span:
    """Seconds on the call's timeline: from the start of the recording when the report has
    one, else from the start of the session."""

    start_s: float
    end_s: float

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    def overlaps(self, other: Span) -> bool:
        return self.start_s < other.end_s and other.start_s < self.end_s

    def __str__(self) -> str:
        return f"{self.start_s:.2f}-{self.end_s:.2f} s"


@dataclass(frozen=True, slots=True, kw_only=True)
class Utterance:
    """One thing the agent said (an assistant message)."""

    text: str
    interrupted: bool = False
    """The caller cut it short in the call."""
    span: Span | None = None
    """When it played, if the report says."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolUse:
    """One tool call the agent made, and how it ended."""

    name: str
    args: dict[str, Any] | None
    """The arguments, or None when they were not a JSON object (see ``raw_args``)."""
    raw_args: str
    output: str | None = None
    """What the tool gave back; None when no output was recorded (still running at the end)."""
    is_error: bool | None = None
    """None when no output was recorded."""


def tool_use(name: str, arguments: Any) -> ToolUse:
    """A call to ``name`` with ``arguments`` as the source wrote them (a JSON string, or
    already an object)."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    try:
        parsed = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        parsed = None
    return ToolUse(name=name, args=dict(parsed) if isinstance(parsed, dict) else None, raw_args=raw)


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSwitch:
    """A handoff, with the agents as the source names them."""

    from_agent: str | None
    to_agent: str


@dataclass(slots=True, kw_only=True)
class UserTurn:
    """One user message and everything the agent did until the next one."""

    text: str
    spoken: bool
    """True when the user spoke it (a transcription); False for typed text."""
    span: Span | None = None
    """When the user spoke, if the source says (LiveKit's speaking times)."""
    replies: list[Utterance] = field(default_factory=list)
    tools: list[ToolUse] = field(default_factory=list)
    switches: list[AgentSwitch] = field(default_factory=list)

    @property
    def reply(self) -> str:
        return " ".join(u.text for u in self.replies if u.text)


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """A warning about the input: something imported less faithfully than it happened."""

    text: str
    turn: int | None = None
    """The 1-based turn it is about, or None for the whole input."""

    def __str__(self) -> str:
        return f"turn {self.turn}: {self.text}" if self.turn is not None else self.text


@dataclass(slots=True, kw_only=True)
class ImportedCall:
    """A whole imported conversation, in order."""

    source: str
    """What it was read from, for the transcript's header (file name and what it is)."""
    kind: str
    """``livekit`` or ``messages``."""
    name_hint: str = ""
    """What to name the transcript after when no ``--out`` says (the room, the file)."""
    turns: list[UserTurn]
    greeting: list[Utterance] = field(default_factory=list)
    """What the agent said before the first user message."""
    greeting_tools: list[ToolUse] = field(default_factory=list)
    timeline_is_recording: bool = False
    """True when spans count from the start of the report's recording."""
    timeline_end_s: float | None = None
    """Where the report's timeline ends (its duration), when it says."""
    notices: list[Notice] = field(default_factory=list)
