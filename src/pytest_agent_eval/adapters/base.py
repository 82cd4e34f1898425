"""The adapter protocol: how the runner talks to an agent, one conversation per run.

Flow, for each run of a transcript:

1. ``conversation = await adapter.start_conversation(info)`` -- a fresh conversation (a new
   session, a new message history); runs never share one.
2. For each turn, ``reply = await conversation.respond(turn_input)``. The adapter streams audio
   or sends text, waits for the agent to finish, and returns an `AgentReply`.
3. ``await conversation.aclose()`` -- always called, also after a failure or cancellation.

Optionally, a conversation that can observe what the agent says on its own before the user's
first turn (a voice agent's greeting) offers ``greeting()``, returning a `Greeting` (possibly
empty: the agent said nothing). The runner calls it once, right after the conversation started,
and keeps the answer on `RunResult.greeting`; a conversation without the method cannot observe
a greeting, so a transcript's ``greeting:`` checks error for it (see `GreetingConversation`).

An exception raised by ``respond`` fails that turn and ends the run (recorded, not raised);
other runs go on. ``prepare`` runs once per transcript before any run, so an adapter can reject
bad input (a missing WAV fixture, say) before any agent cost is spent; an exception there fails
the whole test with its message.

A plain callable (``async def agent(history) -> AgentReply | (reply, tool_calls) | str``) is
wrapped by `CallableAdapter`; a synchronous one runs in a thread of its own per call.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .._async import call_in_thread
from .._conditions import condition_seed, streamed_conditions
from .._text import short_repr
from ..errors import AdapterError
from ..models import AgentReply, AudioCondition, Greeting, Message, ToolCall, Transcript, Turn
from ..models._far_end import FarEndPiece, far_end_pieces
from ..voice._speech import spoken_text

__all__ = [
    "AgentAdapter",
    "AgentCallable",
    "CallableAdapter",
    "Conversation",
    "ConversationInfo",
    "GreetingConversation",
    "PreparingAdapter",
    "TurnInput",
    "as_adapter",
    "coerce_reply",
]

AgentCallable = Callable[[list[Message]], Any]
"""``(history) -> AgentReply | (reply, tool_calls) | str``, sync or async."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationInfo:
    """What an adapter knows about the conversation it is asked to start."""

    transcript: Transcript
    """The transcript being run."""
    run_index: int
    """Zero-based index of the run."""
    save_audio_dir: Path | None = None
    """Where a voice adapter saves the exact audio each turn streams (after its audio
    conditions), when asked to (``--agent-eval-save-audio``); None: not saved."""
    speed: float | None = None
    """How fast a voice adapter streams the audio, when the session says
    (``--agent-eval-speed``, ``[tool.agent_eval] speed``): 0 as fast as the agent takes it, 1.0
    real time; it wins over the adapter's own ``speed``. None: the adapter's own."""
    turn_conditions: tuple[tuple[AudioCondition, ...], ...] = field(init=False)
    """The audio conditions of each turn of ``transcript``, as its `TurnInput` will carry them
    (none for a text turn), derived once here: for an adapter that must refuse a run before
    its first turn (an STT that would hear through the noise)."""

    def __post_init__(self) -> None:
        chains = tuple(
            streamed_conditions(self.transcript, i) for i in range(len(self.transcript.turns))
        )
        object.__setattr__(self, "turn_conditions", chains)


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnInput:
    """One user turn handed to a conversation."""

    turn: Turn
    """The turn as written in the transcript."""
    index: int
    """Zero-based index of the turn."""
    history: list[Message] = field(default_factory=list)
    """The conversation so far in OpenAI format, ending with this turn's user message."""
    audio: Path | None = None
    """The resolved audio fixture of the turn, or None for a text turn."""
    conditions: tuple[AudioCondition, ...] = ()
    """The audio conditions a voice adapter applies to the fixture before streaming it (the
    turn's own, the transcript's, the variant's; `pytest_agent_eval._conditions`)."""
    seed: int = 0
    """Seed of the random parts of ``conditions`` for this turn of this run."""
    interrupted_by: TurnInput | None = None
    """The next turn, as it will be sent, when it speaks over the agent's reply to this one
    (its ``interrupt:``, with audio): a voice adapter plays it into this turn's reply. None
    when the next turn does not interrupt (or is not known yet: a simulated caller's)."""
    far_end: tuple[FarEndPiece, ...] = ()
    """The far end's turn of an outbound call heard as audio (``far_end: {as: audio}``): the
    pieces of its clip (a spoken line, a beep, a ring, hold music), which may hold no words; ()
    for any other turn. A voice adapter streams the clip (`voice._far_end_audio`) whole on the
    turn's clock; the turn ends once the agent has answered, or has stayed quiet for
    ``SETTLE_S`` after it: silence is an answer, which the call's checks judge."""
    timeout_s: float | None = None
    """The turn's ``turn_timeout_s``, as the runner enforces it in wall time: an adapter whose
    agent runs on a clock of its own (LiveKit's virtual clock) enforces it in that clock's
    time too, so the turn fails as it would in real time. None: not given."""

    @classmethod
    def of(
        cls,
        transcript: Transcript,
        index: int,
        run_index: int,
        *,
        history: Sequence[Message] = (),
        interrupted_by: TurnInput | None = None,
    ) -> TurnInput:
        """Turn ``index`` of ``transcript`` in run ``run_index``, as the runner sends it: its
        resolved audio, its chain of audio conditions (`streamed_conditions`) and their seed
        (`condition_seed`), derived here once for every adapter."""
        turn = transcript.turns[index]
        return cls(
            turn=turn,
            index=index,
            history=list(history),
            audio=Path(turn.audio) if turn.audio is not None else None,
            conditions=streamed_conditions(transcript, index),
            seed=condition_seed(transcript, index, run_index),
            interrupted_by=interrupted_by,
            far_end=far_end_pieces(transcript.far_end, index, turn.user),
        )

    @classmethod
    def interrupting(cls, transcript: Transcript, index: int, run_index: int) -> TurnInput | None:
        """Turn ``index + 1`` as it will be sent, when it interrupts the reply to turn
        ``index`` (an ``interrupt:`` and audio); None otherwise."""
        following = index + 1
        if following >= len(transcript.turns):
            return None
        turn = transcript.turns[following]
        if turn.interrupt is None or turn.audio is None:
            return None
        return cls.of(transcript, following, run_index)

    @property
    def text(self) -> str:
        """The user's words, as a text agent receives them: pause markers (``[pause 2s]``, for
        synthesized audio) are taken out (`pytest_agent_eval.voice.spoken_text`)."""
        return spoken_text(self.turn.user)


@runtime_checkable
class Conversation(Protocol):
    """One run's conversation with the agent: fed turn by turn, closed at the end."""

    async def respond(self, turn: TurnInput) -> AgentReply:
        """Send one user turn and return what the agent said and did."""
        ...

    async def aclose(self) -> None:
        """Release the session; called exactly once, also after errors."""
        ...


@runtime_checkable
class GreetingConversation(Conversation, Protocol):
    """A conversation that observes what the agent says on its own before turn 1 (optional).

    ``greeting()`` returns what the agent said and did while the conversation started (an
    empty `Greeting` when it said nothing), or None when this conversation cannot tell. It
    may be ``async``. The runner calls it once, after ``start_conversation``, before turn 1.
    """

    def greeting(self) -> Greeting | None:
        """What the agent said and did before the user's first turn."""
        ...


@runtime_checkable
class AgentAdapter(Protocol):
    """An agent the runner can hold conversations with.

    Attributes:
        consumes_audio: True for adapters that stream a turn's ``audio`` fixture to the agent.
            The plugin then checks fixtures are present and fresh before running; text
            adapters leave it False and ``audio:`` is ignored.
    """

    consumes_audio: bool

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        """Open a fresh conversation for one run."""
        ...


class PreparingAdapter(AgentAdapter, Protocol):
    """An adapter that checks a transcript once before any run (optional method).

    ``prepare`` raising an `AgentEvalError` (for example `AudioFixtureError` for a missing WAV)
    fails the whole test with its message, before any agent cost is spent.
    """

    async def prepare(self, transcript: Transcript) -> None:
        """Validate the transcript's inputs (fixtures, settings) for this adapter."""
        ...


def is_adapter(obj: object) -> bool:
    """True for objects implementing `AgentAdapter` (as opposed to a plain callable)."""
    return callable(getattr(obj, "start_conversation", None))


def coerce_reply(value: Any) -> AgentReply:
    """Normalise what an agent callable returned into an `AgentReply`.

    Raises:
        AdapterError: For a value that is none of the accepted shapes, saying which are.
    """
    if isinstance(value, AgentReply):
        return value
    if isinstance(value, str):
        return AgentReply(value)
    if isinstance(value, tuple) and len(value) == 2:
        reply, calls = value
        if isinstance(reply, str) and isinstance(calls, Sequence) and not isinstance(calls, str):
            try:
                return AgentReply(reply, [ToolCall.coerce(c) for c in calls])
            except TypeError as exc:
                raise AdapterError(f"the agent returned a bad tool call: {exc}") from exc
    raise AdapterError(
        "the agent returned "
        f"{type(value).__name__} {_short(value)}; expected AgentReply(reply, tool_calls), "
        "a (reply, tool_calls) tuple, or a plain string"
    )


def _short(value: Any, limit: int = 80) -> str:
    return short_repr(value, limit)


def _is_async_callable(fn: Any) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one."""
    call = type(fn).__call__ if not inspect.isroutine(fn) else None
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call)


class _CallableConversation:
    """A conversation over a stateless callable: the history is the only state.

    An ``async def`` agent runs on the loop; a plain function runs in a thread of its own
    (`call_in_thread`), so sync agents run concurrently like async ones and a hung one can be
    abandoned at its turn timeout.
    """

    def __init__(self, fn: AgentCallable) -> None:
        self._fn = fn

    async def respond(self, turn: TurnInput) -> AgentReply:
        history = list(turn.history)
        if _is_async_callable(self._fn):
            result = self._fn(history)
        else:
            result = await call_in_thread(self._fn, history)
        if inspect.isawaitable(result):
            result = await result
        return coerce_reply(result)

    async def aclose(self) -> None:
        return None


class CallableAdapter:
    """Adapts a plain agent callable to the `AgentAdapter` protocol.

    The callable receives the full history (a list of `Message`, each a dict with attribute
    access too) ending with the current user message, including earlier turns' tool calls
    and tool results, and returns an `AgentReply`, a ``(reply, tool_calls)`` tuple or a string.

    Args:
        fn: The agent callable, sync or async.
        factory: Alternatively, a zero-argument function returning a fresh callable per run,
            for agents that keep state of their own.
    """

    consumes_audio = False

    def __init__(
        self,
        fn: AgentCallable | None = None,
        *,
        factory: Callable[[], AgentCallable | Awaitable[AgentCallable]] | None = None,
    ) -> None:
        if (fn is None) == (factory is None):
            raise TypeError("CallableAdapter takes exactly one of fn or factory")
        self._fn = fn
        self._factory = factory

    async def start_conversation(self, info: ConversationInfo) -> Conversation:
        fn: AgentCallable | None
        if self._factory is not None:
            made = self._factory()
            fn = await made if inspect.isawaitable(made) else made
        else:
            fn = self._fn
        assert fn is not None
        return _CallableConversation(fn)


def as_adapter(agent: Any) -> AgentAdapter:
    """Return ``agent`` if it is an adapter, else wrap a callable in `CallableAdapter`.

    Raises:
        TypeError: For an object that is neither, with what was expected.
    """
    if is_adapter(agent):
        return agent  # type: ignore[no-any-return]
    if callable(agent):
        return CallableAdapter(agent)
    raise TypeError(
        f"expected an agent callable (history -> reply) or an adapter with "
        f"start_conversation(); got {type(agent).__name__}"
    )
