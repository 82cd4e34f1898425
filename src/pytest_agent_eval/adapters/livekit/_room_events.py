"""What a deployed agent tells the room adapter: tool calls, handoffs, transcripts, state.

A room shows a caller the agent's audio, its transcriptions and its state, but not the tools it
called. `publish_eval_events` is the one line an agent's entrypoint adds so that a test can see
them too: it listens to the ``AgentSession``'s own events and sends each, as one JSON object,
on the `EVAL_EVENTS_TOPIC` text-stream topic of the room. `LiveKitRoomAdapter` reads that topic.

Events go only to participants that ask for them with the `EVAL_LISTENER_ATTRIBUTE` attribute
(the adapter's caller does, in its token): a real user's app never receives tool outputs, so
the helper can stay in a production entrypoint.

Wire format (version 1), one JSON object per text stream; every object has ``v`` (1), ``seq``
(0, 1, 2, ... in sending order), ``t`` (the agent's ``time.time()``) and ``type``:

========================  =================================================================
``hello``                 the helper is installed (sent once, first)
``tool_calls``            ``calls``: ``[{name, arguments, call_id, output, is_error}]``
``handoff``               ``old_agent``, ``new_agent``: ids of the agents; ``from_agent``,
                          ``to_agent``: their class names (how reports name agents)
``message``               ``role``, ``text``, ``interrupted``: a chat message was added
``user_transcript``       ``text``: a final transcript of the user's speech
``user_state``            ``new``: the user is ``speaking``, ``listening`` or ``away``
``agent_state``           ``old``, ``new``, ``agent`` (the active agent's class name, or
                          null); on ``listening`` also ``llm_tokens``: [in, out]
``error``                 ``source``, ``error``, ``recoverable``
``close``                 ``reason``, ``error``: the session closed
========================  =================================================================

Objects are sent in ``seq`` order, so once the adapter has read the ``agent_state`` event that
ends a reply, every tool call of that reply has been read too.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import time
import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from livekit import rtc
    from livekit.agents import AgentSession

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_EVENTS_VERSION",
    "EVAL_LISTENER_ATTRIBUTE",
    "EvalEventPublisher",
    "parse_eval_event",
    "publish_eval_events",
]

EVAL_EVENTS_TOPIC = "agent-eval.events"
"""The text-stream topic the helper sends on and the adapter reads."""

EVAL_LISTENER_ATTRIBUTE = "agent-eval.listen"
"""A participant attribute; participants that carry it (``"1"``) receive the events."""

EVAL_EVENTS_VERSION = 1

logger = logging.getLogger("pytest_agent_eval.livekit.room")


def publish_eval_events(
    session: AgentSession, *, room: rtc.Room | None = None
) -> EvalEventPublisher:
    """Publish ``session``'s tool calls, handoffs, transcripts and state on the room.

    Add it to the agent's entrypoint, right after building the session (before or after
    ``session.start``). Events go only to participants with the `EVAL_LISTENER_ATTRIBUTE`
    attribute (test callers), so nothing is sent when no test is listening. Tests using
    `LiveKitRoomAdapter` need it for every tool expectation (``tool_calls_*``): without it the
    room shows no tool calls, and those checks fail saying so.

    Args:
        session: The agent's session.
        room: The room to publish on; defaults to the job's room (``get_job_context().room``).

    Returns:
        The publisher; it stops by itself when the session closes.

    Example:
        ```python
        @server.rtc_session(agent_name="booking")
        async def entrypoint(ctx: JobContext) -> None:
            session = AgentSession(stt=..., llm=..., tts=..., vad=...)
            publish_eval_events(session)
            await session.start(agent=BookingAgent(), room=ctx.room)
        ```
    """
    if session in _published:
        raise RuntimeError(
            "publish_eval_events was already called for this session; call it once per session"
        )
    if room is None:
        from livekit.agents import get_job_context

        room = get_job_context().room
    _published.add(session)
    return EvalEventPublisher(session, room)


_published: weakref.WeakSet[Any] = weakref.WeakSet()
"""Sessions that have a publisher: two would send two interleaved sequences."""


class EvalEventPublisher:
    """Sends a session's events on `EVAL_EVENTS_TOPIC`, in order, once the room is connected."""

    def __init__(self, session: AgentSession, room: rtc.Room) -> None:
        self._session = session
        self._room = room
        self._seq = itertools.count()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._connected = asyncio.Event()
        self._agent: str | None = None
        self._handlers: list[tuple[str, Any]] = [
            ("function_tools_executed", self._on_tools),
            ("conversation_item_added", self._on_item),
            ("user_input_transcribed", self._on_transcript),
            ("user_state_changed", self._on_user_state),
            ("agent_state_changed", self._on_state),
            ("error", self._on_error),
            ("close", self._on_close),
        ]
        for event, handler in self._handlers:
            session.on(event, handler)
        if room.isconnected():
            self._connected.set()
        else:
            room.on("connection_state_changed", self._on_connection_state)
        self._emit("hello")
        self._task = asyncio.create_task(self._send_all(), name="agent-eval-events")

    async def aclose(self) -> None:
        """Stop listening, send what is queued, and stop."""
        self._detach()
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # -- sending ----------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        event = {"v": EVAL_EVENTS_VERSION, "seq": next(self._seq), "t": time.time(), "type": kind}
        event.update(fields)
        self._queue.put_nowait(json.dumps(event, default=str))
        # rtc.Room emits no event for its first connection; the session connects it during
        # start(), before the agent first turns "listening", so checking here is enough.
        if not self._connected.is_set() and self._room.isconnected():
            self._connected.set()

    async def _send_all(self) -> None:
        await self._connected.wait()
        while (text := await self._queue.get()) is not None:
            if not self._room.isconnected():
                break
            listeners = [
                p.identity
                for p in self._room.remote_participants.values()
                if p.attributes.get(EVAL_LISTENER_ATTRIBUTE) == "1"
            ]
            if not listeners:
                continue
            try:
                await self._room.local_participant.send_text(
                    text, topic=EVAL_EVENTS_TOPIC, destination_identities=listeners
                )
            except Exception as exc:  # a closing room; the test reports what it misses
                logger.warning("agent-eval events: could not send an event: %s", exc)

    def _on_connection_state(self, state: Any) -> None:
        from livekit import rtc

        if state == rtc.ConnectionState.CONN_CONNECTED:
            self._connected.set()

    def _detach(self) -> None:
        for event, handler in self._handlers:
            with contextlib.suppress(Exception):
                self._session.off(event, handler)
        with contextlib.suppress(Exception):
            self._room.off("connection_state_changed", self._on_connection_state)

    # -- session events ---------------------------------------------------------------------

    def _on_tools(self, ev: Any) -> None:
        calls = []
        for call, out in zip(ev.function_calls, ev.function_call_outputs, strict=False):
            calls.append(
                {
                    "name": call.name,
                    "arguments": call.arguments,
                    "call_id": call.call_id,
                    "output": out.output if out is not None else None,
                    "is_error": bool(out is not None and out.is_error),
                }
            )
        self._emit("tool_calls", calls=calls)

    def _on_item(self, ev: Any) -> None:
        item = ev.item
        if getattr(item, "type", None) == "agent_handoff":
            # Emitted once the session runs the new agent: it is the current one. The session's
            # start is one too (old_agent None). Only these events move `_agent`: a state
            # change can be reported before the handoff item is.
            previous, self._agent = self._agent, self._active_agent()
            self._emit(
                "handoff",
                old_agent=item.old_agent_id,
                new_agent=item.new_agent_id,
                from_agent=previous,
                to_agent=self._agent,
            )
        elif getattr(item, "type", None) == "message":
            self._emit(
                "message",
                role=item.role,
                text=item.text_content or "",
                interrupted=bool(getattr(item, "interrupted", False)),
            )

    def _active_agent(self) -> str | None:
        from ._turn import agent_name

        try:
            return agent_name(self._session.current_agent)
        except RuntimeError:  # not started yet, or closed
            return None

    def _on_transcript(self, ev: Any) -> None:
        if ev.is_final and ev.transcript:
            self._emit("user_transcript", text=ev.transcript)

    def _on_user_state(self, ev: Any) -> None:
        self._emit("user_state", new=ev.new_state)

    def _on_state(self, ev: Any) -> None:
        fields: dict[str, Any] = {
            "old": ev.old_state,
            "new": ev.new_state,
            "agent": self._active_agent(),
        }
        if ev.new_state == "listening":
            from ._turn import llm_usage

            fields["llm_tokens"] = list(llm_usage(self._session))
        self._emit("agent_state", **fields)

    def _on_error(self, ev: Any) -> None:
        error = getattr(ev.error, "error", ev.error)
        self._emit(
            "error",
            source=type(ev.source).__name__,
            error=f"{type(error).__name__}: {error}",
            recoverable=bool(getattr(ev.error, "recoverable", False)),
        )

    def _on_close(self, ev: Any) -> None:
        self._emit("close", reason=str(ev.reason), error=str(ev.error) if ev.error else None)
        self._detach()
        self._queue.put_nowait(None)


def parse_eval_event(text: str) -> dict[str, Any] | None:
    """One event sent by the helper, or None for anything else (another version, not JSON)."""
    try:
        event = json.loads(text)
    except ValueError:
        return None
    if not isinstance(event, dict) or event.get("v") != EVAL_EVENTS_VERSION:
        return None
    if not isinstance(event.get("type"), str) or not isinstance(event.get("seq"), int):
        return None
    return event
