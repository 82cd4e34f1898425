"""What happened in one turn of a LiveKit session, recorded from its public events."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from livekit.agents import AgentSession, llm
from livekit.agents.voice.events import (
    CloseEvent,
    ConversationItemAddedEvent,
    ErrorEvent,
    FunctionToolsExecutedEvent,
    UserInputTranscribedEvent,
    UserStateChangedEvent,
)

from ...errors import AdapterError
from ...models import ToolCall, Usage

__all__ = ["SessionClosedError", "TurnRecorder", "llm_usage", "usage_delta"]

T = TypeVar("T")


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
    """Listens to a session for the duration of one conversation and splits it into turns.

    Everything comes from public session events: assistant messages from
    ``conversation_item_added``, tool calls with their outputs from ``function_tools_executed``
    (which, unlike the chat history, also carries calls to tools the agent does not have),
    transcripts from ``user_input_transcribed`` and end of user speech from
    ``user_state_changed``.
    """

    def __init__(self, session: AgentSession) -> None:
        self._session = session
        self.items: list[llm.ChatItem] = []
        """Assistant messages, function calls and outputs of the current turn, in order."""
        self.tool_calls: list[ToolCall] = []
        self.finals: list[str] = []
        """Non-empty final transcripts of the current turn."""
        self.errors: list[str] = []
        """Errors the session reported during the turn (LLM, STT, TTS), as text."""
        self.unrecoverable = 0
        """How many of them the session gave up on (no retry left)."""
        self.final_count = _Counter()
        self.segments_recognized = _Counter()
        """Speech segments our own STTs finished (including empty transcripts)."""
        self.speech_ended = _Counter()
        """Times the user went from speaking to listening."""
        self.speech_ended_at: list[float] = []
        """``time.perf_counter()`` of each of those times."""
        self._closed: asyncio.Future[CloseEvent] = asyncio.get_running_loop().create_future()
        self._handlers: list[tuple[str, Callable[..., None]]] = [
            ("conversation_item_added", self._on_item),
            ("function_tools_executed", self._on_tools),
            ("user_input_transcribed", self._on_transcript),
            ("user_state_changed", self._on_user_state),
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

    def begin_turn(self) -> None:
        """Forget the previous turn."""
        self.items = []
        self.tool_calls = []
        self.finals = []
        self.errors = []
        self.unrecoverable = 0
        self.final_count = _Counter()
        self.segments_recognized = _Counter()
        self.speech_ended = _Counter()
        self.speech_ended_at = []

    def on_segment(self, text: str) -> None:
        """Listener for `SegmentSTT`: one more segment recognized."""
        self.segments_recognized.bump()

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable``, or raise `SessionClosedError` if the session closes first."""
        task = asyncio.ensure_future(awaitable)
        try:
            done, _ = await asyncio.wait({task, self._closed}, return_when=asyncio.FIRST_COMPLETED)
        except BaseException:
            task.cancel()
            raise
        if task in done:
            return task.result()
        task.cancel()
        ev = self._closed.result()
        cause = f": {ev.error}" if ev.error is not None else ""
        raise SessionClosedError(f"the session closed during the turn ({ev.reason}){cause}")

    # -- event handlers -------------------------------------------------------------------

    def _on_item(self, ev: ConversationItemAddedEvent) -> None:
        item = ev.item
        if isinstance(item, llm.ChatMessage) and item.role == "assistant":
            self.items.append(item)

    def _on_tools(self, ev: FunctionToolsExecutedEvent) -> None:
        for call, out in zip(ev.function_calls, ev.function_call_outputs, strict=False):
            self.items.append(call)
            if out is not None:
                self.items.append(out)
            self.tool_calls.append(
                ToolCall(
                    call.name,
                    _parse_args(call.arguments),
                    output=out.output if out is not None else None,
                    is_error=bool(out is not None and out.is_error),
                    call_id=call.call_id,
                )
            )

    def _on_transcript(self, ev: UserInputTranscribedEvent) -> None:
        if ev.is_final and ev.transcript:
            self.finals.append(ev.transcript)
            self.final_count.bump()

    def _on_user_state(self, ev: UserStateChangedEvent) -> None:
        if ev.old_state == "speaking" and ev.new_state != "speaking":
            self.speech_ended_at.append(time.perf_counter())
            self.speech_ended.bump()

    def _on_error(self, ev: ErrorEvent) -> None:
        error = getattr(ev.error, "error", ev.error)
        source = type(ev.source).__name__
        recoverable = getattr(ev.error, "recoverable", None)
        kind = "recoverable" if recoverable else "unrecoverable"
        if not recoverable:
            self.unrecoverable += 1
        self.errors.append(f"{source} ({kind}): {type(error).__name__}: {error}")

    def _on_close(self, ev: CloseEvent) -> None:
        if not self._closed.done():
            self._closed.set_result(ev)

    # -- results --------------------------------------------------------------------------

    @property
    def reply(self) -> str:
        """Every assistant message of the turn, in order, joined by a space."""
        texts = [
            (item.text_content or "").strip()
            for item in self.items
            if isinstance(item, llm.ChatMessage)
        ]
        return " ".join(t for t in texts if t)

    @property
    def heard(self) -> str:
        """The user's speech as the session's STT transcribed it."""
        return " ".join(t.strip() for t in self.finals if t.strip())

    def events(self) -> list[dict[str, Any]]:
        """The turn's items as JSON-friendly dicts (for reports)."""
        out: list[dict[str, Any]] = []
        for item in self.items:
            if isinstance(item, llm.ChatMessage):
                out.append({"type": "message", "role": item.role, "text": item.text_content or ""})
            elif isinstance(item, llm.FunctionCall):
                out.append(
                    {"type": "function_call", "name": item.name, "arguments": item.arguments}
                )
            elif isinstance(item, llm.FunctionCallOutput):
                out.append(
                    {
                        "type": "function_call_output",
                        "name": item.name,
                        "output": item.output,
                        "is_error": item.is_error,
                    }
                )
        return out


def _parse_args(arguments: str) -> dict[str, Any] | None:
    try:
        value = json.loads(arguments) if arguments else {}
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def llm_usage(session: AgentSession) -> tuple[int, int]:
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
