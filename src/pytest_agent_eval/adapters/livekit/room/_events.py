"""What a deployed agent tells the room adapter: its turns as the in-process adapter records them.

A room shows a caller the agent's audio, its transcriptions and its state. It does not show
which tools the agent called, which agent spoke and why, or when the agent has heard and
transcribed everything the caller said. `publish_eval_events` is the one line an agent's
entrypoint adds so that a test can know all of that. It records the session with the same
`TurnRecorder` `LiveKitAdapter` uses, in the agent's process, so a room run reports the same
records (reply, tool calls, the agent's own speech and its cause, handoffs, the greeting) as an
in-process run of the same agent.

The test's caller drives the helper with LiveKit RPC, and the helper sends it events, both
described in `_protocol`: what is sent on the wire, and when.


Events go only to participants carrying the `EVAL_LISTENER_ATTRIBUTE` attribute (the adapter's
caller does, in its token), and the helper records nothing when none is in the room as it
connects: a real user's app never receives tool outputs, so the line can stay in a production
entrypoint.

**When an audio turn is done.** The agent has heard the whole fixture: its VAD ended speech at
or after the point where the fixture's speech ends (the caller's scan of the fixture with the
agent's own VAD settings says where that is, counted from where the speech starts; the agent's
VAD timeline is matched to it at the start of its first segment). Its STT has transcribed every
segment its VAD ended. And the agent answered what it heard: the same settle as in-process (no
end of turn pending, no tool running, no handoff or speech pending, the session idle), repeated
if more transcripts came meanwhile. This holds when the agent's VAD cuts the fixture otherwise
than the scan (a busy machine delays audio into a gap): the rule counts where the speech ends,
not how many pieces it came in.

**When a realtime agent's audio turn is done.** As in process (`session._realtime`): for each
phrase the model's final transcript of it came (``user_input_transcribed``), a reply was
created since the phrase began (``speech_created``), and the same settle found nothing left;
never ``wait_for_idle`` alone.
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

from ...._serialize import to_json
from .._crash_wait import unless_crashed
from .._logs import crash_sink, hold_livekit_logs
from .._probe import agent_name, llm_usage
from .._timeline import SessionTimeline
from ..offline._stt import FixtureTextSTT, SegmentSTT
from ._capture import RoomRecorder, SpeakingTimes, capture_fields, crash_fields
from ._hearing import FixtureHearing, RealtimeHeard, realtime_info, realtime_model
from ._protocol import (
    EVAL_EVENTS_TOPIC,
    EVAL_EVENTS_VERSION,
    EVAL_LISTENER_ATTRIBUTE,
    EVAL_RPC_METHOD,
)

if TYPE_CHECKING:
    from livekit import rtc
    from livekit.agents import AgentSession

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_EVENTS_VERSION",
    "EVAL_LISTENER_ATTRIBUTE",
    "EVAL_RPC_METHOD",
    "EvalEventPublisher",
    "publish_eval_events",
]

logger = logging.getLogger("pytest_agent_eval.livekit.room")


def publish_eval_events(
    session: AgentSession[Any], *, room: rtc.Room | None = None
) -> EvalEventPublisher:
    """Record ``session``'s turns for `LiveKitRoomAdapter` and publish them on the room.

    Add it to the agent's entrypoint right after building the session, before
    ``session.start`` (the greeting happens during the start). Tests using
    `LiveKitRoomAdapter` need it for audio turns (it says when the agent has heard and
    transcribed the whole fixture), for tool expectations, handoffs, the active agent and
    greetings; without it those error, saying so. Nothing is recorded or sent when no test
    caller is in the room.

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
    """Records a session's turns and sends them on `EVAL_EVENTS_TOPIC`; answers the caller's
    RPC (see the module docstring). A turn's ``capture`` event holds: ``turn``, ``reply``,
    ``tool_calls`` (`ToolCall.to_dict`), ``agent_speech`` (`AgentSpeech` fields),
    ``handoffs`` (``from``, ``to``), ``agent``, ``metadata`` (`capture_metadata`),
    ``heard``, ``heard_segments``, ``speech_segments``, ``usage`` ([in, out] tokens of the
    turn), ``errors``, ``unrecoverable``, ``crash`` (how the agent crashed: ``message``,
    ``kind``, ``detail``, ``where``; null when it did not), ``timeline`` (an audio turn's
    `Timeline` as the agent's session saw it, timed from the ``begin`` request; null for a
    text turn); or ``error`` alone (with ``crash``)."""

    def __init__(self, session: AgentSession[Any], room: rtc.Room) -> None:
        self._session = session
        self._room = room
        self._seq = itertools.count()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._connected = asyncio.Event()
        self._registered = False
        self._retired = False
        self._changed = asyncio.Event()
        self._texts = SpeakingTimes(session)
        self._recorder: RoomRecorder | None = RoomRecorder(session)
        self._recorder.read_speech_texts(self._texts)
        self._logs = contextlib.ExitStack()
        # Tool exceptions reach the record (ToolCall.error); log levels stay the agent's own.
        self._logs.enter_context(hold_livekit_logs(self._recorder, None))
        # Called in the entrypoint before session.start: the session's tasks inherit the sink,
        # so what the agent's code raises in them is reported as the turn's crash.
        crash_sink.set(self._recorder)
        self._hearing = FixtureHearing(session, self._changed)
        self._turn_input: str | None = None
        self._tokens_before = (0, 0)
        self._text_sent_at = 0.0
        self._settling: asyncio.Task[None] | None = None
        self._stage = ""
        self._realtime: RealtimeHeard | None = None
        """The realtime audio turn in progress (None: no such turn)."""
        self._timeline: SessionTimeline | None = None
        """The session's timeline, once a test caller is in the room (None: none yet)."""
        self._handlers: list[tuple[Any, Any]] = [
            ("conversation_item_added", self._on_item),
            ("user_input_transcribed", self._on_transcript),
            ("speech_created", self._on_speech),
            ("user_state_changed", self._on_user_state),
            ("agent_state_changed", self._on_state),
            ("error", self._on_error),
            ("close", self._on_close),
        ]
        for event, handler in self._handlers:
            session.on(event, handler)
        if isinstance(session.stt, SegmentSTT):
            session.stt.add_segment_listener(self._hearing.on_segment)
        self._emit("hello")
        if room.isconnected():
            self._on_connected()
        else:
            room.on("connection_state_changed", self._on_connection_state)
        self._task = asyncio.create_task(self._send_all(), name="agent-eval-events")

    async def aclose(self) -> None:
        """Stop recording, send what is queued, and stop."""
        self._detach()
        self._queue.put_nowait(None)
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    # -- sending ----------------------------------------------------------------------------

    def _emit(self, kind: str, **fields: Any) -> None:
        if self._retired:
            return
        event = {"v": EVAL_EVENTS_VERSION, "seq": next(self._seq), "t": time.time(), "type": kind}
        event.update(fields)
        self._queue.put_nowait(json.dumps(event, default=str))
        # rtc.Room emits no event for its first connection; the session connects it during
        # start(), before the agent first turns "listening", so checking here is enough.
        if not self._connected.is_set() and self._room.isconnected():
            self._on_connected()

    def _on_connected(self) -> None:
        if self._connected.is_set():
            return
        self._connected.set()
        if not self._listeners():
            # No test caller: a production call. Record nothing, send nothing.
            self._retire()
            return
        # The timeline `LiveKitAdapter` keeps, on the session's events in this process.
        self._timeline = SessionTimeline()
        self._timeline.attach(self._session)
        with contextlib.suppress(Exception):
            self._room.local_participant.register_rpc_method(EVAL_RPC_METHOD, self._on_rpc)
            self._registered = True

    def _listeners(self) -> list[str]:
        return [
            p.identity
            for p in self._room.remote_participants.values()
            if p.attributes.get(EVAL_LISTENER_ATTRIBUTE) == "1"
        ]

    async def _send_all(self) -> None:
        await self._connected.wait()
        while (text := await self._queue.get()) is not None:
            if self._retired or not self._room.isconnected():
                break
            listeners = self._listeners()
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
            self._on_connected()

    def _retire(self) -> None:
        self._detach()
        self._retired = True
        while not self._queue.empty():
            self._queue.get_nowait()
        self._queue.put_nowait(None)

    def _detach(self) -> None:
        for event, handler in self._handlers:
            with contextlib.suppress(Exception):
                self._session.off(event, handler)
        stt_ = self._session.stt
        if isinstance(stt_, SegmentSTT):
            stt_.remove_segment_listener(self._hearing.on_segment)
        with contextlib.suppress(Exception):
            self._room.off("connection_state_changed", self._on_connection_state)
        if self._registered:
            with contextlib.suppress(Exception):
                self._room.local_participant.unregister_rpc_method(EVAL_RPC_METHOD)
            self._registered = False
        if self._settling is not None:
            self._settling.cancel()
        if self._timeline is not None:
            self._timeline.detach()
            self._timeline = None
        if self._recorder is not None:
            self._recorder.detach()
            self._recorder = None
        self._logs.close()

    # -- the caller's requests --------------------------------------------------------------

    async def _on_rpc(self, data: Any) -> str:
        try:
            request = json.loads(data.payload or "{}")
        except ValueError:
            request = {}
        op = request.get("op")
        if op == "ping":
            return "{}"
        if op == "hello":
            return json.dumps(self._hello())
        if op == "begin":
            self._begin(
                request.get("turn"),
                request.get("input"),
                request.get("fixture"),
                request.get("realtime"),
            )
            return "{}"
        if op == "settle":
            if self._settling is not None:
                self._settling.cancel()
            phrase = request.get("phrase")
            self._settling = asyncio.create_task(
                self._settle(
                    request.get("turn"),
                    phrase=int(phrase) if phrase else None,
                    hold=bool(request.get("hold")),
                ),
                name="agent-eval-settle",
            )
            return "{}"
        from livekit import rtc

        raise rtc.RpcError(rtc.RpcError.ErrorCode.UNSUPPORTED_METHOD, f"unknown op {op!r}")

    def _hello(self) -> dict[str, Any]:
        return {
            "v": EVAL_EVENTS_VERSION,
            **self._hearing.vad_hello(),
            "realtime": realtime_info(self._session),
        }

    def _begin(self, turn: Any, kind: Any, fixture: Any, realtime: Any = None) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        self._hearing.follow_recognition()
        recorder.begin_turn(int(turn))
        if self._timeline is not None:
            self._timeline.begin(int(turn))
        self._hearing.begin(fixture if isinstance(fixture, dict) else None)
        self._realtime = None
        if kind == "audio" and isinstance(realtime, dict):
            self._begin_realtime(realtime)
        self._turn_input = str(kind)
        self._tokens_before = llm_usage(self._session)
        recorder.speech_created.clear()
        recorder.text_pending = kind == "text"
        self._text_sent_at = time.perf_counter()

    def _begin_realtime(self, request: dict[str, Any]) -> None:
        """A realtime agent's audio turn: hand a scripted model hearing through provenance the
        phrases' transcripts, and start its server VAD afresh (as in process)."""
        from ..realtime._scripted import ScriptedRealtimeModel

        self._realtime = RealtimeHeard(phrases=max(1, int(request.get("phrases") or 1)))
        model = realtime_model(self._session)
        if not isinstance(model, ScriptedRealtimeModel):
            return
        transcripts = request.get("transcripts")
        if isinstance(model.hearing, FixtureTextSTT):
            model.hearing.clear()
            if isinstance(transcripts, list):
                model.hearing.expect_transcripts([str(t) for t in transcripts])
                self._realtime.proven = True
        model.reset_turn_detection()

    async def _settle(self, turn: Any, *, phrase: int | None = None, hold: bool = False) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        try:
            # The agent's crash is what the turn reports, whatever the agent does after it
            # (as in process): it ends the wait, which may otherwise never end (a crash in
            # on_user_turn_completed leaves the user's turn unanswered).
            done = await unless_crashed(recorder, self._settled(recorder, turn, phrase))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            crash = crash_fields(recorder)
            self._turn_timeline(turn)  # the turn is over: no record of it
            self._emit("capture", turn=turn, error=f"{type(exc).__name__}: {exc}", crash=crash)
            return
        if done and hold:
            # The agent is done so far; the turn goes on (keys pressed after the speech).
            self._emit("phrase", turn=turn, phrase=0)
        elif done:
            self._emit("capture", **self._capture(turn))

    async def _settled(self, recorder: RoomRecorder, turn: Any, phrase: int | None) -> bool:
        """Wait until the agent is done with ``turn`` (True), or with ``phrase`` of a realtime
        agent's fixture before its last one (False: a ``phrase`` event is sent)."""
        realtime = self._realtime if turn is not None and self._turn_input == "audio" else None
        if realtime is not None:
            k = phrase or realtime.phrases
            await self._realtime_answered(recorder, realtime, k)
            if k < realtime.phrases:
                realtime.answered_speeches = realtime.speeches
                self._emit("phrase", turn=turn, phrase=k)
                return False
        elif turn is not None and self._turn_input == "audio":
            await recorder.guard(self._until_heard())
        elif turn is not None and self._turn_input == "text":
            self._set_stage("the agent to start its reply to the text")
            await recorder.guard(recorder.speech_created.wait())
        while realtime is None:
            await recorder.settle(self._set_stage)
            if turn is None or self._turn_input != "audio" or self._hearing.transcribed():
                break
            await recorder.guard(self._until_heard())
        return True

    async def _realtime_answered(
        self, recorder: RoomRecorder, realtime: RealtimeHeard, k: int
    ) -> None:
        """Wait until the agent is done with phrase ``k``: the model's final transcript of it,
        a reply created since the phrase before was answered, nothing left pending."""
        n = realtime.phrases
        self._set_stage(
            f"the realtime model's transcript of phrase {k} of {n} (user_input_transcribed; "
            f"user state {self._session.user_state!r})"
        )
        await recorder.guard(
            self._until(lambda: len(realtime.transcripts) >= k or bool(recorder.unrecoverable))
        )
        self._raise_realtime_errors(recorder)
        if not realtime.transcripts[k - 1].strip():
            raise RuntimeError(
                f"the realtime model heard nothing in phrase {k} of {n}: its transcript came "
                "back empty, so the agent got no user turn"
            )
        self._set_stage(f"the agent's reply to phrase {k} of {n} (speech_created)")
        await recorder.guard(
            self._until(
                lambda: (
                    realtime.speeches > realtime.answered_speeches or bool(recorder.unrecoverable)
                )
            )
        )
        self._raise_realtime_errors(recorder)
        await recorder.settle(self._set_stage)
        self._raise_realtime_errors(recorder)
        if realtime.proven and len(realtime.transcripts) > k:
            # Each proven transcript belongs to one phrase: with more pieces than phrases,
            # the model heard a later phrase's words in this phrase's audio.
            raise RuntimeError(
                f"the realtime model's VAD in the worker cut phrase(s) 1 to {k} of {n} into "
                f"{len(realtime.transcripts)} pieces where the test's scan of the fixture "
                "found one each (audio delayed into a pause on a busy machine?), so the "
                "transcripts proven from the fixture's provenance no longer match the audio "
                "they were heard in; give the worker's ScriptedRealtimeModel "
                "hearing=WhisperSTT(), which hears whatever it is cut into"
            )

    @staticmethod
    def _raise_realtime_errors(recorder: RoomRecorder) -> None:
        if recorder.unrecoverable:
            raise RuntimeError("the realtime model failed: " + "; ".join(recorder.errors))

    async def _until(self, done: Any) -> None:
        while not done():
            self._changed.clear()
            await self._changed.wait()

    def _set_stage(self, text: str) -> None:
        if text != self._stage:
            self._stage = text
            self._emit("stage", text=text)

    async def _until_heard(self) -> None:
        while True:
            self._changed.clear()
            why = self._hearing.missing()
            if why is None:
                return
            self._set_stage(why)
            await self._changed.wait()

    def _capture(self, turn: Any) -> dict[str, Any]:
        recorder = self._recorder
        assert recorder is not None
        if turn is None:
            capture = recorder.end_turn()
            speech = capture.agent_speech
            if " ".join(s.text for s in speech if s.text) != capture.reply:
                # As in process: said outside any speech the recorder could attribute.
                from ....models import AgentSpeech

                speech = [AgentSpeech(text=capture.reply, cause="greeting", agent=capture.agent)]
            capture.agent_speech = speech
            return capture_fields(None, capture, recorder, heard=None, usage=None)
        anchors = (
            list(recorder.speech_ended_at) if self._turn_input == "audio" else [self._text_sent_at]
        )
        capture = recorder.end_turn(anchors)
        after = llm_usage(self._session)
        usage = [after[0] - self._tokens_before[0], after[1] - self._tokens_before[1]]
        heard = recorder.heard if self._turn_input == "audio" else None
        fields = capture_fields(int(turn), capture, recorder, heard=heard, usage=usage)
        fields["timeline"] = self._turn_timeline(turn)
        realtime = self._realtime
        if realtime is not None:
            # As `LiveKitAdapter` reports a realtime turn (``RealtimeAudio.describe``).
            fields["speech_segments"] = realtime.phrases
            fields["speech_ends_s"] = []
            info = realtime_info(self._session) or {}
            fields["realtime"] = {
                "model": info.get("model"),
                "turn_detection": info.get("turn_detection"),
                "transcripts": list(realtime.transcripts),
            }
            return fields
        fields["speech_segments"] = len(self._hearing.heard.ends)
        fields["speech_ends_s"] = self._hearing.ends_in_fixture_time()
        return fields

    def _turn_timeline(self, turn: Any) -> dict[str, Any] | None:
        """Turn ``turn``'s timeline, closed (None for a text turn, or no turn)."""
        if self._timeline is None or turn is None:
            return None
        timeline = self._timeline.take(int(turn), voice=self._turn_input == "audio")
        return to_json(timeline) if timeline is not None else None

    # -- the session's STT and speech ------------------------------------------------------

    def _on_transcript(self, ev: Any) -> None:
        if ev.is_final and self._realtime is not None:
            self._realtime.transcripts.append(ev.transcript)
            self._changed.set()
        if ev.is_final and ev.transcript:
            self._hearing.on_final()

    def _on_speech(self, ev: Any) -> None:
        if self._realtime is not None:
            self._realtime.speeches += 1
            self._changed.set()

    # -- session events ---------------------------------------------------------------------

    def _on_item(self, ev: Any) -> None:
        if getattr(ev.item, "type", None) == "agent_handoff":
            self._hearing.follow_recognition()

    def _active_agent(self) -> str | None:
        try:
            return agent_name(self._session.current_agent)
        except RuntimeError:  # not started yet, or closed
            return None

    def _on_user_state(self, ev: Any) -> None:
        self._hearing.follow_recognition()
        self._emit("user_state", new=ev.new_state)

    def _on_state(self, ev: Any) -> None:
        self._hearing.follow_recognition()
        self._texts.on_state(ev.new_state)
        self._emit("agent_state", old=ev.old_state, new=ev.new_state, agent=self._active_agent())

    def _on_error(self, ev: Any) -> None:
        error = getattr(ev.error, "error", ev.error)
        self._emit(
            "error",
            source=type(ev.source).__name__,
            error=f"{type(error).__name__}: {error}",
            recoverable=bool(getattr(ev.error, "recoverable", False)),
        )

    def _on_close(self, ev: Any) -> None:
        # A session that closes on the agent's crash (an error it gave up on) ends the turn
        # before its record is sent: the crash goes with the close.
        crash = crash_fields(self._recorder) if self._recorder is not None else None
        error = str(ev.error) if ev.error else None
        self._emit("close", reason=str(ev.reason), error=error, crash=crash)
        self._detach()
        self._queue.put_nowait(None)
