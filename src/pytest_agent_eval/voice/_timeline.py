"""The builder of a turn's `Timeline`, framework-neutral (issue 33).

An adapter marks what it observes with its own clock's time (``builder.mark(kind, at, ...)``);
the builder owns the rest: the turn's anchor (``begin``), spans that open in one turn and close
in a later one, the order of events and the record (``take``). Spans still open when a turn
ends are written with no end and carried into the next turn, starting at its anchor: an agent
reply that goes on past the end of one turn is drawn in both.

Marks may come from another thread than ``begin``/``take`` (a Pipecat pipeline runs in its
own): the builder locks.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..models import Timeline, TimelineEvent
from ..models._timeline import TIMELINE_KINDS, TimelineClock

__all__ = ["Edge", "TimelineBuilder"]

Edge = Literal["start", "end", "moment"]

_DECIMALS = 3
"""Timeline seconds are kept to the millisecond, like the results file's latencies."""


@dataclass
class _Open:
    kind: str
    at: float
    detail: dict[str, Any] = field(default_factory=dict)


class TimelineBuilder:
    """Collects one conversation's marks and cuts them into one `Timeline` per turn.

    Args:
        clock: The clock the marks' times are on (``virtual`` or ``real``).
        unobserved: Kinds the adapter cannot observe: declared on every record.
    """

    def __init__(self, *, clock: TimelineClock, unobserved: Iterable[str] = ()) -> None:
        unknown = [k for k in unobserved if k not in TIMELINE_KINDS]
        if unknown:
            raise ValueError(f"unknown timeline kinds {unknown}")
        self.clock: TimelineClock = clock
        self.unobserved = sorted(set(unobserved))
        self._lock = threading.Lock()
        self._anchor: float | None = None
        self._events: list[tuple[str, float, float | None, dict[str, Any]]] = []
        self._open: dict[tuple[str, str | None], _Open] = {}

    @property
    def in_turn(self) -> bool:
        """True between `begin` and `take`."""
        return self._anchor is not None

    def begin(self, at: float) -> None:
        """Start a turn at ``at`` (the adapter's clock): its events are timed from here."""
        with self._lock:
            self._anchor = at
            self._events = []
            for span in self._open.values():  # carried over: they start with this turn
                span.at = max(span.at, at)

    def mark(
        self,
        kind: str,
        at: float,
        /,
        *,
        edge: Edge = "moment",
        key: str | None = None,
        detail: Mapping[str, Any] | None = None,
        **more: Any,
    ) -> None:
        """Record that ``kind`` started, ended or happened at ``at``.

        ``key`` tells apart spans of one kind open at once (two tool calls); an ``end`` with no
        open span of its kind and key is a span the builder never saw start, drawn from the
        turn's anchor. ``detail`` (and keyword arguments) is merged into the event's (an end may add what a start
        could not know, like a tool's error). Outside a turn, only spans are tracked: what is
        still open when the next turn begins appears in it.
        """
        if kind not in TIMELINE_KINDS:
            raise ValueError(f"timeline kind {kind!r}: one of {TIMELINE_KINDS}")
        detail = {**(detail or {}), **more}
        with self._lock:
            slot = (kind, key)
            if edge == "start":
                if slot not in self._open:
                    self._open[slot] = _Open(kind, at, dict(detail))
                else:
                    self._open[slot].detail.update(detail)
                return
            if edge == "end":
                span = self._open.pop(slot, None)
                if self._anchor is None:
                    return
                start = span.at if span is not None else self._anchor
                merged = {**(span.detail if span is not None else {}), **detail}
                self._events.append((kind, start, max(at, start), merged))
                return
            if self._anchor is not None:
                self._events.append((kind, at, None, dict(detail)))

    def annotate(self, kind: str, /, *, text: str | None = None, **detail: Any) -> None:
        """Add to what is known of the open span of ``kind`` (else of the turn's last event of
        it): ``detail`` replaces, ``text`` is appended to the ``text`` there (what a reply
        played arrives in pieces, and after its audio started)."""
        with self._lock:
            target: dict[str, Any] | None = None
            opened = [s for s in self._open.values() if s.kind == kind]
            if opened:
                target = opened[-1].detail
            else:
                done = [e for e in self._events if e[0] == kind]
                if done:
                    target = done[-1][3]
            if target is None:
                return
            target.update(detail)
            if text:
                target["text"] = f"{target['text']} {text}" if target.get("text") else text

    def is_open(self, kind: str, key: str | None = None) -> bool:
        """True while a span of ``kind`` (and ``key``) is open."""
        with self._lock:
            return (kind, key) in self._open

    def take(self) -> Timeline:
        """The turn's record (spans still open written without an end), and the turn closed."""
        with self._lock:
            anchor = self._anchor if self._anchor is not None else 0.0
            raw = list(self._events)
            raw += [(s.kind, s.at, None, dict(s.detail)) for s in self._open.values()]
            self._events = []
            self._anchor = None
        events = [
            TimelineEvent(
                kind=kind,  # type: ignore[arg-type]  # checked in mark()
                t_start=_seconds(start - anchor),
                t_end=None
                if end is None
                else max(_seconds(end - anchor), _seconds(start - anchor)),
                detail=detail,
            )
            for kind, start, end, detail in raw
        ]
        events.sort(key=lambda e: (e.t_start, TIMELINE_KINDS.index(e.kind)))
        return Timeline(events=events, clock=self.clock, unobserved=list(self.unobserved))


def _seconds(value: float) -> float:
    """Seconds from the anchor, to the millisecond; an event stamped before the anchor (a span
    carried over, a framework timestamp a hair early) is at 0."""
    return max(0.0, round(value, _DECIMALS))
