"""What a caller sees of the agent in a LiveKit room, recorded from the room's own events.

The observer is attached to the caller's ``rtc.Room`` before it connects. It records the agent
participant and its state (``lk.agent.state``), the agent's reply text (``lk.transcription``
streams it sends), what the agent transcribed of the caller (``lk.transcription`` streams sent
on the caller's behalf), the agent's audio, and the events of the agent-side helper
(`publish_eval_events`): the record of each turn, what the agent is waiting for, its errors.
Every change wakes the coroutines waiting in `RoomObserver.until`.

A stream that breaks off (the agent's process died in the middle of a reply) is recorded as
broken, never left as an exception nobody retrieves.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from livekit import rtc

from ....errors import AdapterError
from ._protocol import EVAL_EVENTS_TOPIC, EVAL_EVENTS_VERSION, parse_eval_event

__all__ = ["ReplyStream", "RoomObserver", "RoomTurnLog", "joined"]

TOPIC_TRANSCRIPTION = "lk.transcription"
ATTRIBUTE_AGENT_STATE = "lk.agent.state"
ATTRIBUTE_TRANSCRIPTION_FINAL = "lk.transcription_final"

AUDIO_RATE = 48000
"""Rate of the audio the caller sends and receives (WebRTC's Opus runs at 48 kHz)."""

_AUDIBLE_RMS = 10 ** (-50 / 20) * 32768
"""A received frame louder than -50 dBFS counts as the agent speaking (decoded silence is
digital zero or close to it)."""


@dataclass
class ReplyStream:
    """One ``lk.transcription`` stream of the agent: a segment of a reply."""

    opened_at: float
    text: str = ""
    first_chunk_at: float | None = None
    closed_at: float | None = None
    final: bool = False
    broken: str | None = None
    """Why the stream ended before its end (the agent went away mid-reply), if it did."""


@dataclass
class RoomTurnLog:
    """What the room showed while one turn (or the greeting) was going on."""

    began_at: float
    anchor: float | None = None
    """End of the caller's input: the last audio frame sent, or the text sent."""
    stream: tuple[float, float] | None = None
    """When the first and the last frame of the turn's audio left the caller (its tail too)."""
    agent_zero: float | None = None
    """When the agent's own timeline of the turn starts (its helper took the ``begin``
    request): the middle of that request's round trip."""
    agent_zero_error_s: float | None = None
    """How far ``agent_zero`` may be off: half the round trip."""
    ended_at: float | None = None
    heard: list[str] = field(default_factory=list)
    """Final transcripts of the caller, as the agent published them in the room."""
    heard_at: list[float] = field(default_factory=list)
    """When each of them arrived."""
    errors: list[str] = field(default_factory=list)
    """Errors the agent's session reported (from the helper)."""
    unrecoverable: list[str] = field(default_factory=list)
    states: list[str] = field(default_factory=list)
    """``lk.agent.state`` values seen during the turn, in order."""


class RoomObserver:
    """Records the agent as the caller's room shows it; see the module docstring."""

    def __init__(self, room: rtc.Room, *, caller_identity: str, capture_audio: bool) -> None:
        self.room = room
        self.caller_identity = caller_identity
        self.capture_audio = capture_audio
        self.agent: rtc.RemoteParticipant | None = None
        self.agent_state: str | None = None
        self.agent_left = False
        self.agent_gone: str | None = None
        """Why the agent is taken for gone although still in the room (it stopped answering)."""
        self.disconnected: str | None = None
        self.mic_subscribed = False
        self.replies: list[ReplyStream] = []
        self.audio: list[tuple[float, bytes, bool]] = []
        """``(arrival, pcm16 at AUDIO_RATE, audible)`` for every frame of the agent's audio."""
        self.helper_events = False
        """Events of the current helper version arrived."""
        self.helper_version: int | None = None
        """The version of the first helper event seen (another one: an outdated helper)."""
        self.helper_stage: str | None = None
        """What the helper last said the agent waits for before its turn is done."""
        self.helper_closed: str | None = None
        self.crash: dict[str, Any] | None = None
        """How the agent crashed, the first time the helper said so (in a turn's record, or
        as its session closed on the crash): what a turn that failed after it reports."""
        self.active_agent: str | None = None
        self.captures: dict[int | None, dict[str, Any]] = {}
        """The helper's record of each turn (None: the greeting)."""
        self.phrases: set[tuple[int, int]] = set()
        """``(turn, phrase)`` a realtime agent has answered (the helper's ``phrase`` events)."""
        self.stream_errors: list[str] = []
        """Streams that broke off, and why."""
        self.greeting = RoomTurnLog(began_at=time.perf_counter())
        self.turn: RoomTurnLog = self.greeting
        self._pending_events: dict[int, dict[str, Any]] = {}
        self._next_seq = 0
        self._changed = asyncio.Event()
        self._tasks: set[asyncio.Task[Any]] = set()
        room.on("participant_connected", self._on_participant_connected)
        room.on("participant_disconnected", self._on_participant_disconnected)
        room.on("participant_attributes_changed", self._on_attributes_changed)
        room.on("track_subscribed", self._on_track_subscribed)
        room.on("local_track_subscribed", self._on_local_track_subscribed)
        room.on("disconnected", self._on_disconnected)
        room.register_text_stream_handler(TOPIC_TRANSCRIPTION, self._on_transcription)
        room.register_text_stream_handler(EVAL_EVENTS_TOPIC, self._on_eval_event)

    # -- waiting ----------------------------------------------------------------------------

    def notify(self) -> None:
        """Wake every waiter to re-check its condition."""
        self._changed.set()

    async def gone_reason(self, within_s: float) -> str | None:
        """Why the agent or the room went away, if it shows within ``within_s``; else None. An
        RPC to an agent that is hanging up fails ("Failed to send") before the room says it
        left: the reason is its leaving, not its helper."""
        try:
            async with asyncio.timeout(within_s):
                await self.until(lambda: False)
        except AdapterError as exc:
            return str(exc)
        except TimeoutError:
            return None
        return None

    async def until(self, predicate: Callable[[], bool], *, session_errors: bool = True) -> None:
        """Return once ``predicate()`` holds; raise if the agent or the room went away, or
        (``session_errors``) its session reported an error it gave up on. Not while waiting
        for the helper's record of the turn: the record says how the agent failed (or crashed),
        and it comes right after."""
        while True:
            self._changed.clear()
            self.raise_if_gone(session_errors=session_errors)
            if predicate():
                return
            await self._changed.wait()

    def raise_if_gone(self, *, session_errors: bool = True) -> None:
        if self.disconnected is not None:
            raise AdapterError(f"the caller was disconnected from the room ({self.disconnected})")
        if self.agent_left:
            raise AdapterError(f"the agent ({self.agent_identity}) left the room")
        if self.agent_gone is not None:
            raise AdapterError(self.agent_gone)
        if self.helper_closed is not None:
            self.raise_session_errors()  # why it closed, when it gave up on an error
            raise AdapterError(f"the agent's session closed ({self.helper_closed})")
        if session_errors:
            self.raise_session_errors()

    def raise_session_errors(self) -> None:
        """Raise the errors the agent's session gave up on in this turn, if any."""
        if self.turn.unrecoverable:
            raise AdapterError(
                "the agent's session reported an error it gave up on: "
                + "; ".join(self.turn.unrecoverable)
            )

    # -- state queries ----------------------------------------------------------------------

    @property
    def agent_identity(self) -> str | None:
        return self.agent.identity if self.agent is not None else None

    def open_replies(self) -> list[ReplyStream]:
        return [r for r in self.replies if r.closed_at is None]

    def replies_since(self, t: float) -> list[ReplyStream]:
        return [r for r in self.replies if r.opened_at >= t]

    def audible_since(self, t: float) -> float | None:
        for at, _pcm, audible in self.audio:
            if at >= t and audible:
                return at
        return None

    def quiet(self) -> bool:
        """The agent listens and no reply stream is open."""
        return not self.open_replies() and self.agent_state == "listening"

    def describe(self) -> str:
        """The agent's situation, for timeout messages."""
        parts = [f"agent state {self.agent_state!r}"]
        if self.helper_stage:
            parts.append(f"the agent waits for {self.helper_stage}")
        heard = " ".join(self.turn.heard)
        parts.append(f"heard so far {heard!r}" if heard else "the agent transcribed nothing yet")
        reply = " ".join(r.text.strip() for r in self.replies_since(self.turn.began_at))
        parts.append(f"reply so far {reply!r}" if reply.strip() else "no reply text yet")
        if self.capture_audio and self.agent is not None:
            audible = self.audible_since(self.turn.began_at) is not None
            parts.append("agent audio received" if audible else "no agent audio")
        return ", ".join(parts)

    # -- room events ------------------------------------------------------------------------

    def find_agent(self) -> None:
        """Pick up an agent already in the room (joined before the handlers saw it)."""
        for participant in self.room.remote_participants.values():
            self._on_participant_connected(participant)

    def _on_participant_connected(self, participant: rtc.RemoteParticipant) -> None:
        if self.agent is not None or participant.kind != rtc.ParticipantKind.PARTICIPANT_KIND_AGENT:
            return
        self.agent = participant
        # It may already be listening when it appears; then no change event comes.
        self._set_state(participant.attributes.get(ATTRIBUTE_AGENT_STATE))
        self.notify()

    def _on_participant_disconnected(self, participant: rtc.RemoteParticipant) -> None:
        if self.agent is not None and participant.identity == self.agent.identity:
            self.agent_left = True
            self.notify()

    def _on_attributes_changed(self, changed: dict[str, str], participant: rtc.Participant) -> None:
        if self.agent is None or participant.identity != self.agent.identity:
            return
        if ATTRIBUTE_AGENT_STATE in changed:
            self._set_state(changed[ATTRIBUTE_AGENT_STATE])
            self.notify()

    def _set_state(self, state: str | None) -> None:
        if state is None or state == self.agent_state:
            return
        self.agent_state = state
        self.turn.states.append(state)

    def _on_track_subscribed(
        self,
        track: rtc.Track,
        publication: rtc.RemoteTrackPublication,
        participant: rtc.RemoteParticipant,
    ) -> None:
        if not self.capture_audio or track.kind != rtc.TrackKind.KIND_AUDIO:
            return
        if participant.kind != rtc.ParticipantKind.PARTICIPANT_KIND_AGENT:
            return
        self._spawn(self._read_audio(track), "the agent's audio")

    def _on_local_track_subscribed(self, track: rtc.Track) -> None:
        self.mic_subscribed = True
        self.notify()

    def _on_disconnected(self, reason: Any = None) -> None:
        self.disconnected = _reason_name(reason)
        self.notify()

    # -- streams ----------------------------------------------------------------------------

    def _spawn(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        task = asyncio.ensure_future(self._guarded(coro, what))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _guarded(self, coro: Coroutine[Any, Any, None], what: str) -> None:
        """Run a stream reader; a stream that breaks off is noted, not raised into the void."""
        try:
            await coro
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.stream_errors.append(f"{what}: {type(exc).__name__}: {exc}")
            self.notify()

    def _on_transcription(self, reader: rtc.TextStreamReader, identity: str) -> None:
        if identity == self.caller_identity:
            self._spawn(self._read_heard(reader), "the agent's transcript of the caller")
        else:
            self._spawn(self._read_reply(reader), "the agent's reply text")

    async def _read_heard(self, reader: rtc.TextStreamReader) -> None:
        text = await reader.read_all()
        attributes = reader.info.attributes or {}
        if attributes.get(ATTRIBUTE_TRANSCRIPTION_FINAL) == "true" and text.strip():
            self.turn.heard.append(text.strip())
            self.turn.heard_at.append(time.perf_counter())
            self.notify()

    async def _read_reply(self, reader: rtc.TextStreamReader) -> None:
        stream = ReplyStream(opened_at=time.perf_counter())
        self.replies.append(stream)
        self.notify()
        try:
            async for chunk in reader:
                if stream.first_chunk_at is None and chunk.strip():
                    stream.first_chunk_at = time.perf_counter()
                stream.text += chunk
                self.notify()
        except Exception as exc:
            stream.broken = f"{type(exc).__name__}: {exc}"
            raise
        finally:
            attributes = reader.info.attributes or {}
            stream.final = attributes.get(ATTRIBUTE_TRANSCRIPTION_FINAL) == "true"
            stream.closed_at = time.perf_counter()
            self.notify()

    async def _read_audio(self, track: rtc.Track) -> None:
        stream = rtc.AudioStream(track, sample_rate=AUDIO_RATE, num_channels=1)
        try:
            async for event in stream:
                pcm = bytes(event.frame.data)
                samples = np.frombuffer(pcm, dtype=np.int16).astype(np.float32)
                rms = float(np.sqrt(np.mean(samples * samples))) if samples.size else 0.0
                audible = rms >= _AUDIBLE_RMS
                self.audio.append((time.perf_counter(), pcm, audible))
                if audible:
                    self.notify()
        finally:
            await stream.aclose()

    def _on_eval_event(self, reader: rtc.TextStreamReader, identity: str) -> None:
        self._spawn(self._read_eval_event(reader), "the agent's eval events")

    async def _read_eval_event(self, reader: rtc.TextStreamReader) -> None:
        event = parse_eval_event(await reader.read_all())
        if event is None:
            return
        if self.helper_version is None:
            self.helper_version = int(event["v"])
        if event["v"] != EVAL_EVENTS_VERSION:
            self.notify()
            return
        self._pending_events[event["seq"]] = event
        # The helper sends in order; streams may finish reading out of order.
        while self._next_seq in self._pending_events:
            self._apply(self._pending_events.pop(self._next_seq))
            self._next_seq += 1
        self.notify()

    def _apply(self, event: dict[str, Any]) -> None:
        kind = event["type"]
        self.helper_events = True
        if self.crash is None and isinstance(event.get("crash"), dict):
            self.crash = event["crash"]
        if kind == "capture":
            self.captures[event.get("turn")] = event
            self.helper_stage = None
        elif kind == "phrase":
            self.phrases.add((int(event["turn"]), int(event["phrase"])))
            self.helper_stage = None
        elif kind == "stage":
            self.helper_stage = str(event.get("text"))
        elif kind == "agent_state":
            if event.get("agent"):
                self.active_agent = str(event["agent"])
        elif kind == "error":
            text = f"{event.get('source')}: {event.get('error')}"
            self.turn.errors.append(text)
            if not event.get("recoverable"):
                self.turn.unrecoverable.append(text)
        elif kind == "close":
            reason = str(event.get("reason"))
            if event.get("error"):
                reason += f": {event['error']}"
            self.helper_closed = reason

    # -- audio out --------------------------------------------------------------------------

    def reply_audio(self, start: float, end: float) -> bytes:
        """The agent's audio from its first to its last audible frame in ``[start, end]``."""
        frames = [(at, pcm, audible) for at, pcm, audible in self.audio if start <= at <= end]
        audible = [i for i, (_at, _pcm, loud) in enumerate(frames) if loud]
        if not audible:
            return b""
        return b"".join(pcm for _at, pcm, _loud in frames[audible[0] : audible[-1] + 1])

    async def aclose(self) -> None:
        """Stop reading streams and audio."""
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        for topic in (TOPIC_TRANSCRIPTION, EVAL_EVENTS_TOPIC):
            with contextlib.suppress(Exception):
                self.room.unregister_text_stream_handler(topic)


def _reason_name(reason: Any) -> str:
    if reason is None:
        return "no reason given"
    try:
        return str(rtc.DisconnectReason.Name(reason))
    except Exception:
        return str(reason)


def joined(texts: Any) -> str:
    """Texts space-joined, each stripped, empty ones left out."""
    return " ".join(t.strip() for t in texts if t and t.strip())
