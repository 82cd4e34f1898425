"""One in-process LiveKit run: `LiveKitConversation` wires a session's I/O, starts it, sends
each turn and makes its `AgentReply`; closed exactly once. `LiveKitAdapter` (`_adapter`) builds
it per run and documents what a run does and shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from livekit.agents import Agent, AgentSession

from ....errors import AdapterError, AgentCrashError, AgentEvalError, AgentTimeoutError
from ....models import AgentReply, AgentSpeech, AudioCondition, BargeIn, Greeting, ToolCall
from ....voice._latency import Unmeasured, reply_latency_s
from ...base import ConversationInfo, TurnInput
from .._audio import FixtureAudio, VADMirror, audio_turn_extra, save_streamed_frames
from .._compat import run_assert_over
from .._crash_wait import unless_crashed
from .._logs import CrashSink, crash_sink, hold_livekit_logs
from .._probe import llm_usage, usage_delta
from .._segments import SessionVAD
from .._timeline import SessionTimeline
from .._turn import SessionClosedError, Stage, TurnRecorder
from .._turn_capture import TurnCapture
from .._turn_meta import capture_metadata, speech_dict
from ..offline._stt import FixtureTextSTT, SegmentSTT, WhisperSTT
from ._barge_in import BargeInTurns
from ._far_end import far_end_turn, refuse_realtime
from ._hearing import check_realtime_hearing, fixture_text_refusal
from ._hearing_twin import refuses_conditions
from ._io import CaptureAudioOutput, CaptureTextOutput, FrameQueueInput
from ._keypad import has_keys, keypad_turn, phone_line, press_around, uses_phone_line
from ._realtime import (
    RealtimeAudio,
    disable_aec_warmup,
    realtime_model_of,
    warn_switched_turn_detection,
)
from ._silence import refuse_silence
from ._streamer import AudioStreamer
from ._turn_state import OpenedTurn, SentTurn

__all__ = ["ConversationSettings", "LiveKitConversation"]

_CLOSE_TIMEOUT_S = 10.0
"""Upper bound on closing a session; a close stuck longer than this is reported, not waited on."""

_CLOSE_AFTER_FAILURE_S = 2.0
"""The same after a failed turn, whose cause is already reported: a tool stuck past the turn's
timeout should not cost the full close wait on top."""


class ConversationSettings(Protocol):
    """What a conversation reads of its `LiveKitAdapter` (which documents each setting)."""

    speed: float
    sample_rate: int
    frame_ms: int
    tail_silence_s: float
    vad_replay: bool
    timeout_s: float
    capture_audio: bool
    audio_out_dir: Path | None
    audio_in_dir: Path | None
    log_level: int | str | None

    def turn_audio(
        self, path: Path, conditions: Sequence[AudioCondition] = (), seed: int = 0, keys: Any = None
    ) -> FixtureAudio: ...


@dataclass(slots=True)
class _Paced:
    """The adapter as the streamer reads it, at one run's speed (the session's speed wins over
    the adapter's own)."""

    adapter: ConversationSettings
    speed: float
    vad_replay: bool

    def turn_audio(
        self, path: Path, conditions: Sequence[AudioCondition] = (), seed: int = 0, keys: Any = None
    ) -> FixtureAudio:
        return self.adapter.turn_audio(path, conditions, seed, keys)


class LiveKitConversation:
    """One run's session: turns in, `AgentReply` out; closed exactly once.

    It is given, once the session's I/O is wired, an `AudioStreamer` (streams each audio
    turn's fixture into the session) and a `BargeInTurns` (a turn with ``interrupt:`` speaks
    over the reply to the turn before: it starts during the call for the earlier turn, and the
    call for it waits for it to end). Whichever way a turn ran, its reply is made by `finish`.
    """

    def __init__(
        self,
        adapter: ConversationSettings,
        session: AgentSession[Any],
        agent: Agent,
        info: ConversationInfo,
    ) -> None:
        self.adapter = adapter
        self.session = session
        """The live ``AgentSession`` (its ``history`` holds the whole conversation)."""
        self.agent = agent
        self.info = info
        self.speed = adapter.speed if info.speed is None else info.speed
        """How fast this run streams: the session's speed (``--agent-eval-speed``,
        ``[tool.agent_eval] speed``) when it says one, else the adapter's."""
        self._recorder: TurnRecorder | None = None
        self._crash_token: contextvars.Token[CrashSink | None] | None = None
        self._streamer: AudioStreamer | None = None
        """Streams the audio turns (None: the transcript has none)."""
        self._barge_in: BargeInTurns | None = None
        self._realtime: RealtimeAudio | None = None
        """Streams the audio turns when the agent runs on a realtime model (no STT)."""
        self._text_out: CaptureTextOutput | None = None
        self._audio_out: CaptureAudioOutput | None = None
        self._quiet: contextlib.ExitStack = contextlib.ExitStack()
        self._closed = False
        self._turn_failed = False
        self.last_items: list[Any] = []
        """The items (assistant messages, function calls, outputs, handoffs) of the last turn."""
        self._expect: Any = None
        self._greeting = Greeting()
        self._timeline = SessionTimeline()
        self.greeting_items: list[Any] = []
        """The items of the greeting (messages, tool calls and outputs)."""

    def greeting(self) -> Greeting:
        """What the agent said and did on its own while the session started (its first agent's
        ``on_enter``), before turn 1: an empty `Greeting` when it said nothing.

        The runner reads it (the optional ``Conversation.greeting()`` of the adapter protocol)
        into `RunResult.greeting`, for a transcript's ``greeting:`` checks and the reports.
        """
        return Greeting(list(self._greeting.speech), list(self._greeting.tool_calls))

    @property
    def greeting_text(self) -> str:
        """The greeting's text ("" when the agent said nothing before turn 1)."""
        return self._greeting.text

    @property
    def greeting_speech(self) -> list[AgentSpeech]:
        """The greeting's utterances, with cause, agent and timings."""
        return list(self._greeting.speech)

    @property
    def greeting_tool_calls(self) -> list[ToolCall]:
        """Tool calls made while the session started."""
        return list(self._greeting.tool_calls)

    @property
    def expect(self) -> Any:
        """LiveKit's ``RunAssert`` over the last turn, for audio turns as well as text ones.

        One cursor per turn: successive ``next_event()`` calls walk through the turn's events
        (messages, function calls and outputs, and agent handoffs).

        Example:
            ```python
            reply = await conversation.respond(turn)
            conversation.expect.next_event().is_function_call(name="book_table")
            conversation.expect.next_event().is_function_call_output()
            conversation.expect.next_event().is_message(role="assistant")
            conversation.expect.no_more_events()
            ```
        """
        if self._expect is None:
            self._expect = run_assert_over(self.last_items)
        return self._expect

    # -- lifecycle ------------------------------------------------------------------------

    async def start(self, *, needs_audio: bool) -> None:
        """Wire the session's I/O, start it, and wait until the agent is done greeting."""
        session = self.session
        # Closing waits this long for a last transcript; there is none to wait for here, and
        # the default (2 s) would be paid by every run. Same for "user away" timers.
        session.options.session_close_transcript_timeout = 0.0
        session.options.user_away_timeout = None
        realtime = (
            realtime_model_of(session, self.agent) if session.stt is None and needs_audio else None
        )
        audio_in: FrameQueueInput | None = None
        vad: SessionVAD | None = None
        mirror: VADMirror | None = None  # a twin of the session's VAD streams, when not resettable
        if realtime is not None:
            # The model hears the caller itself: no STT, and the turns are taken as the agent
            # configured them (the model's server, or the session's VAD).
            check_realtime_hearing(realtime, self.info.transcript)
            disable_aec_warmup(session)
            audio_in = FrameQueueInput()
            session.input.audio = audio_in
        elif needs_audio:
            missing = [name for name in ("stt", "vad") if getattr(session, name) is None]
            if missing:
                raise AdapterError(
                    f"transcript {self.info.transcript.id!r} has audio turns but the "
                    f"AgentSession has no {' and no '.join(missing).upper()}; build it with "
                    "e.g. stt=FixtureTextSTT() (or WhisperSTT()) and vad=silero.VAD.load()"
                )
            audio_in = FrameQueueInput()
            session.input.audio = audio_in
            assert session.vad is not None
            stt_ = session.stt
            assert stt_ is not None
            if isinstance(stt_, SegmentSTT):
                # Our STTs transcribe the segments the session's own VAD cuts: one VAD pass.
                stt_.drive(True)
                vad = SessionVAD(on_start=stt_.start_segment, on_end=_frames_to(stt_))
            else:
                vad = SessionVAD()
                if not stt_.capabilities.streaming:
                    # LiveKit wraps this STT in a StreamAdapter whose VAD stream the adapter
                    # cannot reset: predict both streams with a twin fed every frame instead.
                    mirror = VADMirror(session.vad)
        self._text_out = CaptureTextOutput(next_in_chain=session.output.transcription)
        session.output.transcription = self._text_out
        speaks = session.tts is not None or (
            realtime is not None and realtime.capabilities.audio_output
        )
        if self.adapter.capture_audio and speaks and session.output.audio is None:
            self._audio_out = CaptureAudioOutput(speed=self.speed)
            session.output.audio = self._audio_out
        recorder = self._recorder = TurnRecorder(session)
        self._timeline.attach(session, audio_in)
        recorder.read_speech_texts(self._text_out)
        if realtime is not None:
            assert audio_in is not None
            self._realtime = RealtimeAudio(session, recorder, audio_in, speed=self.speed)
        if audio_in is not None:
            self._streamer = AudioStreamer(
                _Paced(self.adapter, self.speed, self.adapter.vad_replay),
                session,
                recorder,
                audio_in,
                vad=vad,
                mirror=mirror,
                realtime=self._realtime,
                save=self._save_streamed_audio,
            )
        self._barge_in = BargeInTurns(
            self,
            session,
            recorder,
            audio_out=self._audio_out,
            text_out=self._text_out,
            streamer=self._streamer,
            speed=self.speed,
        )
        self._quiet.enter_context(hold_livekit_logs(recorder, self.adapter.log_level))
        if uses_phone_line(self.info.transcript):
            self._quiet.enter_context(phone_line(session, self.info.transcript))
        # Before the session starts, so that every task of it inherits the sink: what the
        # agent's code raises in them is this conversation's crash.
        self._crash_token = crash_sink.set(recorder)
        if isinstance(session.stt, SegmentSTT):
            session.stt.add_segment_listener(recorder.on_segment)
        stage = Stage("the session to start (session.start)")
        try:
            async with self.deadline(stage, turn_label="session start"):
                if needs_audio and isinstance(session.stt, WhisperSTT):
                    # Loaded once per process, here rather than in the first recognition: no
                    # turn's latency includes loading a model.
                    stage.set("the Whisper model to load (WhisperSTT.load)")
                    await asyncio.to_thread(session.stt.load)
                    stage.set("the session to start (session.start)")
                # start() attaches an OpenTelemetry context it never detaches; a task of its
                # own keeps that out of the caller's context.
                await asyncio.create_task(session.start(self.agent))
                await recorder.settle(stage.set)
        except Exception as exc:
            # The deadline's timeout too: an on_enter that raised can leave the session
            # waiting; the crash, not the wait, is what is reported.
            crashed = self._crashed("before turn 1")
            if crashed is not None:
                raise crashed from exc
            raise
        crashed = self._crashed("before turn 1")
        if crashed is not None:
            raise crashed
        if realtime is not None:
            warn_switched_turn_detection(session, realtime)
        if self._streamer is not None:
            self._streamer.follow_session()
        capture = recorder.end_turn()
        speech = capture.agent_speech
        if " ".join(s.text for s in speech if s.text) != capture.reply:
            # Something said outside any speech the recorder could attribute: the greeting is
            # what was said, in one piece, rather than part of it.
            speech = [AgentSpeech(text=capture.reply, cause="greeting", agent=capture.agent)]
        self._greeting = Greeting(speech, capture.tool_calls)
        self.greeting_items = capture.items

    async def aclose(self) -> None:
        """Close the session (interrupting any reply in progress); safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._barge_in is not None:
            await self._barge_in.drop_held()
        streamer = self._streamer
        if streamer is not None:
            streamer.release_replay()  # what the session feeds its VAD while closing is its own
        try:
            if self._realtime is not None:
                self._realtime.detach()
            if self._recorder is not None:
                if isinstance(self.session.stt, SegmentSTT):
                    self.session.stt.remove_segment_listener(self._recorder.on_segment)
                self._recorder.detach()
            if isinstance(self.session.stt, FixtureTextSTT):
                self.session.stt.clear()
            if isinstance(self.session.stt, SegmentSTT) and streamer and streamer.pipeline:
                self.session.stt.drive(False)
            timeout_s = _CLOSE_TIMEOUT_S
            if self._turn_failed:
                # A reply or a tool may still be running after a failed turn: stop it, and
                # do not let a stuck tool add the full close wait to a failure already known.
                timeout_s = _CLOSE_AFTER_FAILURE_S
                with contextlib.suppress(Exception):
                    self.session.interrupt(force=True)
            try:
                await asyncio.wait_for(self.session.aclose(), timeout_s)
            except TimeoutError as exc:
                after = " after the failed turn (a reply or tool was still running)"
                raise AdapterError(
                    f"the AgentSession did not close within {timeout_s:g} s"
                    + (after if self._turn_failed else "")
                ) from exc
            finally:
                if self._audio_out is not None:
                    self._audio_out.close()
                if streamer is not None:
                    await streamer.aclose()
        finally:
            self._quiet.close()
            self._release_crash_sink()

    def _release_crash_sink(self) -> None:
        """Stop routing LiveKit's logged exceptions of this context to this conversation, so
        a conversation closed before another starts in the same task keeps nothing alive."""
        token = self._crash_token
        self._crash_token = None
        if token is None:
            return
        try:
            crash_sink.reset(token)
        except ValueError:  # closed from another context than it started in
            if crash_sink.get() is self._recorder:
                crash_sink.set(None)

    # -- turns ----------------------------------------------------------------------------

    async def respond(self, turn: TurnInput) -> AgentReply:
        """Send one turn (audio when it has a fixture, else text) and collect the reply.

        Raises:
            AdapterError: The turn timed out (the message says what was still pending), the
                session closed itself, the fixture has no speech for the VAD, or the latency
                could not be measured.
            AudioFixtureError: The fixture is missing, unreadable, empty or silent.
        """
        if self._closed or self._recorder is None or self._barge_in is None:
            raise AdapterError("this LiveKit conversation is closed")
        label = f"turn {turn.index + 1}"
        recorder = self._recorder
        try:
            reply = await unless_crashed(
                recorder, keypad_turn(self.session, turn, self._respond, self._audio_out)
            )
        except AgentCrashError:
            raise
        except Exception as exc:
            # A timeout, an empty reply, a closed session, the crash ending the wait: the
            # consequence, when the agent crashed first; the crash is what is reported.
            crashed = self._crashed(label)
            if crashed is not None:
                raise crashed from exc
            raise
        crashed = self._crashed(label)
        if crashed is not None:
            self._turn_failed = True
            raise crashed
        began = self._recorder.began_reply
        refuse_silence(turn, reply, began_reply=began, label=label, agent=self._agent_name())
        return reply

    def _crashed(self, label: str) -> AgentCrashError | None:
        """The agent's first crash since the last look (an exception LiveKit logged from its
        code, an error the session could not recover from), as the error that reports it
        for ``label``; None when it did not crash."""
        crash = self._recorder.take_crash() if self._recorder is not None else None
        if crash is None:
            return None
        return crash.labelled(f"{label}: the agent crashed (agent {self._agent_name()!r})")

    async def _respond(self, turn: TurnInput) -> AgentReply:
        assert self._recorder is not None and self._barge_in is not None
        recorder, barge_in = self._recorder, self._barge_in
        try:
            held = await barge_in.held_reply(turn.index)
            if held is not None:  # a barge-in ran this turn over the reply to the one before
                reply, self.last_items = held
                self._expect = None
                return reply
            following = barge_in.plan(turn)
            if self._text_out is not None:
                self._text_out.reset()
            if self._audio_out is not None:
                self._audio_out.reset()
            opened = self.open_turn(turn)
            stage = Stage()
            if following is not None:
                return await barge_in.respond_interrupted(turn, following, stage, opened)
            label = f"turn {turn.index + 1}"
            async with self.deadline(stage, turn_label=label):
                sent = await self.send(turn, stage, settle=True)
            capture = recorder.end_turn(sent.anchors)
            return self.finish(turn, capture, opened, sent, label=label)
        except BaseException:
            self._turn_failed = True
            raise

    def open_turn(self, turn: TurnInput) -> OpenedTurn:
        """Start ``turn`` in the recorder; what `finish` needs to know of its start."""
        assert self._recorder is not None
        self._recorder.begin_turn(turn.index)
        self._timeline.begin(turn.index)
        if self._streamer is not None:
            self._streamer.saved = None
        stt_ = self.session.stt
        return OpenedTurn(
            index=turn.index,
            started=time.perf_counter(),
            tokens_before=llm_usage(self.session),
            recognitions_from=len(stt_.recognitions) if isinstance(stt_, WhisperSTT) else 0,
        )

    async def send(self, turn: TurnInput, stage: Stage, *, settle: bool) -> SentTurn:
        """Send ``turn``: its audio when it has a fixture, else its text. With ``settle``,
        return once the agent is done with it; without (a barge-in is to cut the reply), once
        the reply is under way."""
        if has_keys(turn):  # pressed on the phone line, around the turn without them
            return await press_around(self, turn, stage, settle=settle)
        if turn.far_end:  # a far end heard as audio: its turn ends its own way (`_far_end`)
            streamer, recorder = self.streamer_for_far_end()
            transcript = self.info.transcript
            if turn.conditions and refuses_conditions(self.session.stt):
                raise AdapterError(fixture_text_refusal(transcript, turn.index, turn.conditions))
            return await far_end_turn(streamer, recorder, self.adapter, transcript, turn, stage)
        if turn.audio is None:
            return await self._text_turn(turn, stage, settle=settle)
        if self._realtime is not None:
            return await self._realtime_audio_turn(turn, stage, settle=settle)
        return await self._audio_turn(turn, stage, settle=settle)

    def finish(
        self,
        turn: TurnInput,
        capture: TurnCapture,
        opened: OpenedTurn,
        sent: SentTurn,
        *,
        label: str,
        frames: list[Any] | None = None,
        barge_in: BargeIn | None = None,
    ) -> AgentReply:
        """Every turn's `AgentReply`, however it ran (an ordinary turn, a turn a barge-in cut,
        the interrupting turn): the one place every field is set, so the paths cannot report
        different things.

        ``frames`` is the turn's reply audio when it is no longer the audio output's own (a
        barge-in moved on to the next turn's); ``barge_in`` the interrupting turn's record
        (else the record of a barge-in that could not be tested, if this turn was one).
        """
        assert self._recorder is not None and self._barge_in is not None
        recorder = self._recorder
        first_text, first_audio = self._first_reply(capture)
        latency = _latency(sent.anchors, first_text, what="first reply text", label=label)
        audio_latency = _latency(sent.anchors, first_audio, what="first reply audio", label=label)
        if frames is None and self._audio_out is not None:
            frames = list(self._audio_out.frames)
        # The typed fields are what checks and reports read; these keys stay as documented.
        meta: dict[str, Any] = dict(sent.extra)
        if self._audio_out is not None:
            meta["reply_audio_s"] = sum(f.duration for f in frames or ())
        if recorder.errors:
            meta["errors"] = list(recorder.errors)
        meta.update(capture_metadata(capture), turn_wall_s=time.perf_counter() - opened.started)
        stt_ = self.session.stt
        if isinstance(stt_, WhisperSTT):
            until = opened.recognitions_until
            meta["recognitions"] = [
                r.to_dict() for r in stt_.recognitions[opened.recognitions_from : until]
            ]
        if capture.late_speech:
            meta["late_speech"] = [
                {"turn_index": index, "text": text} for index, text in capture.late_speech
            ]
        if turn.index == 0:
            meta["greeting"] = [speech_dict(s) for s in self.greeting_speech]
            if self.greeting_tool_calls:
                meta["greeting_tool_calls"] = [c.to_dict() for c in self.greeting_tool_calls]
        saved = self._streamer.saved if self._streamer is not None else None
        reply = AgentReply(
            capture.reply,
            list(capture.tool_calls),
            heard=sent.heard,
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            usage=usage_delta(opened.tokens_before, opened.tokens_after or llm_usage(self.session)),
            audio_out=self._save_reply_audio(opened.index, frames or []),
            metadata={"livekit": meta, "speed": self.speed},
            agent_speech=list(capture.agent_speech),
            heard_segments=[t.strip() for t in recorder.finals] if sent.heard is not None else [],
            active_agent=capture.agent,
            handoffs=list(capture.handoffs),
            audio_in=opened.audio_in if opened.stopped else saved,
            barge_in=barge_in or self._barge_in.untested(turn.index),
            timeline=self._timeline.take(
                turn.index, voice=turn.audio is not None or bool(turn.far_end)
            ),
        )
        self.last_items = capture.items
        self._expect = None
        return reply

    def streamer_for_far_end(self) -> tuple[AudioStreamer, TurnRecorder]:
        """What a far-end turn streams with (`_far_end`).

        Raises:
            AdapterError: The agent is on a realtime model, or the session has no audio input.
        """
        refuse_realtime(self._realtime)
        streamer, recorder = self._streamer, self._recorder
        if streamer is None or not streamer.pipeline or recorder is None:
            raise AdapterError(
                "this conversation was started without an audio input, so the far end's audio "
                "has nowhere to go; give the session a VAD and an STT"
            )
        return streamer, recorder

    async def _text_turn(self, turn: TurnInput, stage: Stage, *, settle: bool) -> SentTurn:
        assert self._recorder is not None
        recorder = self._recorder
        stage.set("the agent's reply to the text turn (session.run)")
        sent_at = time.perf_counter()
        recorder.sending_text = True
        try:
            result: Any = self.session.run(user_input=turn.text)
        finally:
            recorder.sending_text = False
        if not settle:  # a barge-in interrupts the reply: its result is collected later
            return SentTurn([sent_at], None, {"input": "text"}, pending=result)
        # Wait the way audio turns do (the timeout then names what is pending), then collect
        # the run's own result: session.run raises what made the reply fail.
        await recorder.settle(stage.set)
        stage.set("the result of the text turn (session.run)")
        await recorder.guard(result)
        return SentTurn([sent_at], None, {"input": "text"})

    async def _audio_turn(self, turn: TurnInput, stage: Stage, *, settle: bool) -> SentTurn:
        assert self._recorder is not None and turn.audio is not None
        session, recorder, streamer = self.session, self._recorder, self._streamer
        if streamer is None or not streamer.pipeline:
            raise AdapterError(
                "this conversation was started for a transcript without audio turns, so the "
                "session has no audio input; start it with the transcript that has the audio"
            )
        path = Path(turn.audio)
        if turn.conditions and refuses_conditions(session.stt):
            raise AdapterError(
                fixture_text_refusal(self.info.transcript, turn.index, turn.conditions)
            )
        audio, segments = await streamer.load(
            turn,
            path,
            stage,
            without_speech="the agent would never get a turn",
        )
        streamer.prime(path, turn.turn.user, segments)
        anchors: list[float] = []
        heard_segments = await streamer.stream(
            audio, segments, path, turn.turn.user, stage, anchors
        )
        if session.turn_detection == "manual":
            stage.set("the manual user turn to be committed (session.commit_user_turn)")
            await recorder.guard(session.commit_user_turn(transcript_timeout=0.0))
        if settle:  # (a barge-in interrupts the reply instead of waiting for it to end)
            await recorder.settle(stage.set)
            streamer.check_no_extra_segments(heard_segments, path)
            missing = streamer.hearing_of(path, heard_segments).missing()
            if missing is not None and session.turn_detection != "manual":
                raise AdapterError(
                    f"the turn cannot end: {missing}. A turn ends only once the agent has had "
                    "the whole fixture and answered what it heard."
                )
        extra = audio_turn_extra(turn, audio, heard_segments)
        if recorder.unrecoverable:
            # A text turn raises this from session.run(); an audio turn only sees the event.
            raise AdapterError(
                f"the agent failed to reply to the audio {path}: " + "; ".join(recorder.errors)
            )
        if not (recorder.heard or "").strip():
            # The session starts no user turn for an empty transcript, so the agent never
            # answered: say so, instead of handing the checks an empty reply.
            raise AdapterError(
                f"the STT ({type(session.stt).__name__}) heard nothing in {path}: all "
                f"{heard_segments} speech segment(s) came back empty, so the agent got no user "
                "turn"
            )
        if self.speed == 0:
            # Streamed faster than real time, the audio has no clock of its own: count from
            # the moment the session's VAD declared the end of the user's speech.
            anchors = list(recorder.speech_ended_at)
        return SentTurn(anchors, recorder.heard, extra)

    async def _realtime_audio_turn(
        self, turn: TurnInput, stage: Stage, *, settle: bool
    ) -> SentTurn:
        """An audio turn for an agent on a realtime model: the fixture phrase by phrase into
        the model, what it transcribed is what was heard (see `_realtime`). Without
        ``settle`` (a barge-in is to cut the reply) it returns once the last phrase's reply
        was created."""
        realtime, recorder, streamer = self._realtime, self._recorder, self._streamer
        assert realtime is not None and recorder is not None and streamer is not None
        assert turn.audio is not None
        path = Path(turn.audio)
        audio, segments = await streamer.load(
            turn,
            path,
            stage,
            without_speech="the agent would never get a turn",
        )
        streamer.prime(path, turn.turn.user, segments)
        anchors: list[float] = []
        phrases = await realtime.stream(
            audio, tuple(segments), path, stage, anchors, settle_last=settle
        )
        extra = audio_turn_extra(turn, audio, phrases)
        extra["realtime"] = realtime.describe()
        if self.speed == 0:
            anchors = list(recorder.speech_ended_at)
        return SentTurn(anchors, recorder.heard, extra)

    def _save_streamed_audio(self, audio: FixtureAudio, turn_index: int) -> Path | None:
        folder = self.info.save_audio_dir or self.adapter.audio_in_dir
        return save_streamed_frames(folder, self.info, turn_index, audio)

    def _first_reply(self, capture: TurnCapture) -> tuple[float | None, float | None]:
        """When this turn's own reply began: its first text and its first audio frame.

        Only the turn's own speech counts (`TurnCapture.speech_ids`): words a reply of an
        earlier turn went on saying are not this turn's answer, so no latency is measured on
        them. Text that no speech can be found for counts by the time it reached the output.
        """
        if not capture.reply:
            return None, None
        texts, audio = self._text_out, self._audio_out
        first_text = capture.first_text_at
        if first_text is None and not capture.speech_ids and texts is not None:
            first_text = texts.first_text_at
        first_audio = None
        if audio is not None:
            own = [
                audio.first_frame_by_speech[sid]
                for sid in capture.speech_ids
                if sid in audio.first_frame_by_speech
            ]
            first_audio = min(own, default=None)
            if first_audio is None and not capture.speech_ids:
                first_audio = audio.first_frame_at
        return first_text, first_audio

    def _save_reply_audio(self, index: int, frames: list[Any]) -> Path | None:
        folder = self.adapter.audio_out_dir
        if folder is None or self._audio_out is None or not frames:
            return None
        from livekit import rtc

        from ....voice._fixture_pcm import save_reply_audio
        from ....voice._fixtures import clip_from_pcm16

        frame = rtc.combine_audio_frames(frames)
        clip = clip_from_pcm16(bytes(frame.data), frame.sample_rate)
        if frame.num_channels > 1:
            import numpy as np

            samples = clip.samples.reshape(-1, frame.num_channels).mean(axis=1)
            clip = type(clip)(np.ascontiguousarray(samples), frame.sample_rate)
        return save_reply_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=index,
            clip=clip,
        )

    @contextlib.asynccontextmanager
    async def deadline(self, stage: Stage, *, turn_label: str) -> AsyncIterator[None]:
        """Bound what runs inside by the adapter's ``timeout_s``; every failure becomes one
        message naming ``turn_label`` (a timeout: what was still pending, and a hint)."""
        # ``from None`` where the cause would only repeat the message (or, for the timeout,
        # say nothing more): one message per failure. A LiveKit exception keeps its cause.
        timeout_s = self.adapter.timeout_s
        try:
            async with asyncio.timeout(timeout_s):
                yield
        except TimeoutError:
            heard = self._recorder.heard if self._recorder else ""
            tool = self._recorder.last_tool() if self._recorder else None
            raise AgentTimeoutError(
                f"{turn_label}: no result within timeout_s={timeout_s:g} s; still waiting for "
                f"{stage.text} (agent {self._agent_name()!r}, agent state "
                f"{self.session.agent_state!r}, user state {self.session.user_state!r}"
                + (f", heard so far {heard!r}" if heard else "")
                + (f", {tool}" if tool else "")
                + f"). {stage.hint}"
            ) from None
        except SessionClosedError as exc:
            raise AdapterError(f"{turn_label}: {exc}") from None
        except AgentEvalError as exc:
            if str(exc).startswith(f"{turn_label}:"):
                raise
            # Same class (AudioFixtureError stays one), with the turn in front.
            raise exc.labelled(turn_label) from None
        except Exception as exc:
            errors = self._recorder.errors if self._recorder else []
            raise AdapterError(
                f"{turn_label}: the LiveKit session failed while waiting for {stage.text}: "
                f"{type(exc).__name__}: {exc}"
                + (f"; session errors: {'; '.join(errors)}" if errors else "")
            ) from exc

    def _agent_name(self) -> str:
        try:
            return type(self.session.current_agent).__name__
        except RuntimeError:
            return type(self.agent).__name__


def _frames_to(stt_: SegmentSTT) -> Callable[[Any], None]:
    """Hand each end-of-speech event's audio to a driven STT."""

    def hand(event: Any) -> None:
        stt_.end_segment(event.frames)

    return hand


def _latency(anchors: list[float], at: float | None, *, what: str, label: str) -> float | None:
    """Seconds from the end of the speech the reply answers to ``at`` (None: no reply).

    The anchor is the last end of user speech (or the sending of a text turn) before ``at``
    (`reply_latency_s`). A reply before every anchor, or with no anchor at all, cannot be a
    latency: the turn fails saying so rather than hand a check a number it could pass on.
    """
    latency = reply_latency_s(anchors, at)
    if not isinstance(latency, Unmeasured):
        return latency
    if latency.early_s is None:
        raise AdapterError(
            f"{label}: the {what} came, but the end of the user's speech was never observed, "
            "so the latency cannot be measured"
        )
    raise AdapterError(
        f"{label}: the {what} came {latency.early_s:.3f} s before the end of the user's speech, "
        "so it does not answer this turn and the latency cannot be measured (speech left "
        "over from an earlier turn, or the agent spoke while the user was talking)"
    )
