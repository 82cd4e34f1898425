"""A Pipecat turn on one time axis: the `Timeline` of each voice turn (issue 33), read from the
frames the recorder observes, on the pipeline's clock (virtual at max speed).

- ``stream``: the fixture's first and last sample as the microphone pushed them;
- ``vad_speech``: ``VADUserStartedSpeakingFrame`` to ``VADUserStoppedSpeakingFrame``;
- ``user_speech``: ``UserStartedSpeakingFrame`` to ``UserStoppedSpeakingFrame`` (the user turn
  as the pipeline's turn strategies decided it);
- ``end_of_turn``: each ``UserStoppedSpeakingFrame``;
- ``agent_speech``: ``BotStartedSpeakingFrame`` to ``BotStoppedSpeakingFrame``, with the TTS text
  that left the speaker;
- ``interruption``: an ``InterruptionFrame`` while the bot speaks (``real``: Pipecat has no
  false-interruption handling);
- ``tool_call``: ``FunctionCallInProgressFrame`` to its final ``FunctionCallResultFrame`` (or
  ``FunctionCallCancelFrame``);
- ``handoff``: a Flows node change; a pipeline without Flows has no agents to hand off
  between, so ``handoff`` is declared unobserved there.
"""

from __future__ import annotations

import dataclasses

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)

from ...models import Timeline
from ...models._timeline import TimelineClock
from ...voice._timeline import TimelineBuilder

__all__ = ["FrameTimeline"]


class FrameTimeline:
    """One turn's timeline, begun at ``started_at`` on the pipeline clock."""

    def __init__(self, clock: TimelineClock, started_at: float) -> None:
        self.builder = TimelineBuilder(clock=clock)
        self.builder.begin(started_at)

    def frame(self, frame: Frame, at: float, *, bot_speaking: bool) -> None:
        """Mark what ``frame``, first pushed at ``at``, says (``bot_speaking``: the bot was
        speaking before it). The user-turn and VAD frames come in two unlinked copies: only
        a change of state is marked."""
        mark, is_open = self.builder.mark, self.builder.is_open
        if isinstance(frame, VADUserStartedSpeakingFrame):
            mark("vad_speech", at, edge="start")
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            if is_open("vad_speech"):
                mark("vad_speech", at, edge="end")
        elif isinstance(frame, UserStartedSpeakingFrame):
            mark("user_speech", at, edge="start")
        elif isinstance(frame, UserStoppedSpeakingFrame):
            if is_open("user_speech"):
                mark("user_speech", at, edge="end")
                mark("end_of_turn", at)
        elif isinstance(frame, BotStartedSpeakingFrame):
            mark("agent_speech", at, edge="start")
        elif isinstance(frame, BotStoppedSpeakingFrame):
            if is_open("agent_speech"):
                mark("agent_speech", at, edge="end")
        elif isinstance(frame, InterruptionFrame):
            if bot_speaking:
                mark("interruption", at, kind="real")
        elif isinstance(frame, FunctionCallInProgressFrame):
            mark("tool_call", at, edge="start", key=frame.tool_call_id, name=frame.function_name)
        elif isinstance(frame, FunctionCallResultFrame):
            properties = frame.properties
            if properties is not None and properties.is_final is False:
                return
            if not self.builder.is_open("tool_call", frame.tool_call_id):
                return  # a call of an earlier turn: drawn there, open
            error = {"status": "error"} if frame.error else {}
            mark("tool_call", at, edge="end", key=frame.tool_call_id, detail=error)
        elif isinstance(frame, FunctionCallCancelFrame) and self.builder.is_open(
            "tool_call", frame.tool_call_id
        ):
            cancelled = {"status": "cancelled"}
            mark("tool_call", at, edge="end", key=frame.tool_call_id, detail=cancelled)

    def spoken(self, text: str) -> None:
        """The bot's speaker played ``text``."""
        self.builder.annotate("agent_speech", text=text)

    def stream(self, start: float, end: float) -> None:
        """The fixture streamed from ``start`` to ``end``."""
        self.builder.mark("stream", start, edge="start")
        self.builder.mark("stream", end, edge="end")

    def handoff(self, at: float, before: str | None, after: str) -> None:
        """A Flows node change."""
        self.builder.mark("handoff", at, detail={"from": before, "to": after})

    def take(self, *, flows: bool) -> Timeline:
        """The turn's record (``flows``: the pipeline runs Flows, whose nodes are its agents)."""
        record = self.builder.take()
        if flows:
            return record
        return dataclasses.replace(record, unobserved=sorted({*record.unobserved, "handoff"}))
