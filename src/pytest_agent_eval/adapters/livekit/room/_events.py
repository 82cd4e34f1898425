"""What a deployed agent tells the room adapter: its turns as the in-process adapter records them.

A room shows a caller the agent's audio, its transcriptions and its state. It does not show
which tools the agent called, which agent spoke and why, or when the agent has heard and
transcribed everything the caller said. `publish_eval_events` is the one line an agent's
entrypoint adds so that a test can know all of that. It records the session with the same
`TurnRecorder` `LiveKitAdapter` uses, in the agent's process, so a room run reports the same
records (reply, tool calls, the agent's own speech and its cause, handoffs, the greeting) as an
in-process run of the same agent.

The test's caller drives it with LiveKit RPC (method `EVAL_RPC_METHOD`, JSON in and out):

==========  =====================================================  ===========================
``op``      request fields                                         answer
==========  =====================================================  ===========================
``hello``                                                          ``v``, ``vad`` (the VAD's
                                                                   settings, or null),
                                                                   ``vad_problem``,
                                                                   ``realtime`` (see below)
``ping``                                                           ``{}`` (the caller checks
                                                                   the agent is alive)
``begin``   ``turn``; ``input`` (``audio``/``text``); ``fixture``  ``{}``
            (``first_start_s``, ``last_end_s``: where the fixture's
            speech starts, and where the VAD ends its last segment)
``settle``  ``turn`` (null: the greeting); ``phrase``, ``phrases``  ``{}``; a ``capture`` event
            (a realtime agent's audio turn: phrase k of n)         follows once the agent is
                                                                   done (a ``phrase`` event
                                                                   for phrase k < n)
==========  =====================================================  ===========================

For an agent on a realtime (speech-to-speech) model with no STT, ``hello``'s ``realtime`` says
``model`` (its class), ``turn_detection`` (``server``: the model's; ``session``: the session's
VAD), ``vad`` (the settings of the VAD that takes the turns: the scripted model's own, or the
session's; null for a provider's server, which the caller approximates with Silero's
defaults), ``vad_problem`` and ``hearing`` (``provenance``, ``none`` or the STT class of a
`ScriptedRealtimeModel`; ``model`` for any other model, which hears by itself); it is null for
any other agent. ``begin`` then carries ``realtime``: ``transcripts`` (what a scripted model
hearing through the fixture's provenance is to hear of each phrase: the caller proved them from
the fixture's provenance; null otherwise) and ``phrases``. The caller says such a fixture
phrase by phrase, as in process: each once the agent answered the one before.

and sends events, one JSON object per text stream on `EVAL_EVENTS_TOPIC`, in order. Every
object has ``v`` (`EVAL_EVENTS_VERSION`), ``seq`` (0, 1, 2, ...), ``t`` (the agent's
``time.time()``) and ``type``:

================  ===========================================================================
``hello``         the helper is installed (sent once, first)
``stage``         ``text``: what the agent is waiting for before the turn is done
``capture``       one turn's record (see `EvalEventPublisher`), or ``error`` when it failed
``phrase``        ``turn``, ``phrase``: a realtime agent answered that phrase of the fixture
``agent_state``   ``new``, ``agent`` (the active agent's class name)
``user_state``    ``new``: the user is ``speaking``, ``listening`` or ``away``
``error``         ``source``, ``error``, ``recoverable``
``close``         ``reason``, ``error``: the session closed
================  ===========================================================================

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
import dataclasses
import itertools
import json
import logging
import math
import time
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._compat import (
    LiveKitInternalsError,
    activity_current_speech,
    activity_recognition,
    session_activity,
    vad_settings,
    watch_vad_events,
)
from .._logs import crash_sink, hold_livekit_logs
from .._turn import TurnCapture, TurnRecorder, agent_name, llm_usage, speech_dict
from ..offline._stt import FixtureTextSTT, SegmentSTT

if TYPE_CHECKING:
    from livekit import rtc
    from livekit.agents import AgentSession

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_EVENTS_VERSION",
    "EVAL_LISTENER_ATTRIBUTE",
    "EVAL_RPC_METHOD",
    "EvalEventPublisher",
    "capture_metadata",
    "parse_eval_event",
    "publish_eval_events",
    "still_to_hear",
]

EVAL_EVENTS_TOPIC = "agent-eval.events"
"""The text-stream topic the helper sends on and the adapter reads."""

EVAL_RPC_METHOD = "agent-eval.turn"
"""The RPC method the helper answers and the adapter calls."""

EVAL_LISTENER_ATTRIBUTE = "agent-eval.listen"
"""A participant attribute; participants that carry it (``"1"``) receive the events."""

EVAL_EVENTS_VERSION = 2
"""Version 1 (pytest-agent-eval before the helper recorded turns) sent raw session events."""

HEARD_TOLERANCE_S = 0.25
"""How far before the fixture's end of speech the agent's VAD may end its last segment and the
fixture still count as heard. The two timelines are matched at the start of the first segment,
and differ by where the codec lets the VAD hear the onset and by the receiver's jitter buffer
stretching time: over 31 runs of a 5 s fixture on 2 cores (10 of them with 4 busy processes
beside) the agent's end came 0.16 s early to 0.54 s late. A piece the agent's VAD splits off at
a gap a busy machine delays into the audio starts at least its min_silence_duration (0.55 s
for Silero) after the gap began, so only a last piece shorter than this could go unnoticed."""

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


class _RoomRecorder(TurnRecorder):
    """`TurnRecorder` in the agent's process, where text turns come from RoomIO's chat input.

    In process, the adapter marks the reply to a text turn itself (``sending_text`` around
    ``session.run``); here the text arrives on the chat topic, so the first speech the session
    creates after the caller announced a text turn is that reply.
    """

    def __init__(self, session: AgentSession[Any]) -> None:
        super().__init__(session)
        self.text_pending = False
        self.speech_created = asyncio.Event()
        """Set when a speech is created (a text turn's reply has started)."""

    def _on_speech(self, ev: Any) -> None:
        if self.text_pending:
            self.text_pending = False
            self.sending_text = True
        try:
            super()._on_speech(ev)
        finally:
            self.sending_text = False
            self.speech_created.set()


class _SpeakingTimes:
    """When each speech started to be heard: the agent's state turned ``speaking`` with it
    current (RoomIO syncs the reply text to the audio, so this is its first text too)."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self._session = session
        self._first: dict[str, float] = {}

    def on_state(self, new_state: str) -> None:
        if new_state != "speaking":
            return
        try:
            activity = session_activity(self._session)
            speech = activity_current_speech(activity) if activity is not None else None
        except LiveKitInternalsError:
            return
        if speech is not None:
            self._first.setdefault(speech.id, time.perf_counter())

    def text_of(self, speech_id: str) -> str:
        return ""

    def first_text_time(self, speech_id: str) -> float | None:
        return self._first.get(speech_id)


@dataclasses.dataclass
class _RealtimeHeard:
    """What a realtime agent's session reported of the audio turn in progress."""

    phrases: int
    transcripts: list[str] = dataclasses.field(default_factory=list)
    """Every final transcript of the model's, empty ones included, in order."""
    speeches: int = 0
    """Speech handles created since the turn began."""
    answered_speeches: int = 0
    """Speech handles created when the phrase before the current one was answered."""
    proven: bool = False
    """The model hears the transcripts the caller proved, one per phrase, in order."""


@dataclasses.dataclass
class _Heard:
    """What the agent's VAD and STT did with the audio of the turn in progress."""

    ends: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    """``(start, end)`` of each speech segment the VAD ended, on the agent's audio timeline."""
    finals: int = 0
    segments: int = 0
    """Segments a `SegmentSTT` finished (empty ones too)."""
    segments_with_words: int = 0


class EvalEventPublisher:
    """Records a session's turns and sends them on `EVAL_EVENTS_TOPIC`; answers the caller's
    RPC (see the module docstring). A turn's ``capture`` event holds: ``turn``, ``reply``,
    ``tool_calls`` (`ToolCall.to_dict`), ``agent_speech`` (`AgentSpeech` fields),
    ``handoffs`` (``from``, ``to``), ``agent``, ``metadata`` (`capture_metadata`),
    ``heard``, ``heard_segments``, ``speech_segments``, ``usage`` ([in, out] tokens of the
    turn), ``errors``, ``unrecoverable``, ``crash`` (how the agent crashed: ``message``,
    ``kind``, ``detail``, ``where``; null when it did not); or ``error`` alone (with
    ``crash``)."""

    def __init__(self, session: AgentSession[Any], room: rtc.Room) -> None:
        self._session = session
        self._room = room
        self._seq = itertools.count()
        self._queue: asyncio.Queue[str | None] = asyncio.Queue()
        self._connected = asyncio.Event()
        self._registered = False
        self._retired = False
        self._changed = asyncio.Event()
        self._texts = _SpeakingTimes(session)
        self._recorder: _RoomRecorder | None = _RoomRecorder(session)
        self._recorder.read_speech_texts(self._texts)
        self._logs = contextlib.ExitStack()
        # Tool exceptions reach the record (ToolCall.error); log levels stay the agent's own.
        self._logs.enter_context(hold_livekit_logs(self._recorder, None))
        # Called in the entrypoint before session.start: the session's tasks inherit the sink,
        # so what the agent's code raises in them is reported as the turn's crash.
        crash_sink.set(self._recorder)
        self._heard = _Heard()
        self._fixture: dict[str, float] | None = None
        self._turn_input: str | None = None
        self._tokens_before = (0, 0)
        self._text_sent_at = 0.0
        self._recognition: Any = None
        self._vad_base_s = 0.0
        self._vad_last_s = 0.0
        self._vad_problem: str | None = None
        self._settling: asyncio.Task[None] | None = None
        self._stage = ""
        self._realtime: _RealtimeHeard | None = None
        """The realtime audio turn in progress (None: no such turn)."""
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
            session.stt.add_segment_listener(self._on_segment)
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
            stt_.remove_segment_listener(self._on_segment)
        with contextlib.suppress(Exception):
            self._room.off("connection_state_changed", self._on_connection_state)
        if self._registered:
            with contextlib.suppress(Exception):
                self._room.local_participant.unregister_rpc_method(EVAL_RPC_METHOD)
            self._registered = False
        if self._settling is not None:
            self._settling.cancel()
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
                self._settle(request.get("turn"), phrase=int(phrase) if phrase else None),
                name="agent-eval-settle",
            )
            return "{}"
        from livekit import rtc

        raise rtc.RpcError(rtc.RpcError.ErrorCode.UNSUPPORTED_METHOD, f"unknown op {op!r}")

    def _hello(self) -> dict[str, Any]:
        self._follow_recognition()
        vad = self._session.vad
        settings = vad_settings(vad) if vad is not None else None
        problem = self._vad_problem
        if vad is None:
            problem = "the agent's session has no VAD"
        elif settings is None or _vad_kind(vad) != "livekit.plugins.silero.vad.VAD":
            problem = (
                f"the agent's VAD ({_vad_kind(vad)}) is not Silero's, the one whose cuts "
                "the test can reproduce"
            )
            settings = None
        return {
            "v": EVAL_EVENTS_VERSION,
            "vad": settings,
            "vad_problem": problem,
            "realtime": self._realtime_info(),
        }

    def _realtime_model(self) -> Any:
        """The realtime model the current agent hears with, when the session has no STT."""
        if self._session.stt is not None:
            return None
        from ..session._realtime import realtime_model_of

        return realtime_model_of(self._session)

    def _realtime_info(self) -> dict[str, Any] | None:
        """What the caller needs to say an audio turn to a realtime agent (module docstring)."""
        model = self._realtime_model()
        if model is None:
            return None
        from ..realtime._scripted import ScriptedRealtimeModel
        from ..session._realtime import server_turn_detection

        try:
            server = server_turn_detection(self._session)
        except LiveKitInternalsError as exc:
            return {"model": type(model).__name__, "vad_problem": str(exc), "hearing": "model"}
        server = True if server is None else server
        problem: str | None = None
        vad: Any = None
        if isinstance(model, ScriptedRealtimeModel):
            hearing = model.hearing
            heard_by = (
                "none"
                if hearing is None
                else "provenance"
                if isinstance(hearing, FixtureTextSTT)
                else type(hearing).__name__
            )
            vad = model.vad if server else self._session.vad
        else:
            heard_by = "model"
            vad = None if server else self._session.vad
        settings = vad_settings(vad) if vad is not None else None
        if vad is not None and (
            settings is None or _vad_kind(vad) != "livekit.plugins.silero.vad.VAD"
        ):
            problem = (
                f"the VAD that takes the realtime agent's turns ({_vad_kind(vad)}) is not "
                "Silero's, the one whose cuts the test can reproduce"
            )
            settings = None
        elif vad is None and not server:
            problem = "the session takes the realtime agent's turns but has no VAD"
        return {
            "model": type(model).__name__,
            "turn_detection": "server" if server else "session",
            "vad": settings,
            "vad_problem": problem,
            "hearing": heard_by,
        }

    def _begin(self, turn: Any, kind: Any, fixture: Any, realtime: Any = None) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        if self._settling is not None:
            self._settling.cancel()
            self._settling = None
        self._follow_recognition()
        recorder.begin_turn(int(turn))
        self._heard = _Heard()
        self._realtime = None
        if kind == "audio" and isinstance(realtime, dict):
            self._begin_realtime(realtime)
        self._fixture = fixture if isinstance(fixture, dict) else None
        self._turn_input = str(kind)
        self._tokens_before = llm_usage(self._session)
        recorder.speech_created.clear()
        recorder.text_pending = kind == "text"
        self._text_sent_at = time.perf_counter()

    def _begin_realtime(self, request: dict[str, Any]) -> None:
        """A realtime agent's audio turn: hand a scripted model hearing through provenance the
        phrases' transcripts, and start its server VAD afresh (as in process)."""
        from ..realtime._scripted import ScriptedRealtimeModel

        self._realtime = _RealtimeHeard(phrases=max(1, int(request.get("phrases") or 1)))
        model = self._realtime_model()
        if not isinstance(model, ScriptedRealtimeModel):
            return
        transcripts = request.get("transcripts")
        if isinstance(model.hearing, FixtureTextSTT):
            model.hearing.clear()
            if isinstance(transcripts, list):
                model.hearing.expect_transcripts([str(t) for t in transcripts])
                self._realtime.proven = True
        model.reset_turn_detection()

    async def _settle(self, turn: Any, *, phrase: int | None = None) -> None:
        recorder = self._recorder
        if recorder is None:
            return
        realtime = self._realtime if turn is not None and self._turn_input == "audio" else None
        try:
            if realtime is not None:
                k = phrase or realtime.phrases
                await self._realtime_answered(recorder, realtime, k)
                if k < realtime.phrases:
                    realtime.answered_speeches = realtime.speeches
                    self._emit("phrase", turn=turn, phrase=k)
                    return
            elif turn is not None and self._turn_input == "audio":
                await recorder.guard(self._until_heard())
            elif turn is not None and self._turn_input == "text":
                self._set_stage("the agent to start its reply to the text")
                await recorder.guard(recorder.speech_created.wait())
            while realtime is None:
                await recorder.settle(self._set_stage)
                if turn is None or self._turn_input != "audio" or self._transcribed():
                    break
                await recorder.guard(self._until_heard())
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            crash = _crash_fields(recorder)
            self._emit("capture", turn=turn, error=f"{type(exc).__name__}: {exc}", crash=crash)
            return
        self._emit("capture", **self._capture(turn))

    async def _realtime_answered(
        self, recorder: _RoomRecorder, realtime: _RealtimeHeard, k: int
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
    def _raise_realtime_errors(recorder: _RoomRecorder) -> None:
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
            why = self._hearing()
            if why is None:
                return
            self._set_stage(why)
            await self._changed.wait()

    def _hearing(self) -> str | None:
        """What the agent has still to hear or transcribe of the fixture (None: nothing)."""
        heard, fixture = self._heard, self._fixture
        if fixture is not None:
            left = still_to_hear(
                heard.ends, float(fixture["first_start_s"]), float(fixture["last_end_s"])
            )
            if left == math.inf:
                return "the agent's VAD to hear the fixture's speech (no end of speech yet)"
            if left is not None:
                return (
                    f"the agent's VAD to hear the fixture to its end (it ended speech "
                    f"{len(heard.ends)} time(s), {left:.2f} s of the fixture's speech "
                    "still to come)"
                )
        if not self._transcribed():
            return (
                f"the agent's STT to transcribe every speech segment its VAD ended "
                f"({self._transcribed_count()} of {len(heard.ends)} so far)"
            )
        return None

    def _ends_in_fixture_time(self) -> list[float]:
        """Where the agent's VAD ended each segment, in seconds into the fixture (its timeline
        matched to the fixture's at the start of its first segment)."""
        ends, fixture = self._heard.ends, self._fixture
        if not ends or fixture is None:
            return []
        shift = float(fixture["first_start_s"]) - ends[0][0]
        return [round(end + shift, 3) for _start, end in ends]

    def _transcribed_count(self) -> int:
        heard = self._heard
        return heard.segments if isinstance(self._session.stt, SegmentSTT) else heard.finals

    def _transcribed(self) -> bool:
        heard = self._heard
        if isinstance(self._session.stt, SegmentSTT):
            # Every segment finished, and the ones with words were reported to the session.
            return heard.segments >= len(heard.ends) and heard.finals >= heard.segments_with_words
        return heard.finals >= len(heard.ends)

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
            return _capture_fields(None, capture, recorder, heard=None, usage=None)
        anchors = (
            list(recorder.speech_ended_at) if self._turn_input == "audio" else [self._text_sent_at]
        )
        capture = recorder.end_turn(anchors)
        after = llm_usage(self._session)
        usage = [after[0] - self._tokens_before[0], after[1] - self._tokens_before[1]]
        heard = recorder.heard if self._turn_input == "audio" else None
        fields = _capture_fields(int(turn), capture, recorder, heard=heard, usage=usage)
        realtime = self._realtime
        if realtime is not None:
            # As `LiveKitAdapter` reports a realtime turn (``RealtimeAudio.describe``).
            fields["speech_segments"] = realtime.phrases
            fields["speech_ends_s"] = []
            info = self._realtime_info() or {}
            fields["realtime"] = {
                "model": info.get("model"),
                "turn_detection": info.get("turn_detection"),
                "transcripts": list(realtime.transcripts),
            }
            return fields
        fields["speech_segments"] = len(self._heard.ends)
        fields["speech_ends_s"] = self._ends_in_fixture_time()
        return fields

    # -- the session's VAD and STT ----------------------------------------------------------

    def _follow_recognition(self) -> None:
        """Watch the VAD of the recognition the session listens with now (a new agent listens
        with a new one, whose timeline starts at 0: it continues where the last one stopped)."""
        try:
            activity = session_activity(self._session)
            recognition = activity_recognition(activity) if activity is not None else None
            if recognition is None or recognition is self._recognition:
                return
            watch_vad_events(recognition, self._on_vad_event)
        except LiveKitInternalsError as exc:
            self._vad_problem = f"the helper cannot watch the agent's VAD: {exc}"
            return
        self._recognition = recognition
        self._vad_base_s += self._vad_last_s
        self._vad_last_s = 0.0

    def _on_vad_event(self, event: Any) -> None:
        from livekit.agents import vad as lk_vad

        stamp = float(event.timestamp)
        if event.type == lk_vad.VADEventType.INFERENCE_DONE:
            self._vad_last_s = max(self._vad_last_s, stamp)
        elif event.type == lk_vad.VADEventType.END_OF_SPEECH:
            end = self._vad_base_s + stamp
            self._heard.ends.append((end - float(event.speech_duration), end))
            self._changed.set()

    def _on_segment(self, text: str) -> None:
        self._heard.segments += 1
        self._heard.segments_with_words += bool(text.strip())
        self._changed.set()

    def _on_transcript(self, ev: Any) -> None:
        if ev.is_final and self._realtime is not None:
            self._realtime.transcripts.append(ev.transcript)
            self._changed.set()
        if ev.is_final and ev.transcript:
            self._heard.finals += 1
            self._changed.set()

    def _on_speech(self, ev: Any) -> None:
        if self._realtime is not None:
            self._realtime.speeches += 1
            self._changed.set()

    # -- session events ---------------------------------------------------------------------

    def _on_item(self, ev: Any) -> None:
        if getattr(ev.item, "type", None) == "agent_handoff":
            self._follow_recognition()

    def _active_agent(self) -> str | None:
        try:
            return agent_name(self._session.current_agent)
        except RuntimeError:  # not started yet, or closed
            return None

    def _on_user_state(self, ev: Any) -> None:
        self._follow_recognition()
        self._emit("user_state", new=ev.new_state)

    def _on_state(self, ev: Any) -> None:
        self._follow_recognition()
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
        self._emit("close", reason=str(ev.reason), error=str(ev.error) if ev.error else None)
        self._detach()
        self._queue.put_nowait(None)


def still_to_hear(
    ends: Sequence[tuple[float, float]], first_start_s: float, last_end_s: float
) -> float | None:
    """Seconds of a fixture's speech the agent's VAD has still to hear; None once it has heard
    it to the end (within `HEARD_TOLERANCE_S`), ``inf`` before it ended any speech.

    Args:
        ends: ``(start, end)`` of each speech segment the agent's VAD ended since the fixture
            began, on its own audio timeline (the end is where it declared the end of speech).
        first_start_s: Where the fixture's speech starts, in seconds into the fixture.
        last_end_s: Where a fresh stream of the agent's VAD declares the end of the fixture's
            last segment.
    """
    if not ends:
        return math.inf
    due = ends[0][0] + last_end_s - first_start_s
    last = max(end for _start, end in ends)
    return None if last >= due - HEARD_TOLERANCE_S else due - last


def _vad_kind(vad: Any) -> str:
    return f"{type(vad).__module__}.{type(vad).__qualname__}"


def capture_metadata(capture: TurnCapture) -> dict[str, Any]:
    """The keys ``metadata["livekit"]`` has shown for a turn since before the typed fields
    (`LiveKitAdapter` writes the same ones): agent, handoffs, agent_speech, pending and late
    tool calls, events."""
    return {
        "agent": capture.agent,
        "handoffs": [{"from": h.from_agent, "to": h.to_agent} for h in capture.handoffs],
        "agent_speech": [speech_dict(s) for s in capture.agent_speech],
        "pending_tool_calls": capture.pending_tool_calls,
        "late_tool_results": capture.late_tool_results,
        "events": capture.events,
    }


def _capture_fields(
    turn: int | None,
    capture: TurnCapture,
    recorder: TurnRecorder,
    *,
    heard: str | None,
    usage: list[int] | None,
) -> dict[str, Any]:
    return {
        "turn": turn,
        "reply": capture.reply,
        "tool_calls": [c.to_dict() for c in capture.tool_calls],
        "agent_speech": [dataclasses.asdict(s) for s in capture.agent_speech],
        "handoffs": [{"from": h.from_agent, "to": h.to_agent} for h in capture.handoffs],
        "agent": capture.agent,
        "metadata": capture_metadata(capture),
        "heard": heard,
        "heard_segments": [t.strip() for t in recorder.finals] if heard is not None else [],
        "usage": usage,
        "errors": list(recorder.errors),
        "unrecoverable": recorder.unrecoverable,
        "crash": _crash_fields(recorder),
    }


def _crash_fields(recorder: TurnRecorder) -> dict[str, Any] | None:
    """How the agent crashed in the turn (`TurnRecorder.take_crash`), for the caller to
    report as in process; None when it did not."""
    crash = recorder.take_crash()
    if crash is None:
        return None
    return {"message": str(crash), "kind": crash.kind, "detail": crash.detail, "where": crash.where}


def parse_eval_event(text: str) -> dict[str, Any] | None:
    """One event sent by the helper, or None for anything else (not JSON, not an event).

    An event of another version comes back with its ``v``: the adapter says which helper the
    agent runs instead of ignoring it.
    """
    try:
        event = json.loads(text)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("v"), int):
        return None
    if not isinstance(event.get("type"), str) or not isinstance(event.get("seq"), int):
        return None
    return event
