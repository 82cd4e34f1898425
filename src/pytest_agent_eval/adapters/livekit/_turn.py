"""What happened in one turn of a LiveKit session, and when the agent is really done with it.

`TurnRecorder` listens to a session's public events for the whole conversation and cuts them
into turns: the reply (every assistant message, in order), the tool calls the turn made, the
speech the agent started on its own (greeting, ``on_enter`` after a handoff, ``say`` from a
tool) with its cause, and the handoffs (the records, and the `TurnCapture` it hands over, are
in `_turn_capture`). `SessionProbe` (`_probe`) reads the session's state to say what the agent
is still busy with; `TurnRecorder.settle` waits, on events and task completions only, until
nothing is left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from livekit.agents import AgentSession, APIConnectionError, llm
from livekit.agents.voice.events import (
    AgentStateChangedEvent,
    CloseEvent,
    ConversationItemAddedEvent,
    ErrorEvent,
    FunctionToolsExecutedEvent,
    SpeechCreatedEvent,
    ToolCallEnded,
    ToolCallStarted,
    ToolExecutionUpdatedEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
)

from ..._compat.livekit_openai import watch_provider_closes
from ...errors import AdapterError, AgentCrashError, AgentEvalError
from ...models import AgentSpeech, Crash, Handoff
from .._crash import agent_packages, crash_through
from ._compat import (
    activity_agent,
    activity_rt_turn_detection,
    recognition_vad_stream,
    running_activity,
    running_in_on_enter,
    running_speech,
    running_tool_call,
    session_target_agent,
    task_answers,
    tools_want_reply,
)
from ._probe import SessionProbe, _auto_tool_reply, _connection_lost, _first_of, agent_name
from ._turn_capture import (
    SpeechTexts,
    TurnCapture,
    _CallRecord,
    _events,
    _HandoffItem,
    _Said,
    _Speech,
    _speech_latency,
    _ToolReply,
)

__all__ = ["SLOW_AGENT", "SessionClosedError", "Stage", "TurnRecorder"]

T = TypeVar("T")

GREETING = None
"""The turn index of what happens while the session starts, before turn 1."""


SLOW_AGENT = "If the agent is only slow, raise LiveKitAdapter(timeout_s=...)."


@dataclass
class Stage:
    """What a turn is waiting for right now, and what to suggest if it never comes."""

    text: str = "starting"
    hint: str = SLOW_AGENT

    def set(self, text: str, hint: str = SLOW_AGENT) -> None:
        self.text = text
        self.hint = hint


class SessionClosedError(AdapterError):
    """The session closed itself in the middle of a turn (usually an unrecoverable error)."""


@dataclass
class _Counter:
    """A count that coroutines can wait on."""

    value: int = 0
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    def bump(self) -> None:
        self.value += 1
        self._changed.set()

    async def reach(self, target: int) -> None:
        while self.value < target:
            self._changed.clear()
            await self._changed.wait()


class TurnRecorder:
    """Listens to a session for one conversation and cuts what happens into turns.

    Everything it records comes from public session events: assistant messages and handoffs
    from ``conversation_item_added``, tool calls from ``tool_execution_updated`` (the turn
    that made a call is the one running when it started) and ``function_tools_executed``
    (outputs, and calls to tools the agent does not have), every speech from
    ``speech_created``, transcripts from ``user_input_transcribed`` and the end of the
    user's speech from ``user_state_changed``.
    """

    def __init__(self, session: AgentSession[Any]) -> None:
        self._session = session
        watch_provider_closes()  # so a provider's close mid-turn is named with its code
        self.probe = SessionProbe(session)
        self.turn: int | None = GREETING
        """Zero-based index of the turn in progress; None while the session starts."""
        self.sending_text = False
        """True while the adapter itself asks the session to answer a text turn."""
        self.finals: list[str] = []
        self.errors: list[str] = []
        """Errors the session reported during the turn (LLM, STT, TTS), as text."""
        self.unrecoverable = 0
        self.connection_lost: str | None = None
        """Why the turn cannot be evaluated when a realtime model lost its provider's
        connection during it (the plugin reconnects and drops the reply it was making)."""
        self.crashes: list[AgentCrashError] = []
        """How the agent crashed since the last `take_crash` (an exception LiveKit logged from
        the agent's code, an error the session could not recover from), oldest first."""
        self.crashed = asyncio.Event()
        """Set while a crash is recorded and not yet taken (`take_crash`): a wait under
        `unless_crashed` ends there."""
        self.final_count = _Counter()
        self.segments_recognized = _Counter()
        """Speech segments our own STTs finished (including empty transcripts)."""
        self.segment_texts: list[str] = []
        """What our own STTs made of each of those segments, in order."""
        self.speech_ended = _Counter()
        """Times the user went from speaking to listening."""
        self.speech_ended_at: list[float] = []
        """``time.perf_counter()`` of each of those times."""
        self.started_at = time.perf_counter()
        """When the conversation started (the recorder is made just before the session)."""
        self.carried_over: set[str] = set()
        """Speeches whose turn a barge-in ended while they played: what they say after that
        belongs to their own turn (`TurnCapture.late_speech`), not to the one in progress."""
        self._carried_turn: int | None = None
        self.reported: set[str] = set()
        """Speeches whose words their turn already reported (what played of a reply a
        barge-in cut): a message they add later is in no turn's reply."""
        self._items: list[Any] = []
        self._said: list[_Said] = []
        self._handoffs: list[Handoff] = []
        self._handoff_at: dict[str, float] = {}
        """``time.perf_counter()`` of the latest handoff to each agent (by name)."""
        self._calls: dict[str, _CallRecord] = {}
        self._call_order: list[str] = []
        self._late: list[str] = []
        self._speeches: dict[str, _Speech] = {}
        self._tool_errors: dict[str, str] = {}
        self._orphan_tool_errors: list[tuple[str | None, str | None, str]] = []
        self._texts: SpeechTexts | None = None
        self._speech_count = 0
        self.began_reply = False
        """Whether the turn `end_turn` last closed started any speech (a reply begun, even one
        that said nothing): an agent that started none ignored the caller (`_silence`)."""
        self._tool_reply: _ToolReply | None = None
        """The reply the model owes to the latest tool results, until it comes."""
        self._agent = ""
        self._agent_obj: Any = None
        self._changed = asyncio.Event()
        self._calls_changed = asyncio.Event()
        """Set on every tool update (its own event: `settle` reads ``_changed``)."""
        self._closed: asyncio.Future[CloseEvent] = asyncio.get_running_loop().create_future()
        self._handlers: list[tuple[str, Callable[..., None]]] = [
            ("conversation_item_added", self._on_item),
            ("function_tools_executed", self._on_tools),
            ("tool_execution_updated", self._on_tool_update),
            ("speech_created", self._on_speech),
            ("user_input_transcribed", self._on_transcript),
            ("user_state_changed", self._on_user_state),
            ("agent_state_changed", self._on_agent_state),
            ("error", self._on_error),
            ("close", self._on_close),
        ]
        for event, handler in self._handlers:
            session.on(event, handler)  # type: ignore[arg-type]

    def detach(self) -> None:
        """Stop listening."""
        for event, handler in self._handlers:
            self._session.off(event, handler)  # type: ignore[arg-type]
        if not self._closed.done():
            self._closed.cancel()

    def read_speech_texts(self, texts: SpeechTexts) -> None:
        """Where to read what each speech sent to the transcription output, and when."""
        self._texts = texts

    # -- turn boundaries ------------------------------------------------------------------

    def begin_turn(self, index: int) -> None:
        """Start turn ``index`` (zero-based): per-turn counters start from zero."""
        self.turn = index
        self.finals = []
        self.errors = []
        self.unrecoverable = 0
        self.connection_lost = None
        self.final_count = _Counter()
        self.segments_recognized = _Counter()
        self.segment_texts = []
        self.speech_ended = _Counter()
        self.speech_ended_at = []

    def end_turn(self, anchors: Sequence[float] = ()) -> TurnCapture:
        """What the turn in progress captured; the recorder then starts afresh.

        Args:
            anchors: ``time.perf_counter()`` of each end of the user's speech (or of sending a
                text turn): what speech the agent started during the turn counts its latency
                from, unless a handoff brought the speaking agent in.
        """
        turn = self.turn
        said = self._resolve_said()
        earlier = [s for s in said if self._said_before(s, turn)]
        late_said = [(self._said_turn(s), s.text) for s in earlier]
        said = [s for s in said if not self._said_before(s, turn)]
        earlier_items = {id(s.item) for s in earlier if s.item is not None}
        reply = " ".join(s.text for s in said if s.text)
        first_text = [
            at
            for s in said
            if s.handle_id is not None
            and self._texts is not None
            and (at := self._texts.first_text_time(s.handle_id)) is not None
        ]
        calls = [self._calls[c] for c in self._call_order if self._calls[c].turn == turn]
        late = [self._calls[c] for c in self._late if self._calls[c].turn != turn]
        by_handle: dict[str, list[_Said]] = {}
        for s in said:
            if s.handle_id is not None:
                by_handle.setdefault(s.handle_id, []).append(s)
        agent_speech: list[AgentSpeech] = []
        seen: set[str] = set()
        for s in said:
            speech = self._speeches.get(s.handle_id or "")
            if speech is None or speech.cause == "user" or s.handle_id in seen:
                continue
            seen.add(speech.handle.id)
            parts = by_handle[speech.handle.id]
            first = self._texts.first_text_time(speech.handle.id) if self._texts else None
            agent_speech.append(
                AgentSpeech(
                    text=" ".join(p.text for p in parts if p.text),
                    cause=speech.cause,
                    agent=parts[0].agent or speech.agent,
                    turn_index=speech.turn,
                    started_at_s=None if first is None else max(0.0, first - self.started_at),
                    latency_s=_speech_latency(speech, first, anchors),
                )
            )
        items = [i for i in self._items if id(i) not in earlier_items]
        capture = TurnCapture(
            reply=reply,
            items=items,
            tool_calls=[c.tool_call() for c in calls],
            pending_tool_calls=[c.unfinished() for c in calls if not c.finished],
            late_tool_results=[
                {
                    "call_id": c.call_id,
                    "name": c.name,
                    "turn_index": c.turn,
                    "output": c.output,
                    "is_error": c.is_error,
                    "error": c.error,
                    "cancelled": c.cancelled,
                }
                for c in late
            ],
            agent_speech=agent_speech,
            handoffs=list(self._handoffs),
            agent=self.current_agent,
            events=_events(items),
            late_speech=[(t, text) for t, text in late_said if text],
            first_text_at=min(first_text, default=None),
            speech_ids=[s.handle_id for s in said if s.handle_id is not None],
            unfinished_calls=[c for c in calls if not c.finished],
        )
        self.began_reply = any(s.turn == turn for s in self._speeches.values())
        self._items = []
        self._said = []
        self._handoffs = []
        if self._carried_turn is not None and turn is not None and turn > self._carried_turn:
            self.carried_over.clear()  # the turn after the barge-in is over
            self._carried_turn = None
        self._late = []
        self._call_order = [c for c in self._call_order if not self._calls[c].done]
        for cid in list(self._calls):
            if self._calls[cid].done and cid not in self._call_order:
                del self._calls[cid]
        done = [sid for sid, s in self._speeches.items() if s.handle.done()]
        for sid in done:
            del self._speeches[sid]
        return capture

    def _said_turn(self, said: _Said) -> int | None:
        speech = self._speeches.get(said.handle_id or "")
        return speech.turn if speech is not None else None

    def _said_before(self, said: _Said, turn: int | None) -> bool:
        """Said by a speech of an earlier turn that a barge-in ended while the speech was still
        going (`carry_over`): its words belong to that turn, wherever they land in time (the
        interrupted reply's message, added once it stops; a tool's follow-up finishing later).
        Otherwise words belong to the turn they are said in: an ordinary turn ends only once
        its speech is done, and a speech waiting for an `AgentTask` goes on answering the
        turn that completed the task."""
        speech = self._speeches.get(said.handle_id or "")
        if speech is None or turn is None or said.handle_id not in self.carried_over:
            return False
        return speech.turn is None or speech.turn < turn

    def carry_over(self) -> list[Any]:
        """A barge-in ends the turn in progress while its speech goes on: every speech of
        that turn not done yet keeps its words for it until the next turn ends. Returns their
        handles."""
        handles = [
            s.handle for s in self._speeches.values() if s.turn == self.turn and not s.handle.done()
        ]
        self.carried_over.update(h.id for h in handles)
        self._carried_turn = self.turn
        return handles

    def take_said(self, turn: int | None) -> list[tuple[str, str | None]]:
        """What speeches of the earlier ``turn`` said since it ended, as (text, speech id), in
        order; taken out of the turn in progress (the earlier turn reports it)."""
        said = self._resolve_said()
        taken = [s for s in said if self._said_before(s, self.turn) and self._said_turn(s) == turn]
        self._said = [s for s in self._said if s not in taken]
        items = {id(s.item) for s in taken if s.item is not None}
        self._items = [i for i in self._items if id(i) not in items]
        return [(s.text, s.handle_id) for s in taken]

    @property
    def current_agent(self) -> str:
        """Class name of the session's current agent."""
        try:
            return agent_name(self._session.current_agent)
        except RuntimeError:
            return self._agent

    def _speech_of(self, item: Any) -> Any:
        """The speech handle whose chat items hold ``item`` (None: none known yet)."""
        for speech in self._speeches.values():
            if any(i is item for i in speech.handle.chat_items):
                return speech.handle
        return None

    def _resolve_said(self) -> list[_Said]:
        """Attach each message to the speech that said it (found in its ``chat_items``)."""
        said = list(self._said)
        handles = [s.handle for s in self._speeches.values()]
        for s in said:
            if s.handle_id is None and s.item is not None:
                for handle in handles:
                    if any(item is s.item for item in handle.chat_items):
                        s.handle_id = handle.id
                        break
        return said

    # -- waiting ---------------------------------------------------------------------------

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, or raise `SessionClosedError` if the session closes first."""
        task = asyncio.ensure_future(awaitable)
        try:
            waited: set[asyncio.Future[Any]] = {task, self._closed}
            done, _ = await asyncio.wait(waited, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        ev = self._closed.result()
        if isinstance(ours := getattr(ev.error, "error", None), AgentEvalError):
            raise ours  # ours, inside LiveKit's model error (a scripted model's refusal)
        cause = f": {ev.error}" if ev.error is not None else ""
        raise SessionClosedError(f"the session closed during the turn ({ev.reason}){cause}")

    async def calls_ended(self, calls: Sequence[_CallRecord]) -> None:
        """Return once every one of ``calls`` (records of earlier turns' captures) returned,
        failed or was cancelled."""
        while not all(c.done or c.cancelled for c in calls):
            self._calls_changed.clear()
            await self._calls_changed.wait()

    async def settle(self, on_wait: Callable[[str], None]) -> None:
        """Return once the agent is really done: no handoff pending, no tool running, no
        speech scheduled or playing, the new agent's ``on_enter`` finished, the session idle.

        Only events and task completions wake it; ``on_wait`` hears what it waits for (for
        the timeout message).
        """
        while True:
            self._changed.clear()
            self._raise_connection_lost()
            busy = self.probe.busy(self.running_tools) or self._owed_tool_reply()
            if busy is None:
                on_wait(
                    "the session to finish end-of-turn detection and become idle "
                    "(session.wait_for_idle)"
                )
                # wait_for_idle also waits out a reply it sees start; race it against the
                # events, so a new reply or tool is named while it is pending.
                idle = asyncio.ensure_future(self._session.wait_for_idle())
                changed = asyncio.ensure_future(self._changed.wait())
                try:
                    await self.guard(
                        asyncio.wait({idle, changed}, return_when=asyncio.FIRST_COMPLETED)
                    )
                finally:
                    for future in (idle, changed):
                        if not future.done():
                            future.cancel()
                if not idle.done() or idle.cancelled():
                    continue
                idle.result()
                if self._changed.is_set() or self.probe.busy(self.running_tools) is not None:
                    continue
                if self._owed_tool_reply() is not None:
                    continue
                self._raise_connection_lost()
                return
            what, waits = busy
            on_wait(what)
            await self.guard(_first_of([*waits, self._changed.wait()]))

    def _owed_tool_reply(self) -> tuple[str, list[Awaitable[Any]]] | None:
        """The reply the model owes to tool results, while it may still come; raises when
        LiveKit stopped the speech that was to say it before it was generated.

        A realtime model that generates that reply itself leaves nothing pending between the
        tools' return and the new speech; one that does not says it on the same handle.
        """
        owed = self._tool_reply
        if owed is None:
            return None
        handle = owed.handle
        if owed.auto and self._speech_count > owed.speeches:
            self._tool_reply = None  # the model's own reply is a speech of its own
            return None
        if handle.interrupted:
            self._tool_reply = None
            self._raise_connection_lost()  # what cut the speech, if it was that
            raise AdapterError(
                f"the agent's speech {handle.id} was interrupted while its tools "
                f"{', '.join(owed.names)} ran, with no user speech after them, so "
                f"{owed.what} was never generated and the turn cannot be evaluated"
                + self._lost_reply_cause()
            )
        if not owed.auto and handle.done():
            self._tool_reply = None  # the handle said all it had to say
            return None
        return f"{owed.what} (the model)", []

    def _raise_connection_lost(self) -> None:
        if self.connection_lost is not None:
            raise AdapterError(self.connection_lost)

    def _lost_reply_cause(self) -> str:
        """Why a reply owed to tools was lost, when the wiring says (else: who interrupted)."""
        activity = self.probe.activity
        server = activity_rt_turn_detection(activity) if activity is not None else None
        recognition = self.probe.recognition
        own_vad = recognition is not None and recognition_vad_stream(recognition) is not None
        if server and own_vad:
            return (
                ". The likely cause is LiveKit's: on a realtime model whose server takes the "
                "turns, a session given vad= still ends each user turn itself and then "
                "interrupts every speech waiting for its tools (livekit-agents' "
                "_user_turn_completed_impl); when its VAD ends the turn after the model "
                "answered it, the reply to the tools is lost, in production too. Remove vad= "
                "from the AgentSession (the model's server then takes the turns alone), or use "
                'turn_handling={"turn_detection": "vad"} on a model that hands the turns over'
            )
        return " (the agent's code, or LiveKit, interrupted it: ctx.speech_handle.interrupt()?)"

    def last_tool(self) -> str | None:
        """``last it ran tool 'book' (still running)``: the turn's latest tool call, for the
        message of an agent that said nothing in time; None when it called none."""
        own = [self._calls[c] for c in self._call_order if self._calls[c].turn == self.turn]
        if not own:
            return None
        call = own[-1]
        if call.cancelled:
            state = "cancelled"
        elif call.started and not call.done:
            state = "still running"
        else:
            state = "failed" if call.is_error else "returned"
        return f"last it ran tool {call.name!r} ({state})"

    def running_tools(self) -> list[str]:
        """Names of the calls that started and have not ended, oldest first."""
        return [
            self._calls[c].name
            for c in self._call_order
            if self._calls[c].started and not self._calls[c].done
        ]

    # -- tool exceptions, from the log scope -----------------------------------------------

    def owns_speech(self, speech_id: str) -> bool:
        return speech_id in self._speeches

    def on_tool_exception(
        self, *, call_id: str | None, function: str | None, speech_id: str | None, text: str
    ) -> None:
        if call_id is not None:
            self._tool_errors[call_id] = text
            return
        self._orphan_tool_errors.append((function, speech_id, text))

    def _error_for(self, call_id: str, name: str) -> str | None:
        if call_id in self._tool_errors:
            return self._tool_errors.pop(call_id)
        for i, (function, _speech, text) in enumerate(self._orphan_tool_errors):
            if function == name:
                del self._orphan_tool_errors[i]
                return text
        return None

    # -- event handlers -------------------------------------------------------------------

    def _on_item(self, ev: ConversationItemAddedEvent) -> None:
        item = ev.item
        if isinstance(item, llm.ChatMessage) and item.role == "assistant":
            handle = running_speech()
            if handle is None:
                handle = self._speech_of(item)
            owed = self._tool_reply
            if owed is not None and handle is not None and handle is owed.handle:
                self._tool_reply = None  # the reply to the tool results came
            if handle is not None and handle.id in self.reported:
                self._changed.set()
                return
            activity = running_activity()
            speaker = (
                agent_name(activity_agent(activity)) if activity is not None else self.current_agent
            )
            self._items.append(item)
            self._said.append(
                _Said(
                    text=(item.text_content or "").strip(),
                    agent=speaker,
                    handle_id=handle.id if handle is not None else None,
                    item=item,
                )
            )
        elif isinstance(item, llm.AgentHandoff):
            # Emitted just after the session switched activities: the new one is current.
            activity = self.probe.activity
            new_agent = activity.agent if activity is not None else None
            new = agent_name(new_agent) if new_agent is not None else self.current_agent
            if item.old_agent_id is not None:
                self._handoffs.append(Handoff(self._agent or None, new))
                self._handoff_at[new] = time.perf_counter()
                self._items.append(
                    _HandoffItem(
                        item=item,
                        old=self._agent,
                        new=new,
                        old_agent=self._agent_obj,
                        new_agent=new_agent,
                    )
                )
            self._agent = new
            self._agent_obj = new_agent
        self._changed.set()

    def _on_tool_update(self, ev: ToolExecutionUpdatedEvent) -> None:
        update = ev.update
        if isinstance(update, ToolCallStarted):
            call = update.function_call
            if call.call_id not in self._calls:
                self._calls[call.call_id] = _CallRecord(
                    call_id=call.call_id,
                    name=call.name,
                    arguments=call.arguments,
                    turn=self.turn,
                    started=True,
                )
                self._call_order.append(call.call_id)
        elif isinstance(update, ToolCallEnded):
            record = self._calls.get(update.call_id)
            if record is not None and update.status == "error":
                # The exception's message, in case its full text never reached the log scope.
                record.ended_message = update.message
            elif record is not None and update.status == "cancelled":
                record.cancelled = True
        self._changed.set()
        self._calls_changed.set()

    def _on_tools(self, ev: FunctionToolsExecutedEvent) -> None:
        for call, out in zip(ev.function_calls, ev.function_call_outputs, strict=False):
            self._items.append(call)
            if out is not None:
                self._items.append(out)
            record = self._calls.get(call.call_id)
            if record is None:
                # Never started (unknown tool, bad arguments): made by the turn in progress.
                record = _CallRecord(
                    call_id=call.call_id,
                    name=call.name,
                    arguments=call.arguments,
                    turn=self.turn,
                    started=False,
                )
                self._calls[call.call_id] = record
                self._call_order.append(call.call_id)
            record.arguments = call.arguments
            record.output = out.output if out is not None else None
            record.is_error = bool(out is not None and out.is_error)
            record.done = True
            if out is None:
                record.cancelled = True  # executed and stopped: no output ever came
            if record.is_error:
                # The exception as the tool raised it, else what LiveKit said of the failure.
                record.error = (
                    self._error_for(call.call_id, call.name)
                    or record.ended_message
                    or (str(record.output) if record.output is not None else "failed")
                )
            if record.turn != self.turn:
                self._late.append(call.call_id)
        handle = running_speech()
        if handle is not None and tools_want_reply(ev):
            self._tool_reply = _ToolReply(
                handle=handle,
                names=[c.name for c in ev.function_calls],
                speeches=self._speech_count,
                auto=_auto_tool_reply(running_activity()),
            )
        self._changed.set()
        self._calls_changed.set()

    def _on_speech(self, ev: SpeechCreatedEvent) -> None:
        handle = ev.speech_handle
        activity = running_activity()
        creator = (
            agent_name(activity_agent(activity)) if activity is not None else self.current_agent
        )
        cause = self._cause()
        if cause == "other" and not ev.user_initiated and ev.source == "generate_reply":
            # Created by the session itself, not by the agent's code: a realtime model's own
            # reply to the turn its server detected (the model's task creates it).
            cause = "user"
        trigger_at = None
        if cause == "greeting":
            trigger_at = self.started_at
        elif cause == "on_enter":
            trigger_at = self._handoff_at.get(creator)
        self._speeches[handle.id] = _Speech(
            handle=handle, cause=cause, turn=self.turn, agent=creator, trigger_at=trigger_at
        )
        self._speech_count += 1
        handle.add_done_callback(self._on_speech_done)
        self._changed.set()

    def _on_speech_done(self, handle: Any) -> None:
        """A speech that added nothing to the chat (``say(..., add_to_chat_ctx=False)``) was
        still said: it counts with the text it sent to the transcription output."""
        self._changed.set()
        speech = self._speeches.get(handle.id)
        if speech is None or self._texts is None:
            return
        if any(isinstance(i, llm.ChatMessage) for i in handle.chat_items):
            return
        if any(s.handle_id == handle.id for s in self._said):
            return
        text = self._texts.text_of(handle.id).strip()
        if text:
            self._said.append(_Said(text=text, agent=speech.agent, handle_id=handle.id))

    def _cause(self) -> str:
        """Why a speech is being created right now, from the task creating it.

        ``user`` for a reply to the user's turn; otherwise the agent speaks on its own:
        ``greeting`` (the first agent's ``on_enter`` while the session starts), ``on_enter``
        (an agent entered by a handoff), ``on_exit``, ``tool`` (``say``/``generate_reply``
        inside a tool) or ``other``.
        """
        if self.sending_text:
            return "user"
        task = asyncio.current_task()
        if running_tool_call(task) is not None:
            return "tool"
        if running_in_on_enter():
            return "greeting" if self.turn is GREETING else "on_enter"
        # "user": the reply to the user's turn (or its preemptive generation).
        return task_answers(task) or "other"

    def _on_transcript(self, ev: UserInputTranscribedEvent) -> None:
        if ev.is_final and ev.transcript:
            self.finals.append(ev.transcript)
            self.final_count.bump()
        self._changed.set()

    def _on_user_state(self, ev: UserStateChangedEvent) -> None:
        if ev.old_state == "speaking" and ev.new_state != "speaking":
            self.speech_ended_at.append(time.perf_counter())
            self.speech_ended.bump()
        if ev.new_state == "speaking":
            # The user speaks again: a reply still owed to tools is that barge-in's business.
            self._tool_reply = None
        self._changed.set()

    def _on_agent_state(self, ev: AgentStateChangedEvent) -> None:
        self._changed.set()

    def on_segment(self, text: str) -> None:
        """Listener for `SegmentSTT`: one more segment recognized."""
        self.segment_texts.append(text)
        self.segments_recognized.bump()
        self._changed.set()

    def _on_error(self, ev: ErrorEvent) -> None:
        error = getattr(ev.error, "error", ev.error)
        source = type(ev.source).__name__
        recoverable = getattr(ev.error, "recoverable", None)
        kind = "recoverable" if recoverable else "unrecoverable"
        if not recoverable:
            self.unrecoverable += 1
        if not recoverable and not isinstance(error, AgentEvalError):
            # The session gives up on it: the agent's provider or pipeline broke, or the
            # user's code it called (a scripted model's rule callback) raised; one of our
            # offline services refusing, an AgentEvalError, is ours: no crash of the agent.
            said = f"the session could not recover from an error of its {source}"
            own = agent_packages(session_target_agent(self._session))
            elsewhere = f"{source} (an unrecoverable error event of the AgentSession)"
            self.crashes.append(crash_through(error, said, elsewhere=elsewhere, own=own))
            self.crashed.set()
        self.errors.append(f"{source} ({kind}): {type(error).__name__}: {error}")
        if isinstance(ev.source, llm.RealtimeModel) and isinstance(error, APIConnectionError):
            lost = _connection_lost(ev.source, error)
            if lost is not None:
                self.connection_lost = lost
        self._changed.set()

    def on_agent_exception(self, exc: BaseException, logged: str) -> None:
        """From the log scope: ``exc`` escaped the agent's code in a task of this session
        (one of ours, an `AgentEvalError` such as a cassette that no longer fits, is not the
        agent's crash: our adapter reports it). The running agent's package (a handoff's agent
        runs before its on_enter) is the agent's code, installed or not."""
        own = agent_packages(session_target_agent(self._session))
        crash = None if isinstance(exc, AgentEvalError) else Crash.from_agent_code(exc, own=own)
        if crash is None:
            # LiveKit's own (a provider connection it reconnects): an error it could not
            # recover from comes as an unrecoverable error event instead.
            return
        said = f"the agent's code raised {crash.describe()} (LiveKit logged: {logged!r})"
        kind, detail, where = crash.type, crash.message, crash.where
        self.crashes.append(AgentCrashError(said, kind=kind, detail=detail, where=where))
        self.crashed.set()
        self._changed.set()

    def take_crash(self) -> AgentCrashError | None:
        """The first crash since the last call, or None; the rest are forgotten (the first
        is the cause, what follows its consequence)."""
        self.crashed.clear()
        if not self.crashes:
            return None
        first, self.crashes = self.crashes[0], []
        return first

    def _on_close(self, ev: CloseEvent) -> None:
        if not self._closed.done():
            self._closed.set_result(ev)

    # -- results --------------------------------------------------------------------------

    @property
    def heard(self) -> str:
        """The user's speech as the session's STT transcribed it."""
        return " ".join(t.strip() for t in self.finals if t.strip())
