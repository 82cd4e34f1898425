"""LiveKit on the virtual clock: ``LiveKitAdapter(clock="virtual")``.

At max speed (``speed=0``) the ordinary adapter pushes a fixture's phrases as fast as the
session takes them, on the caller's event loop. LiveKit's turn-taking timers (the endpointing
wait, the false-interruption timer, the simulated playout) then run in wall time while the
audio arrives in milliseconds, which is why ``eval_session_kwargs()`` caps ``min_delay`` at
0.5 s and barge-ins fall back to real time.

On the virtual clock the run instead takes place on a thread of its own, on a `PipelineLoop`
whose `PipelineClock` jumps to the next timer whenever nothing is runnable (see
`pytest_agent_eval.voice._clock`). The conversation is the ordinary one at real-time pacing
(``speed=1.0``: frames paced, replies played out for their length), but real time is the
session's: ``time.time``, ``time.monotonic``, ``time.perf_counter`` and the loop's time on
that thread (and its executor's workers) all read the virtual clock
(`pytest_agent_eval.voice._timeshim`). LiveKit makes the decisions it makes in real time (it
mixes ``time.time()`` stamps with loop timers and audio durations, so they must move together),
and a turn takes as long as its computation. Work in an executor counts as taking no time;
Silero's inference runs inline on the loop's thread.

With no clock chosen (``clock=None``, the default), a max-speed run whose transcript has a
barge-in turn (``interrupt:`` with audio) goes on this clock too: such a run otherwise plays the
reply and the interrupting speech in the wall's real time. A session whose shape was not tried
on this clock (`virtual_misfit`: a realtime model, LiveKit's turn-detector model, dynamic
endpointing) runs in real time instead, on the same thread (its clock at rate 1.0).

Between calls (while the runner decides what comes next) the clock is held: nothing is due in
the session meanwhile. Every call is bounded by ``timeout_s`` of the session's time (the
adapter's own deadline) and, a little later, of wall time.

Latency on this clock is the session's: the time LiveKit's timers and the agent's own awaits
(an LLM's or a tool's I/O, a Whisper recognition's decode time) take, without the compute of
this process. On that thread ``time.time()`` and ``time.perf_counter()`` never give one value
twice (LiveKit orders its chat history by ``time.time()`` and divides by durations it timed).
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
from collections.abc import Callable, Coroutine
from typing import Any, Literal, Protocol, TypeAlias, TypeVar

from livekit.agents import Agent, AgentSession

from ...._text import safe_name
from ....errors import AdapterError, AgentTimeoutError
from ....models import AgentReply, AgentSpeech, Greeting, ToolCall
from ....voice._clock import PipelineClock, PipelineThread
from ....voice._timeshim import install_time_shim, real_perf_counter
from ..._closing import close_after_failure
from ..._turn_timeout import within_turn_timeout
from ...base import ConversationInfo, TurnInput

__all__ = [
    "Clock",
    "LiveKitRun",
    "VirtualConversation",
    "clock_setting",
    "leave_if_unfit",
    "runs_virtual",
    "start_virtual",
    "virtual_misfit",
]

T = TypeVar("T")

Clock: TypeAlias = Literal["real", "virtual"]


class LiveKitRun(Protocol):
    """What `LiveKitAdapter.start_conversation` returns: a `LiveKitConversation`, or on the
    virtual clock a `VirtualConversation` running one on a thread of its own."""

    @property
    def session(self) -> AgentSession[Any]:
        """The live ``AgentSession``."""
        ...

    @property
    def agent(self) -> Agent:
        """The agent the session started with."""
        ...

    @property
    def last_items(self) -> list[Any]:
        """The items of the last turn."""
        ...

    @property
    def greeting_items(self) -> list[Any]:
        """The items of the greeting."""
        ...

    @property
    def greeting_text(self) -> str: ...

    @property
    def greeting_speech(self) -> list[AgentSpeech]: ...

    @property
    def greeting_tool_calls(self) -> list[ToolCall]: ...

    @property
    def expect(self) -> Any:
        """LiveKit's ``RunAssert`` over the last turn."""
        ...

    def greeting(self) -> Greeting:
        """What the agent said and did before turn 1."""
        ...

    async def respond(self, turn: TurnInput) -> AgentReply:
        """Send one turn and collect the reply."""
        ...

    async def aclose(self) -> None:
        """Close the session; safe to call twice."""
        ...


class _Adapter(Protocol):
    """What a virtual run reads of its `LiveKitAdapter`."""

    timeout_s: float
    clock: Clock | None
    speed: float

    async def start_conversation(self, info: ConversationInfo) -> LiveKitRun: ...


_WALL_GRACE_S = 5.0
"""A call's wall-clock bound is ``timeout_s`` plus this: the session's own deadline (in its
time, which runs ahead of the wall) normally fires first and says more."""

_STOP_S = 10.0
"""How long the session's thread gets to finish once its loop is stopped."""


def clock_setting(clock: str | None) -> Clock | None:
    """``clock`` checked: "real", "virtual" or None (virtual for a max-speed barge-in run).

    Raises:
        ValueError: Anything else.
    """
    if clock is None:
        return None
    if clock == "real":
        return "real"
    if clock == "virtual":
        return "virtual"
    raise ValueError(f'LiveKitAdapter: clock must be "real", "virtual" or None, got {clock!r}')


def runs_virtual(clock: Clock | None, speed: float, info: ConversationInfo) -> bool:
    """True when this run goes on the virtual clock: at max speed (the session's speed wins
    over the adapter's; a run paced on the wall keeps the wall's clock), asked for, or with no
    clock chosen when a turn barges in (it would run in the wall's real time otherwise)."""
    if (speed if info.speed is None else info.speed) != 0:
        return False
    if clock is None:
        transcript = info.transcript
        far = transcript.far_end
        if far is not None and far.played_as == "audio":
            return True  # a far-end turn waits out its settle time (`_far_end_audio`) on it
        return any(
            TurnInput.interrupting(transcript, i, info.run_index) is not None
            for i in range(len(transcript.turns))
        )
    return clock == "virtual"


_CHOSEN_FOR_BARGE_IN: contextvars.ContextVar[PipelineClock | None] = contextvars.ContextVar(
    "agent_eval_livekit_virtual_chosen", default=None
)
"""In the start of a run the adapter put on the virtual clock itself (no clock chosen): its
clock."""


def virtual_misfit(session: AgentSession[Any], agent: Agent) -> str | None:
    """What in this session was not tried on the virtual clock (None: nothing): a realtime
    model (its server, or a cassette recorded against the wall, keeps the wall's time),
    LiveKit's turn-detector model, or dynamic endpointing (learned from ``time.time()``)."""
    from livekit.agents import llm

    if isinstance(session.llm, llm.RealtimeModel) or isinstance(agent.llm, llm.RealtimeModel):
        return "a realtime model"
    for detection in (session.turn_detection, agent.turn_detection):
        if detection is not None and not isinstance(detection, str) and bool(detection):
            return "LiveKit's turn-detector model"
    if session.options.endpointing.get("mode", "fixed") != "fixed":
        return "dynamic endpointing"
    return None


def leave_if_unfit(session: AgentSession[Any], agent: Agent) -> tuple[AgentSession[Any], Agent]:
    """The pair; in a run the adapter put on the virtual clock itself, a session whose shape
    was not tried on it (`virtual_misfit`) turns the run's clock into real time (rate 1.0)
    before it starts: the same session, built once, then runs in real time on its thread."""
    clock = _CHOSEN_FOR_BARGE_IN.get()
    if clock is not None and virtual_misfit(session, agent) is not None:
        clock.rate = 1.0  # nothing ran on it yet: its time moves on to the wall's
    return session, agent


def _pure_work(func: Callable[..., Any], args: tuple[Any, ...]) -> bool:
    """True for an executor job known to compute without waiting on anything: Silero's
    inference over one window (its stream hands the executor the model itself)."""
    kind = type(func)
    return kind.__name__ == "OnnxModel" and kind.__module__.startswith("livekit.plugins.silero")


async def start_virtual(adapter: _Adapter, info: ConversationInfo) -> VirtualConversation | None:
    """Start ``info``'s run on a virtual clock of its own (see the module docstring), when it
    goes on one (`runs_virtual`); None when it does not.

    Raises:
        AdapterError: As `LiveKitAdapter.start_conversation`.
        AgentTimeoutError: The start took more than ``timeout_s`` (+ a grace) of wall time.
    """
    if not runs_virtual(adapter.clock, adapter.speed, info):
        return None
    install_time_shim()  # in place already when the plugin loaded; here for other callers
    clock = PipelineClock(rate=None, perf=True)
    name = f"livekit {safe_name(info.transcript.id)} run {info.run_index + 1}"
    thread = PipelineThread(clock, name=name, allow_network=True, inline=_pure_work)
    run = VirtualConversation(adapter, thread, info)
    if adapter.clock is None:
        run._carried[_CHOSEN_FOR_BARGE_IN] = clock
    try:
        paced = dataclasses.replace(info, speed=1.0)  # real time, in the session's time
        started = await run.call(adapter.start_conversation(paced), label="session start")
        assert not isinstance(started, VirtualConversation)  # paced: on the wall's terms
        run.inner = started
    except BaseException as exc:
        await close_after_failure(run.aclose(), exc)
        raise
    return run


class VirtualConversation:
    """A `LiveKitConversation` run on a virtual clock, on a thread of its own: every call is
    handed to that thread; what it captured is read from here (the clock is held between
    calls, so nothing changes meanwhile). Anything not defined here is the conversation's."""

    def __init__(self, adapter: _Adapter, thread: PipelineThread, info: ConversationInfo) -> None:
        self.adapter = adapter
        self.info = info
        self.clock = thread.clock
        """The session's clock: ``clock.elapsed()`` is the session's time so far."""
        self._thread = thread
        self._inner: LiveKitRun | None = None
        self._closed = False
        self._carried: dict[contextvars.ContextVar[Any], Any] = {}
        """Context variables the calls set (the crash sink the start sets, what LiveKit sets
        in the caller's context): each call runs in a task of its own on the clock's thread,
        where the ordinary conversation runs every call in the runner's one task."""

    @property
    def inner(self) -> LiveKitRun:
        """The conversation itself (its session and loop live on the clock's thread)."""
        if self._inner is None:
            raise AdapterError("this LiveKit conversation on the virtual clock did not start")
        return self._inner

    @inner.setter
    def inner(self, conversation: LiveKitRun) -> None:
        self._inner = conversation

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")
        if inner is None or name.startswith("__"):
            raise AttributeError(name)
        return getattr(inner, name)

    # -- what the runner calls ------------------------------------------------------------

    @property
    def session(self) -> AgentSession[Any]:
        """The live ``AgentSession`` (its loop runs on the clock's thread)."""
        return self.inner.session

    @property
    def agent(self) -> Agent:
        return self.inner.agent

    @property
    def last_items(self) -> list[Any]:
        return self.inner.last_items

    @property
    def greeting_items(self) -> list[Any]:
        return self.inner.greeting_items

    def greeting(self) -> Greeting:
        """See `LiveKitConversation.greeting`."""
        return self.inner.greeting()

    @property
    def greeting_text(self) -> str:
        return self.inner.greeting_text

    @property
    def greeting_speech(self) -> list[AgentSpeech]:
        return self.inner.greeting_speech

    @property
    def greeting_tool_calls(self) -> list[ToolCall]:
        return self.inner.greeting_tool_calls

    @property
    def expect(self) -> Any:
        """See `LiveKitConversation.expect`."""
        return self.inner.expect

    async def respond(self, turn: TurnInput) -> AgentReply:
        """See `LiveKitConversation.respond`; the reply's LiveKit metadata also says the clock
        (``livekit.clock``: "virtual"; under the framework's key, so every voice adapter's
        top-level keys stay the same, as the contract test holds them), the turn's wall time
        (``livekit.turn_wall_s``) and its time in the session (``livekit.turn_session_s``)."""
        inner = self.inner
        wall, session = real_perf_counter(), self.clock.elapsed()
        reply = await self.call(_within_turn_timeout(inner, turn), label=f"turn {turn.index + 1}")
        meta = reply.metadata
        if not self.clock.virtual:  # a session not tried on it: real time (`leave_if_unfit`)
            return reply
        meta["speed"] = 0.0
        if reply.timeline is not None:  # its times are the session's, as the clock's
            reply.timeline = dataclasses.replace(reply.timeline, clock="virtual")
        livekit = meta.setdefault("livekit", {})
        if isinstance(livekit, dict):
            livekit["clock"] = "virtual"
            livekit["turn_wall_s"] = real_perf_counter() - wall
            livekit["turn_session_s"] = self.clock.elapsed() - session
        return reply

    async def aclose(self) -> None:
        """Close the session, then stop its thread; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        async with self._thread.stopped_after(_STOP_S):
            if self._inner is not None:
                # Closing takes what it takes in the session's time: the clock runs meanwhile.
                await self.call(self._inner.aclose(), label="closing the session", hold=False)

    # -- handing calls to the clock's thread ----------------------------------------------

    async def call(self, work: Coroutine[Any, Any, T], *, label: str, hold: bool = True) -> T:
        """Run ``work`` on the session's thread with the clock running, then hold the clock
        (unless not ``hold``); bounded by ``timeout_s`` (+ a grace) of wall time too."""
        clock, carried = self.clock, self._carried

        async def running() -> T:
            for var, value in carried.items():
                var.set(value)
            before = contextvars.copy_context()
            clock.release()
            try:
                return await work
            finally:
                if hold:
                    clock.hold()
                for var, value in contextvars.copy_context().items():
                    if var not in before or before[var] is not value:
                        carried[var] = value

        timeout_s = self.adapter.timeout_s + _WALL_GRACE_S
        try:
            return await asyncio.wait_for(self._thread.run(running()), timeout_s)
        except TimeoutError:  # the conversation's own deadline raises AgentTimeoutError
            raise AgentTimeoutError(
                f"{label}: no end within timeout_s={self.adapter.timeout_s:g} s "
                f"(+{_WALL_GRACE_S:g} s) of wall time on the virtual clock; the session's loop "
                "was busy (code computing without yielding, or blocking it)"
            ) from None


async def _within_turn_timeout(inner: LiveKitRun, turn: TurnInput) -> AgentReply:
    """``inner.respond(turn)`` bounded by the turn's ``turn_timeout_s`` in the session's time
    (this runs on the clock's loop): the runner's own deadline counts wall time, which on the
    virtual clock passes far slower than the turn's, and a turn that fails in real time must
    fail here too, with the same words."""
    return await within_turn_timeout(inner.respond(turn), turn.timeout_s)
