"""A LiveKit session's turns on one time axis: the `Timeline` of each voice turn (issue 33).

`SessionTimeline` listens to the ``AgentSession``'s public events for the whole conversation
and marks them on a `TimelineBuilder`, on ``time.perf_counter()`` (the clock the adapter's
latencies are measured on):

- ``stream``: the first and the last frame the turn pushed into the session's microphone;
- ``vad_speech``: the session's user state, ``speaking`` to not (LiveKit sets it from the
  agent's VAD, or a realtime model's server VAD);
- ``end_of_turn``: after the user spoke, the first reply created (``speech_created``) or the
  agent going from listening to ``thinking``: it took the user's turn as over;
- ``agent_speech``: the agent state ``speaking`` (its audio playing), with the text the reply
  added to the chat;
- ``interruption``: the user starting to speak while the agent speaks, when the reply then
  ends interrupted (``real``), or LiveKit calls it a false interruption (``false``;
  ``resumed`` when the reply went on); speech over an uninterruptible reply is none;
- ``tool_call``: ``tool_call_started`` to ``tool_call_ended`` (or the tools executed);
- ``handoff``: a handoff item added to the chat.

LiveKit's session has one "user is speaking" signal, its VAD's: ``user_speech`` is declared
unobserved rather than drawn twice.
"""

from __future__ import annotations

import time
from typing import Any

from livekit.agents import AgentSession, llm
from livekit.agents.voice.events import (
    AgentFalseInterruptionEvent,
    AgentStateChangedEvent,
    ConversationItemAddedEvent,
    FunctionToolsExecutedEvent,
    SpeechCreatedEvent,
    ToolCallEnded,
    ToolCallStarted,
    ToolExecutionUpdatedEvent,
    UserStateChangedEvent,
)

from ...models import Timeline
from ...voice._timeline import TimelineBuilder
from ._compat import activity_agent, session_activity
from ._probe import agent_name

__all__ = ["SessionTimeline"]

UNOBSERVED = ("user_speech",)


class SessionTimeline:
    """One conversation's timelines: `attach` it to the session, `begin` each turn, `take` its
    record when it ends.

    Turns can overlap: a barge-in begins the interrupting turn before the interrupted one is
    finished. Each open turn has its own builder and sees every event until it is taken (the
    interrupted turn's record shows the interruption that cut it); a span that opened before a
    turn began is drawn from the turn's start.
    """

    def __init__(self) -> None:
        self._turns: dict[int, TimelineBuilder] = {}
        self.builder = _Fanout(self._turns)
        self._user_speaking = False
        self._agent_state = "initializing"
        self._overlap_at: float | None = None
        """When the user started to speak over the agent (an interruption in the making)."""
        self._last_push: float | None = None
        self._user_spoke = False
        """The user's speech ended since the last end of turn (a new agent's ``on_enter``
        reply also goes from listening to thinking: that is no end of the user's turn)."""
        self._session: AgentSession[Any] | None = None
        self._handlers: dict[str, Any] = {}
        self._agent: str | None = None

    def attach(self, session: AgentSession[Any], audio_in: Any = None) -> None:
        """Listen to ``session`` (and to the frames pushed into ``audio_in``, the adapter's
        microphone, when it has one)."""
        handlers: dict[str, Any] = {
            "user_state_changed": self._on_user_state,
            "agent_state_changed": self._on_agent_state,
            "speech_created": self._on_speech_created,
            "agent_false_interruption": self._on_false_interruption,
            "function_tools_executed": self._on_tools,
            "tool_execution_updated": self._on_tool_update,
            "conversation_item_added": self._on_item,
        }
        self._session = session
        self._handlers = handlers
        for event, handler in handlers.items():
            session.on(event, handler)  # type: ignore[arg-type]
        if audio_in is not None:
            audio_in.on_push = self._on_push

    def detach(self) -> None:
        """Stop listening to the session (it goes on without this timeline)."""
        if self._session is not None:
            for event, handler in self._handlers.items():
                self._session.off(event, handler)  # type: ignore[arg-type]

    def begin(self, index: int) -> None:
        """Turn ``index`` starts now."""
        if self._last_push is not None:  # the stream of the turn before ended with its last frame
            self.builder.mark("stream", self._last_push, edge="end")
        self._last_push = None
        if self._agent is None:
            self._agent = self._current_agent()
        for stale in [i for i in self._turns if i < index - 1]:  # a turn that raised: no take
            del self._turns[stale]
        builder = self._turns[index] = TimelineBuilder(clock="real", unobserved=UNOBSERVED)
        builder.begin(time.perf_counter())

    def take(self, index: int, voice: bool = True) -> Timeline | None:
        """Turn ``index``'s record; None for a text turn (``voice`` False) or a turn never
        begun. The turn is closed either way."""
        builder = self._turns.pop(index, None)
        if builder is None:
            return None
        if self._last_push is not None and builder.is_open("stream"):
            builder.mark("stream", self._last_push, edge="end")
        record = builder.take()
        return record if voice else None

    # -- events ---------------------------------------------------------------------------

    def _on_push(self, seconds: float) -> None:
        now = time.perf_counter()
        if self._last_push is None:
            self.builder.mark("stream", now, edge="start")
        self._last_push = now

    def _on_user_state(self, ev: UserStateChangedEvent) -> None:
        now = time.perf_counter()
        if ev.new_state == "speaking" and not self._user_speaking:
            self._user_speaking = True
            self.builder.mark("vad_speech", now, edge="start")
            if self._agent_state == "speaking":
                self._overlap_at = now
        elif ev.new_state != "speaking" and self._user_speaking:
            self._user_speaking = False
            self._user_spoke = True
            self.builder.mark("vad_speech", now, edge="end")

    def _on_agent_state(self, ev: AgentStateChangedEvent) -> None:
        now = time.perf_counter()
        old, new = ev.old_state, ev.new_state
        self._agent_state = new
        if new == "speaking":
            self.builder.mark("agent_speech", now, edge="start")
            return
        if old == "speaking":
            self.builder.mark("agent_speech", now, edge="end")
        if new == "thinking" and old == "listening":
            self._end_of_turn(now)

    def _on_speech_created(self, ev: SpeechCreatedEvent) -> None:
        self._end_of_turn(time.perf_counter())
        ev.speech_handle.add_done_callback(self._on_speech_done)

    def _on_speech_done(self, handle: Any) -> None:
        """A reply ended: interrupted while the user spoke over it, that was an interruption
        (LiveKit can decide it after the user's speech, on the words transcribed); ended on
        its own, what overlapped it interrupted nothing (an uninterruptible reply)."""
        if self._overlap_at is None:
            return
        if bool(getattr(handle, "interrupted", False)):
            self.builder.mark("interruption", self._overlap_at, kind="real")
        self._overlap_at = None

    def _end_of_turn(self, now: float) -> None:
        """The agent started its answer (a reply was created, or it began thinking): after the
        user spoke, that is where it took the user's turn as over (a realtime model creates
        its reply before the agent is seen thinking)."""
        if self._user_spoke:
            self._user_spoke = False
            self.builder.mark("end_of_turn", now)

    def _on_false_interruption(self, ev: AgentFalseInterruptionEvent) -> None:
        kind = "resumed" if ev.resumed else "false"
        if self._overlap_at is not None:
            self.builder.mark("interruption", self._overlap_at, kind=kind)
            self._overlap_at = None
        else:  # already drawn (a reply the pause let end): it was a false one
            self.builder.annotate("interruption", kind=kind)

    def _on_tool_update(self, ev: ToolExecutionUpdatedEvent) -> None:
        now = time.perf_counter()
        update = ev.update
        if isinstance(update, ToolCallStarted):
            call = update.function_call
            self.builder.mark("tool_call", now, edge="start", key=call.call_id, name=call.name)
        elif isinstance(update, ToolCallEnded):
            detail = {} if update.status == "done" else {"status": update.status}
            self.builder.mark("tool_call", now, edge="end", key=update.call_id, detail=detail)

    def _on_tools(self, ev: FunctionToolsExecutedEvent) -> None:
        now = time.perf_counter()
        for call, out in zip(ev.function_calls, ev.function_call_outputs, strict=False):
            if self.builder.is_open("tool_call", call.call_id):
                error = {"status": "error"} if out is not None and out.is_error else {}
                self.builder.mark("tool_call", now, edge="end", key=call.call_id, detail=error)

    def _on_item(self, ev: ConversationItemAddedEvent) -> None:
        item = ev.item
        now = time.perf_counter()
        if isinstance(item, llm.ChatMessage) and item.role == "assistant":
            text = (item.text_content or "").strip()
            if text:
                self.builder.annotate("agent_speech", text=text)
        elif isinstance(item, llm.AgentHandoff) and item.old_agent_id is not None:
            # Named as the turn's handoffs name them (class names), not by agent id.
            new = self._current_agent() or item.new_agent_id
            self.builder.mark("handoff", now, detail={"from": self._agent, "to": new})
            self._agent = new

    def _current_agent(self) -> str | None:
        activity = session_activity(self._session) if self._session is not None else None
        return agent_name(activity_agent(activity)) if activity is not None else None


class _Fanout:
    """Marks every open turn's builder."""

    def __init__(self, turns: dict[int, TimelineBuilder]) -> None:
        self._turns = turns

    def mark(self, kind: str, at: float, /, **options: Any) -> None:
        for builder in list(self._turns.values()):
            builder.mark(kind, at, **options)

    def annotate(self, kind: str, /, **options: Any) -> None:
        for builder in list(self._turns.values()):
            builder.annotate(kind, **options)

    def is_open(self, kind: str, key: str | None = None) -> bool:
        return any(b.is_open(kind, key) for b in list(self._turns.values()))
