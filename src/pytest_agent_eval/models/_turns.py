"""What flows between the runner and an agent: tool calls, messages, usage, what the agent
said and did in a turn (`AgentTurn`: `AgentReply`, `TurnContext`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._serialize import from_json, to_json
from ._inputs import ToolOutcome
from ._timeline import Timeline

# --------------------------------------------------------------------------------------------
# What flows between runner and agent
# --------------------------------------------------------------------------------------------


__all__ = [
    "AgentReply",
    "AgentSpeech",
    "AgentTurn",
    "BargeIn",
    "Greeting",
    "Handoff",
    "Message",
    "ToolCall",
    "TurnContext",
    "Usage",
    "sum_usage",
]


class ToolCall(str):
    """A tool-call name that optionally carries the arguments it was invoked with.

    Subclasses ``str`` so name-based checks keep working unchanged: ``"book_slot"
    in ctx.tool_calls``, equality against plain strings, and hand-rolled agents
    returning ``list[str]`` (the runner normalises those to ``ToolCall`` with
    ``args=None``). Made as ``ToolCall(name, args, *, output=..., is_error=..., ...)``:

    Attributes:
        name: The tool name (the string itself).
        args: The arguments the tool was called with, or None when the adapter
            could not capture them.
        output: What the tool returned, when the adapter saw it.
        is_error: True when the call failed (bad arguments, unknown tool, exception).
        call_id: The id linking the call to its result, when the framework has one.
        error: The failure in the tool's own words when the call failed (for an exception,
            its type and message), which may say more than ``output``: a framework can hide
            an exception from the model behind a generic output.
        done: True when the adapter saw the call finish (return or failure), False when it saw
            it still running at the end of the turn, None when the adapter does not say.
            Together with ``is_error``, ``output`` and ``cancelled`` it gives `outcome`.
        cancelled: True when the adapter saw the call stopped before it returned (an
            interruption cut the reply that ran it, or the framework cancelled its task): it
            gave nothing back.
        refused: True when the framework refused the call before running anything: the model
            named a function not offered at that moment (a Flows node without it) or one the
            agent does not have. ``error`` says why. A refused call is not a call made: the
            checks on which tools were called, in what order and with what arguments skip it.

    Example:
        ```python
        call = ToolCall("book_slot", {"date": "tomorrow", "time": "10am"})
        call == "book_slot"          # True
        call.args["time"]            # "10am"
        ```
    """

    args: dict[str, Any] | None
    output: Any
    is_error: bool
    call_id: str | None
    error: str | None
    done: bool | None
    cancelled: bool
    refused: bool

    def __new__(
        cls,
        name: str,
        args: dict[str, Any] | None = None,
        *,
        output: Any = None,
        is_error: bool = False,
        call_id: str | None = None,
        error: str | None = None,
        done: bool | None = None,
        cancelled: bool = False,
        refused: bool = False,
    ) -> ToolCall:
        """Create a ToolCall from a tool name and optional captured arguments."""
        obj = super().__new__(cls, name)
        obj.args = args
        obj.output = output
        obj.is_error = is_error
        obj.call_id = call_id
        obj.error = error
        obj.done = done
        obj.cancelled = cancelled
        obj.refused = refused
        return obj

    @property
    def outcome(self) -> ToolOutcome | None:
        """How the call ended, or None when the adapter did not observe it.

        ``"cancelled"`` when the adapter saw it stopped before it returned (an interruption
        cut it); ``"refused"`` when the framework refused it before running anything (not
        offered, unknown); ``"error"`` when it failed; ``"pending"`` when the adapter saw it still
        running at the end of the turn; ``"ok"`` when the adapter saw it finish, or recorded
        what it returned. A bare ``ToolCall(name)`` (a hand-written agent naming the tools it
        used) has no outcome: checks on outcomes then error instead of guessing.
        """
        if self.cancelled:
            return "cancelled"
        if self.refused:
            return "refused"
        if self.is_error:
            return "error"
        if self.done is False:
            return "pending"
        if self.done or self.output is not None:
            return "ok"
        return None

    @property
    def name(self) -> str:
        """The tool name (the string value itself)."""
        return str(self)

    def __repr__(self) -> str:
        return f"ToolCall({str(self)!r}, args={self.args!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_tool_call,
            (
                str(self),
                self.args,
                self.output,
                self.is_error,
                self.call_id,
                self.error,
                self.done,
                self.cancelled,
                self.refused,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the call."""
        return {
            "name": str(self),
            "args": to_json(self.args),
            "output": to_json(self.output),
            "is_error": self.is_error,
            "call_id": self.call_id,
            "error": self.error,
            "done": self.done,
            "cancelled": self.cancelled,
            "refused": self.refused,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Inverse of `to_dict`."""
        return cls(
            data["name"],
            data.get("args"),
            output=data.get("output"),
            is_error=bool(data.get("is_error", False)),
            call_id=data.get("call_id"),
            error=data.get("error"),
            done=data.get("done"),
            cancelled=bool(data.get("cancelled", False)),
            refused=bool(data.get("refused", False)),
        )

    @classmethod
    def coerce(cls, value: Any) -> ToolCall:
        """Turn what an agent returned for a tool call into a ToolCall.

        Accepts a ToolCall, a plain name, a ``(name, args)`` pair, or a mapping with a
        ``name`` (and optional ``args``/``arguments``).
        """
        if isinstance(value, ToolCall):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping) and "name" in value:
            args = value.get("args", value.get("arguments"))
            return cls(str(value["name"]), dict(args) if isinstance(args, Mapping) else None)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            args = value[1]
            return cls(value[0], dict(args) if isinstance(args, Mapping) else None)
        raise TypeError(
            f"a tool call must be a name, ToolCall(name, args) or (name, args); got {value!r}"
        )


def _rebuild_tool_call(
    name: str,
    args: dict[str, Any] | None,
    output: Any,
    is_error: bool,
    call_id: str | None,
    error: str | None = None,
    done: bool | None = None,
    cancelled: bool = False,
    refused: bool = False,
) -> ToolCall:
    return ToolCall(
        name,
        args,
        output=output,
        is_error=is_error,
        call_id=call_id,
        error=error,
        done=done,
        cancelled=cancelled,
        refused=refused,
    )


class Message(dict[str, Any]):
    """One entry of the conversation history, in OpenAI chat format.

    It *is* a dict (``history[-1]["content"]``, ``json.dumps``, ``dict(msg)`` all work and
    yield only OpenAI keys) and also offers attributes (``history[-1].content``). A user turn
    with an audio fixture carries the resolved path as ``.audio`` / ``["audio"]`` without
    adding a non-standard key to the dict itself, so it never leaks into API calls. The same
    way, an assistant message names the calls whose arguments the agent did not report
    (``uncaptured_args``, their ids): their ``arguments`` read ``"{}"`` in the OpenAI format,
    and a judge is told they were not captured rather than shown an empty call.
    """

    audio: Path | None
    uncaptured_args: frozenset[str]

    def __init__(
        self,
        role: str,
        content: str | None,
        *,
        audio: Path | None = None,
        uncaptured_args: frozenset[str] = frozenset(),
        **extra: Any,
    ) -> None:
        super().__init__(role=role, content=content, **extra)
        self.audio = audio
        self.uncaptured_args = frozenset(uncaptured_args)

    def __missing__(self, key: str) -> Any:
        if key == "audio":
            return self.audio
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "audio" and not dict.__contains__(self, "audio"):
            return self.audio if self.audio is not None else default
        return super().get(key, default)

    @property
    def role(self) -> str:
        """``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``."""
        return str(self["role"])

    @property
    def content(self) -> str | None:
        """The text of the message (None for an assistant message that only calls tools)."""
        return dict.get(self, "content")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """OpenAI-style ``tool_calls`` of an assistant message, or an empty list."""
        return list(dict.get(self, "tool_calls") or [])

    @property
    def tool_call_id(self) -> str | None:
        """For a ``tool`` message, the id of the call it answers."""
        return dict.get(self, "tool_call_id")

    def to_openai(self) -> dict[str, Any]:
        """A plain dict with only OpenAI chat keys."""
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_message, (dict(self), self.audio, self.uncaptured_args))


def _rebuild_message(
    data: dict[str, Any], audio: Path | None, uncaptured_args: frozenset[str] = frozenset()
) -> Message:
    data = dict(data)
    return Message(
        data.pop("role"),
        data.pop("content", None),
        audio=audio,
        uncaptured_args=uncaptured_args,
        **data,
    )


@dataclass
class Usage:
    """Token usage reported by an agent or a judge.

    Args:
        input_tokens: Prompt tokens.
        output_tokens: Completion tokens.
        requests: Number of model requests, or None when the source does not count them
            (reports then show "–", never a made-up 0).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # A count is known only when every part counted: a partial sum would understate it.
        requests = (
            None
            if self.requests is None or other.requests is None
            else self.requests + other.requests
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            requests,
        )

    def to_dict(self) -> dict[str, int | None]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage | None:
        """Inverse of `to_dict`; None stays None."""
        return None if data is None else from_json(cls, data)


def sum_usage(items: Iterable[Usage | None]) -> Usage | None:
    """Add usages, ignoring None; None when nothing reported any."""
    total: Usage | None = None
    for item in items:
        if item is not None:
            total = item if total is None else total + item
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpeech:
    """Something the agent said on its own initiative, not in answer to the user's words.

    A greeting when the session starts, an ``on_enter`` line after a handoff, a ``say()`` from
    a tool. Adapters that can tell such speech apart list it on the turn that caused it
    (`AgentTurn.agent_speech`); what the agent said before turn 1 goes to the run's
    `Greeting`. The turn's ``reply`` is everything the agent said in the turn, so it holds
    this speech too, in the order it was said; ``agent_speech`` says which parts the agent
    started on its own and why. Reports show each one on its own line, marked as
    agent-initiated.

    Args:
        text: What was said.
        cause: Why. LiveKit's words: ``"greeting"`` (said while the session started),
            ``"on_enter"`` (an agent entered by a handoff), ``"on_exit"``, ``"tool"``
            (``say``/``generate_reply`` inside a tool) or ``"other"``; other adapters may use
            their own.
        agent: Name of the agent that spoke, in multi-agent sessions.
        turn_index: Zero-based index of the turn that caused it (None for the greeting).
        started_at_s: Seconds from the start of the conversation to its first word, if known.
        latency_s: Seconds from what triggered it (session start, handoff, the end of the
            user's speech) to its first word, if known.
    """

    text: str
    cause: str
    agent: str | None = None
    turn_index: int | None = None
    started_at_s: float | None = None
    latency_s: float | None = None


@dataclass(frozen=True, slots=True)
class Handoff:
    """Control of the conversation passing from one agent to another within a turn.

    Args:
        from_agent: Name of the agent that handed off (None if unknown).
        to_agent: Name of the agent that took over.
    """

    from_agent: str | None
    to_agent: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BargeIn:
    """What happened when a turn spoke over the agent's reply (a turn with ``interrupt:``).

    Times are seconds. The interruption "starts" where the interrupting utterance's speech
    starts (its first voiced audio, not its leading silence); the agent "stops" when its audio
    output is paused or cleared, which is when a caller would hear it go quiet.

    Args:
        precondition: Why the barge-in could not be tested (the agent was not speaking when
            the interruption started, the interrupting speech is shorter than the session's
            minimum interruption duration, the session has no TTS), or None when it was.
        reply_position_s: How far into the interrupted reply's audio the interruption started.
        speech_s: Length of the interrupting utterance's first phrase of speech (the VAD's).
        min_interruption_s: The session's minimum interruption duration.
        stopped: True when the agent stopped for the interruption and stayed quiet: its reply
            ended interrupted (a reply that went on to its own end did not stop).
        stop_latency_s: From the start of the interrupting speech to the agent's audio
            stopping for good (after its last resume, if any); None when it did not stop.
        resumed: True when the agent went quiet, then spoke again before the interrupting turn
            ended (LiveKit's false-interruption handling, when no words were transcribed in
            time; on Pipecat, any speech of the bot then).
        quiet_after_s: From the start of the interrupting speech to the first time the
            agent's audio went quiet (the same as ``stop_latency_s`` unless it resumed).
        played_s: How much of the interrupted reply's audio played in all.
        interrupted_text: What the session kept of the interrupted reply (the part said).
    """

    precondition: str | None = None
    reply_position_s: float | None = None
    speech_s: float | None = None
    min_interruption_s: float | None = None
    stopped: bool = False
    stop_latency_s: float | None = None
    resumed: bool = False
    played_s: float | None = None
    interrupted_text: str | None = None
    quiet_after_s: float | None = None


@dataclass
class Greeting:
    """What the agent said and did on its own before the user's first turn.

    Adapters that observe it return it from ``Conversation.greeting()``; the runner keeps it
    on `RunResult.greeting`, where a transcript's ``greeting:`` checks and the reports read it.

    Args:
        speech: Each utterance, in order (cause ``"greeting"`` for most).
        tool_calls: Tools the agent called while greeting.
    """

    speech: list[AgentSpeech] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Every utterance, space-joined ("" when the agent said nothing)."""
        return " ".join(s.text for s in self.speech if s.text)


class _AgentTurnFields:
    """``reply`` and ``tool_calls``, which each `AgentTurn` subclass declares in the position
    its constructor needs; a plain class, so naming them here adds no dataclass field."""

    reply: str
    tool_calls: list[ToolCall]


@dataclass(kw_only=True, repr=False)
class AgentTurn(_AgentTurnFields):
    """What the agent did in one turn: the record `AgentReply`, `TurnContext` and `TurnResult`
    share.

    Each of the three inherits these fields, so an adapter's reply reaches the evaluators and the
    reports without a hand-copied field list (`agent_turn_values`), and a field added here
    (a new measurement, a new kind of output) appears everywhere at once.

    Why a base class with keyword-only fields: the seed's constructors take ``reply`` and
    ``tool_calls`` positionally at different places (``AgentReply(reply, tool_calls)``,
    ``TurnContext(user, reply, tool_calls, history)``, ``TurnResult(index, user, reply, ...)``),
    so each subclass declares those two in its own order; everything else is keyword-only and
    goes after the subclass's positional fields. Composition with properties would have needed a
    hand-written ``__init__`` per class to keep those constructors.

    Args:
        heard: Voice adapters: what the agent's speech recognizer transcribed.
        latency_s: Voice adapters: seconds from the end of the user's speech to the first
            reply text.
        first_audio_latency_s: Voice adapters: seconds from the end of the user's speech to the
            first reply audio frame, when the session produces audio.
        usage: Token usage of the agent for this turn, when the adapter reports it.
        audio_out: The reply audio the adapter saved, if any.
        metadata: Anything else an adapter wants evaluators and reports to see.
        agent_speech: The parts of what the agent said in this turn that it started on its
            own (an ``on_enter`` line after a handoff, a ``say()`` from a tool), with why.
        heard_segments: Voice adapters: what the speech recognizer heard in each speech
            segment of the user's audio, in order (``heard`` is them joined).
        active_agent: Multi-agent adapters: the agent active at the end of the turn; None
            when the adapter does not report agents.
        handoffs: Multi-agent adapters: the handoffs of the turn, in order; None when the
            adapter does not report handoffs (as opposed to ``[]``: it saw none).
        tool_calls_unobserved: Why the adapter could not see the turn's tool calls (a room
            agent that does not publish them, say); None when it could. Tool checks then error
            with this reason instead of passing on an empty list.
        wer: Voice turns: the word error rate of ``heard`` against the words the user spoke
            (`pytest_agent_eval.voice.spoken_text` of the turn's ``user``), with the
            number-aware normalizer of ``--verify``; None for a text turn or when nothing was
            reported as heard. The runner fills it in when the adapter did not.
        audio_in: Voice adapters: the exact audio the turn streamed to the agent (after its
            audio conditions), when the adapter was asked to save it.
        barge_in: What happened when this turn spoke over the agent (``interrupt:``); None
            when the turn did not interrupt, or the adapter does not perform barge-in.
        model: Id of the model that answered (``"gpt-4o-mini"``, ``"openai:gpt-4o"``), when
            the adapter knows it: reports name it and price the turn's tokens by it.
        dtmf_sent: Phone adapters: the keys the agent sent on the line in this turn, in order
            (``""``: it sent none); None when the adapter cannot see keys sent.
        timeline: Voice adapters: the turn on one time axis (user audio, the agent's VAD and
            end-of-turn decisions, its audio out, interruptions, tool calls, handoffs), the same
            shape from every adapter; None for a text turn or an adapter that keeps none.
        call_ended: Phone adapters: whether the agent ended the call in this turn; None when
            the adapter cannot see hang-ups.
    """

    heard: str | None = None
    latency_s: float | None = None
    first_audio_latency_s: float | None = None
    usage: Usage | None = None
    audio_out: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_speech: list[AgentSpeech] = field(default_factory=list)
    heard_segments: list[str] = field(default_factory=list)
    active_agent: str | None = None
    handoffs: list[Handoff] | None = None
    tool_calls_unobserved: str | None = None
    wer: float | None = None
    audio_in: Path | None = None
    barge_in: BargeIn | None = None
    model: str | None = None
    dtmf_sent: str | None = None
    timeline: Timeline | None = None
    call_ended: bool | None = None

    def __post_init__(self) -> None:
        if type(self) is AgentTurn:
            raise TypeError(
                "AgentTurn is the part AgentReply, TurnContext and TurnResult share; "
                "build one of those"
            )
        if isinstance(self.reply, bytes | bytearray | memoryview):
            raise TypeError(
                f"{type(self).__name__} got bytes as its reply ({bytes(self.reply)[:40]!r}); "
                "pass text: decode it first, e.g. reply.decode('utf-8')"
            )
        self.reply = "" if self.reply is None else str(self.reply)
        self.tool_calls = [ToolCall.coerce(c) for c in (self.tool_calls or [])]
        if self.audio_out is not None and not isinstance(self.audio_out, Path):
            self.audio_out = Path(self.audio_out)
        if self.audio_in is not None and not isinstance(self.audio_in, Path):
            self.audio_in = Path(self.audio_in)

    def agent_turn_values(self) -> dict[str, Any]:
        """``reply``, ``tool_calls`` and every `AgentTurn` field, as keyword arguments for
        another record of the same turn (lists and dicts copied, so the records stay apart)."""
        values = {name: getattr(self, name) for name in _AGENT_TURN_FIELDS}
        return {k: v.copy() if isinstance(v, list | dict) else v for k, v in values.items()}

    def __repr__(self) -> str:
        # The constructor's order: the subclass's positional fields, then the shared ones.
        ordered = sorted(fields(self), key=lambda f: bool(f.kw_only))
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in ordered if f.repr)
        return f"{type(self).__name__}({shown})"


_AGENT_TURN_FIELDS = ("reply", "tool_calls", *(f.name for f in fields(AgentTurn)))


@dataclass(repr=False)
class AgentReply(AgentTurn):
    """What the agent said and did in one turn, as an adapter or agent callable returns it.

    Args:
        reply: The reply text.
        tool_calls: Tools called during the turn; plain names become ``ToolCall(name)``.
        heard: See `AgentTurn` (this and every field below).
        latency_s: End of the user's speech to the first reply text, in seconds.
        first_audio_latency_s: End of the user's speech to the first reply audio, in seconds.
        usage: Token usage of the agent for this turn.
        audio_out: Path of the reply audio the adapter saved, if any.
        metadata: Anything else an adapter wants evaluators and reports to see.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
    """

    reply: str
    tool_calls: list[ToolCall | str] = field(default_factory=list)  # type: ignore[assignment]

    @property
    def calls(self) -> list[ToolCall]:
        """The tool calls, typed as ToolCall (``__post_init__`` already coerced them)."""
        return self.tool_calls  # type: ignore[return-value]


@dataclass(repr=False)
class TurnContext(AgentTurn):
    """Context passed to every evaluator for a turn.

    Args:
        user: The user message for this turn.
        reply: The agent's reply.
        tool_calls: Tools called during the turn. Each entry is a ToolCall
            (str-compatible); ``.args`` holds captured arguments or None.
        history: Full conversation history in OpenAI message format, up to but not including
            the assistant reply for this turn.
        turn_index: Zero-based index of the turn in its transcript.
        run_index: Zero-based index of the run.
        transcript_id: Id of the transcript being run.
        audio: Resolved path of the turn's audio fixture, if any.
        heard: What the agent's speech recognizer heard (voice adapters); see `AgentTurn` for
            this and the fields below.
        latency_s: End of user speech to first reply text, in seconds (voice adapters).
        first_audio_latency_s: End of user speech to first reply audio, in seconds.
        usage: Tokens the agent spent in this turn.
        audio_out: Reply audio saved by the adapter, if any.
        metadata: Adapter-specific extras from `AgentReply.metadata`.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
    """

    user: str
    reply: str
    tool_calls: list[ToolCall]
    history: list[dict[str, Any]]
    turn_index: int = 0
    run_index: int = 0
    transcript_id: str = ""
    audio: Path | None = None
