"""A Pipecat bot hanging up: the frames that end its pipeline, as a hang-up (``call_ended``).

A bot ends a call the way Pipecat's docs have it end one: a function pushes an
``EndTaskFrame`` (or ``CancelTaskFrame``) upstream, or the bot's code queues an ``EndFrame``
(or ``CancelFrame``) on its worker; Pipecat then runs the pipeline down. The recorder notes
the first of these frames pushed in a turn (`HangUps.seen`), unless the adapter itself is
ending the pipeline (`HangUps.closing`, set when the conversation closes). The turn then ends
normally with what the bot said, its reply says ``call_ended`` and names the frame in its
metadata (``hang_up``), and a later turn is an error saying the bot had hung up.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pipecat.frames.frames as frames

__all__ = ["END_FRAMES", "HangUp", "HangUps"]

END_FRAMES: tuple[type[frames.Frame], ...] = tuple(
    kind
    for kind in (
        getattr(frames, name, None)
        for name in (
            "EndFrame",
            "EndTaskFrame",
            "EndWorkerFrame",
            "CancelFrame",
            "CancelTaskFrame",
            "CancelWorkerFrame",
        )
    )
    if isinstance(kind, type) and issubclass(kind, frames.Frame)
)
"""The frames that end a pipeline, as far as this Pipecat has them."""


@dataclass(frozen=True)
class HangUp:
    """One frame that ended the bot's pipeline: which, when, and in which turn."""

    frame: str
    at: float
    turn_index: int | None


@dataclass
class HangUps:
    """The hang-ups seen in one pipeline, oldest first."""

    seen: list[HangUp] = field(default_factory=list)
    closing: bool = False
    """True once the adapter ends the pipeline itself: its own end frames are no hang-up."""

    def note(self, frame: frames.Frame, at: float, turn_index: int | None) -> bool:
        """Note ``frame`` if it ends the pipeline and the bot pushed it; whether it did."""
        if self.closing or not isinstance(frame, END_FRAMES):
            return False
        self.seen.append(HangUp(type(frame).__name__, at, turn_index))
        return True

    def since(self, start: int) -> HangUp | None:
        """The first hang-up after the first ``start`` ones, if any."""
        return self.seen[start] if len(self.seen) > start else None

    def describe(self) -> str | None:
        """Who hung up and when, for the error of a turn after it; None if nobody did."""
        if not self.seen:
            return None
        first = self.seen[0]
        index = first.turn_index
        when = "before the first turn" if index is None else f"in turn {index + 1}"
        return f"the bot hung up {when} (it pushed {first.frame})"
