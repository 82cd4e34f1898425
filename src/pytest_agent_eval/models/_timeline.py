"""One voice turn on one time axis (issue 33): `Timeline`, made of `TimelineEvent`.

Every voice adapter gives the same record, on the clock the turn ran on: the user's audio as
streamed, what the agent's VAD and turn detector decided, what the agent played, interruptions,
tool calls and handoffs. What an adapter cannot observe it names in `Timeline.unobserved`
instead of leaving it out silently: an absent kind then means "did not happen", never "not
seen".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, get_args

__all__ = [
    "TIMELINE_KINDS",
    "Timeline",
    "TimelineClock",
    "TimelineEvent",
    "TimelineKind",
]

TimelineKind = Literal[
    "stream",
    "user_speech",
    "vad_speech",
    "end_of_turn",
    "agent_speech",
    "interruption",
    "tool_call",
    "handoff",
]
"""What an event is about:

- ``stream``: the user's audio as the adapter streamed it (start to end, silence included);
- ``user_speech``: the framework's own "the user is speaking" span (LiveKit's user state,
  Pipecat's ``UserStarted/StoppedSpeakingFrame``);
- ``vad_speech``: a span of speech the agent's VAD found;
- ``end_of_turn``: the moment the agent decided the user's turn was over;
- ``agent_speech``: a span of the agent's audio out, with the text it played;
- ``interruption``: the user spoke over the agent (``detail["kind"]``: ``real``, ``false``,
  ``resumed``);
- ``tool_call``: one tool call from start to end (``detail["name"]``);
- ``handoff``: the active agent changed (``detail["from"]``, ``detail["to"]``).
"""

TIMELINE_KINDS: tuple[str, ...] = get_args(TimelineKind)
"""Every kind, in the order the reports draw their lanes."""

TimelineClock = Literal["virtual", "real"]
"""``virtual``: the turn ran at max speed on a clock the adapter advanced (seconds are audio
seconds and modelled delays, not wall time); ``real``: wall-clock seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TimelineEvent:
    """One thing that happened in a turn, in seconds from the turn's start.

    Args:
        kind: What it is (see `TimelineKind`).
        t_start: When it started (a moment's only time).
        t_end: When it ended; None for a moment (``end_of_turn``) or a span still open when
            the turn ended.
        detail: What else is known: ``text`` for ``agent_speech``, ``name`` for ``tool_call``
            (and ``error`` when it failed), ``kind`` for ``interruption``, ``from``/``to`` for
            ``handoff``.
    """

    kind: TimelineKind
    t_start: float
    t_end: float | None = None
    detail: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in TIMELINE_KINDS:
            raise ValueError(f"timeline event kind {self.kind!r}: one of {TIMELINE_KINDS}")
        if self.t_end is not None and self.t_end < self.t_start:
            raise ValueError(
                f"timeline event {self.kind!r} ends ({self.t_end}) before it starts "
                f"({self.t_start})"
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class Timeline:
    """What happened in one voice turn, in order of start time.

    Args:
        events: Every event, sorted by ``t_start``.
        clock: The clock the turn ran on (``virtual`` or ``real``).
        unobserved: Kinds this adapter could not observe in this mode: their absence from
            ``events`` says nothing.
    """

    events: list[TimelineEvent] = field(default_factory=list)
    clock: TimelineClock = "real"
    unobserved: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.clock not in ("virtual", "real"):
            raise ValueError(f"timeline clock {self.clock!r}: 'virtual' or 'real'")
        unknown = [k for k in self.unobserved if k not in TIMELINE_KINDS]
        if unknown:
            raise ValueError(f"timeline unobserved kinds {unknown}: one of {TIMELINE_KINDS}")

    def of(self, kind: str) -> list[TimelineEvent]:
        """The events of ``kind``, in order."""
        return [e for e in self.events if e.kind == kind]

    @property
    def kinds(self) -> set[str]:
        """The kinds that occur."""
        return {e.kind for e in self.events}

    @property
    def end_s(self) -> float:
        """The last time on the record (0.0 when empty)."""
        return max(
            (e.t_end if e.t_end is not None else e.t_start for e in self.events), default=0.0
        )
