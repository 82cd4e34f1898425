"""What happened in one turn of a LiveKit session, and when the agent is really done with it.

`TurnRecorder` listens to a session's public events for the whole conversation and cuts them
into turns: the reply (every assistant message, in order), the tool calls the turn made, the
speech the agent started on its own (greeting, ``on_enter`` after a handoff, ``say`` from a
tool) with its cause, and the handoffs. `SessionProbe` reads the session's state to say what
the agent is still busy with; `TurnRecorder.settle` waits, on events and task completions only,
until nothing is left.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

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

from ..._compat.livekit_openai import provider_close, watch_provider_closes
from ...errors import AdapterError, AgentCrashError, AgentEvalError
from ...models import AgentSpeech, Crash, Handoff, ToolCall, Usage
from .._crash import agent_packages, crash_through
from ._compat import (
    activity_agent,
    activity_current_speech,
    activity_has_queued_speech,
    activity_on_enter_task,
    activity_recognition,
    activity_rt_turn_detection,
    activity_running_speech_tasks,
    activity_scheduling_paused,
    agent_switch_lock,
    agent_switch_task,
    recognition_vad_stream,
    running_activity,
    running_in_on_enter,
    running_speech,
    running_tool_call,
    session_activity,
    session_target_agent,
    task_answers,
    task_hands_back,
    tools_want_reply,
)
from ._lock_free import LockFree

__all__ = [
    "SLOW_AGENT",
    "SessionClosedError",
    "SessionProbe",
    "SpeechTexts",
    "Stage",
    "TurnCapture",
    "TurnRecorder",
    "llm_usage",
    "usage_delta",
]

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


def agent_name(agent: Any) -> str:
    """How reports name an agent: its class name."""
    return type(agent).__name__


class SessionProbe:
    """Says what a session's agent is still busy with, and what to wait on until that changes."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self._session = session

    @property
    def activity(self) -> Any:
        """The session's current ``AgentActivity`` (None before start or after close)."""
        return session_activity(self._session)

    @property
    def recognition(self) -> Any:
        """The current activity's audio recognition (one per start/resume of an agent).

        A new one means new VAD streams: frames from then on are cut afresh.
        """
        activity = self.activity
        return activity_recognition(activity) if activity is not None else None

    def busy(
        self, running_tools: Callable[[], list[str]]
    ) -> tuple[str, list[Awaitable[Any]]] | None:
        """What the agent still does, and awaitables that finish when that may have changed.

        None when nothing is pending: no handoff under way, the current agent started and its
        ``on_enter`` finished, no speech or tool task running, no speech queued, the user not
        speaking. (The caller still has ``session.wait_for_idle`` check end-of-turn
        detection.)
        """
        session = self._session
        agent = session_target_agent(session)
        switch = agent_switch_task(session)
        if switch is not None:
            return f"the handoff to {agent_name(agent)} to finish", [switch]
        lock = agent_switch_lock(session)
        if lock.locked():
            return f"the agent switch to {agent_name(agent)} to finish", [LockFree(lock)]
        activity = self.activity
        if activity is None:
            return "the session to run an agent", []
        current = activity_agent(activity)
        name = agent_name(current)
        if task_hands_back(current):
            # An AgentTask that completed hands control back to the agent that awaited it.
            return f"the completed task {name} to hand back to the agent that started it", []
        if activity_scheduling_paused(activity):
            return f"{name}'s activity to start", []
        on_enter = activity_on_enter_task(activity)
        if on_enter is not None:
            return f"{name}.on_enter() to finish", [on_enter]
        tasks = activity_running_speech_tasks(activity)
        if tasks:
            tools = running_tools()
            speech = activity_current_speech(activity)
            if tools:
                what = f"the tool {', '.join(tools)} of {name} to return"
            elif speech is not None and session.agent_state == "speaking":
                what = f"{name}'s speech to finish playing ({speech.id})"
            elif speech is not None:
                what = f"{name}'s reply to be generated (the LLM; {speech.id})"
            else:
                what = f"{name}'s reply to finish"
            return what, list(tasks)
        if activity_has_queued_speech(activity) or activity_current_speech(activity) is not None:
            return f"{name}'s queued speech to play", []
        if session.user_state == "speaking":
            return "the user's speech to end (the session's VAD)", []
        return None


def _connection_lost(model: llm.RealtimeModel, error: Exception) -> str | None:
    """The turn's error when the realtime model's provider connection went while a response
    was under way: the provider's own close (code and reason) when it sent one, never an
    interruption. None when no response was under way (the plugin reconnects, nothing lost).
    """
    close = provider_close(model)
    name = type(model).__name__
    if close is not None and not close.generating:
        return None
    if close is not None and close.code is not None:
        meaning = " (an internal error on the provider's side)" if close.code == 1011 else ""
        what = f"the provider closed {name}'s websocket with close code {close.code}{meaning}, " + (
            f"reason {close.reason!r}," if close.reason else "no reason given,"
        )
    else:
        what = f"{name} lost its connection to the provider ({type(error).__name__}: {error})"
    return (
        f"{what} while it was generating a response: LiveKit's plugin reconnects and drops "
        "that response, so the turn cannot be evaluated. The provider failed, not the agent: "
        "run it again; if it keeps happening, check the provider's status"
    )


def _auto_tool_reply(activity: Any) -> bool:
    """True when the activity's realtime model generates its reply to tool results by itself."""
    model = getattr(activity, "llm", None) if activity is not None else None
    if not isinstance(model, llm.RealtimeModel):
        return False
    return bool(model.capabilities.auto_tool_reply_generation)


# -- what a turn captured -------------------------------------------------------------------


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
                "turn_detection='vad' on a model that hands the turns over"
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
        self._changed.set()

    def take_crash(self) -> AgentCrashError | None:
        """The first crash since the last call, or None; the rest are forgotten (the first
        is the cause, what follows its consequence)."""
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


async def _first_of(awaitables: Iterable[Awaitable[Any]]) -> None:
    """Return when the first of ``awaitables`` finishes: LiveKit's own tasks are only watched;
    coroutines (our helpers) become tasks here and are cancelled on the way out."""
    own: list[asyncio.Future[Any]] = []
    theirs: list[asyncio.Future[Any]] = []
    for awaitable in awaitables:
        if isinstance(awaitable, asyncio.Future):
            theirs.append(awaitable)
        else:
            own.append(asyncio.ensure_future(awaitable))
    try:
        await asyncio.wait([*own, *theirs], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in own:
            if not future.done():
                future.cancel()


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


def llm_usage(session: AgentSession[Any]) -> tuple[int, int]:
    """Input and output tokens the session's LLMs reported so far."""
    tokens_in = tokens_out = 0
    for usage in session.usage.model_usage:
        if getattr(usage, "type", None) == "llm_usage":
            tokens_in += int(getattr(usage, "input_tokens", 0))
            tokens_out += int(getattr(usage, "output_tokens", 0))
    return tokens_in, tokens_out


def usage_delta(before: tuple[int, int], after: tuple[int, int]) -> Usage | None:
    """The tokens spent between two `llm_usage` readings; None when nothing was reported."""
    tokens_in, tokens_out = after[0] - before[0], after[1] - before[1]
    if tokens_in == 0 and tokens_out == 0:
        return None
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out)
