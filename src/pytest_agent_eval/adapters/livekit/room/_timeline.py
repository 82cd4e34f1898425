"""A room turn's `Timeline` (issue 33): what the agent's session did, as its helper timed it in
the agent's process, with what the caller streamed on the same axis.

The helper keeps the timeline `LiveKitAdapter` keeps (`SessionTimeline`, on the session's own
events: its VAD's speech, its end of turn, the agent's speech and its text, interruptions, tool
calls, handoffs), timed from the moment it took the turn's ``begin`` request, on its own clock;
``user_speech`` is unobserved there as in process (LiveKit has one "user is speaking" signal,
its VAD's). The caller adds ``stream``: when the first and the last frame of the turn's audio
left its microphone. The two clocks are matched at that ``begin`` request: on the caller's
clock, the helper took it within the request's round trip, so the middle of it is taken for
the agent's zero, off by at most half the round trip (``metadata["livekit"]
["timeline_alignment_s"]``). Both clocks are the wall's: the record's clock is ``real``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...._serialize import from_json
from ....models import Timeline, TimelineEvent
from ....models._timeline import TIMELINE_KINDS
from ._observer import RoomTurnLog

__all__ = ["room_timeline"]

_DECIMALS = 3
"""To the millisecond, as the helper's own record."""


def room_timeline(recorded: Mapping[str, Any] | None, log: RoomTurnLog) -> Timeline | None:
    """The turn's record: the helper's ``recorded`` timeline (None: a text turn, nothing to
    draw) with the caller's stream from ``log``."""
    if recorded is None:
        return None
    agent: Timeline = from_json(Timeline, recorded)
    events = list(agent.events)
    if log.stream is not None and log.agent_zero is not None:
        start, end = (_seconds(t - log.agent_zero) for t in log.stream)
        events.append(TimelineEvent(kind="stream", t_start=start, t_end=max(start, end)))
    events.sort(key=lambda e: (e.t_start, TIMELINE_KINDS.index(e.kind)))
    return Timeline(events=events, clock="real", unobserved=list(agent.unobserved))


def _seconds(value: float) -> float:
    """Seconds from the agent's zero, to the millisecond (never before it)."""
    return max(0.0, round(value, _DECIMALS))
