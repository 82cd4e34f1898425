"""Barge-in: a turn whose audio speaks over the agent's reply to the turn before.

`LiveKitConversation` is given a `BargeInTurns` (with the session, its audio and text outputs,
the recorder, the `AudioStreamer`, and itself as the `TurnHost` that opens, sends and finishes
turns). When turn k has ``interrupt:`` (the runner hands it on turn k-1's
`TurnInput.interrupted_by`), the call for turn k-1 sends turn k-1, lets the reply start playing, and at the chosen moment (``after_ms``
into the reply's audio, or its ``at_word``-th word) ends turn k-1 and starts turn k: its audio
streams over the reply in a task of its own, since the user speaks when they speak, not when
the runner gets to the next turn. Turn k-1's call returns once the reply it was playing is
over (stopped, or played to its end), with what of it played; the runner's call for turn k
waits for that task, which ends turn k as any turn ends, with a `BargeIn` record. The runner
sees two ordinary turns, each with its own duration.

**Whose words.** Everything turn k-1's speech says belongs to turn k-1, including what it
says after the interruption (the interrupted reply's message, which LiveKit adds once it
stops; a tool of turn k-1 returning later and its reply being spoken): turn k's reply, and its
latency, are only what the agent said in answer to turn k. What turn k-1's speech says after
turn k-1 was reported is listed in turn k's ``metadata["livekit"]["late_speech"]``.

**Real time.** Barge-in is a race between the reply playing and the user speaking, so these
two turns always run at real speed, whatever the adapter's ``speed``: the reply plays out in
real time (the simulated speaker), and the interrupting audio is paced like a microphone.
Every delay is a position in the reply's audio, and the verdict depends on what the session
did with that audio, so streaming speed never changes it.

**Never passes for the wrong reason.** The barge-in is not tested, and the check errors
saying why, when the session has no TTS (nothing to interrupt), the agent did not speak, its
reply ended before the interruption was due, the agent was not speaking at that moment, or
the interrupting speech is shorter than the session's minimum interruption duration. The
first four leave turn k to run as an ordinary turn after the reply; the last streams it over
the reply anyway (it is what the user did) and reports what happened.

**Stopping.** The agent stops when its audio goes quiet: the output is paused (LiveKit pauses
first, then interrupts once the user's words are transcribed) or cleared. It counts only if
the reply then ends interrupted: a paused reply that resumes (LiveKit's false-interruption
handling, when nothing was transcribed) did not stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

from livekit.agents import AgentSession

from ....errors import AdapterError
from ....models import AgentReply, BargeIn, InterruptConfig
from ....voice._barge_in import word_offset_s
from ...base import TurnInput
from .._audio import audio_turn_extra
from .._compat import activity_current_speech, session_activity
from .._turn import Stage, TurnRecorder
from .._turn_capture import TurnCapture
from ..offline._stt import SegmentSTT
from ._io import CaptureAudioOutput, CaptureTextOutput
from ._streamer import AudioStreamer
from ._turn_state import OpenedTurn, SentTurn

__all__ = ["BargeInTurns", "TurnHost", "played_words", "word_offset_s"]


class TurnHost(Protocol):
    """What barge-in turns need of the conversation they run in: its deadline, and how it
    opens, sends and finishes a turn (one `finish` for every reply, however it ran)."""

    def deadline(self, stage: Stage, *, turn_label: str) -> AbstractAsyncContextManager[None]:
        """Bound a wait by the adapter's ``timeout_s``; failures name ``turn_label``."""
        ...

    def open_turn(self, turn: TurnInput) -> OpenedTurn:
        """Start ``turn`` in the recorder."""
        ...

    async def send(self, turn: TurnInput, stage: Stage, *, settle: bool) -> SentTurn:
        """Send ``turn`` (its audio, or its text); without ``settle``, return once the reply
        is under way."""
        ...

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
        """The turn's `AgentReply`."""
        ...


@dataclass
class _Interrupted:
    """The reply a barge-in cut: what is known of it once it is over."""

    handle: Any
    """Its speech handle."""
    played_s: float | None = None
    """Seconds of its audio that played."""
    said: str | None = None
    """What of it played (its words up to where its audio stopped), once known."""
    frames: list[Any] = field(default_factory=list)
    """Its audio, as far as it played."""


def played_words(text: str, frames: list[Any], played_s: float | None) -> str:
    """The words of ``text`` a caller heard when ``played_s`` seconds of its audio (``frames``)
    played: those that start before that point, placed over the voiced audio by their length
    (as `word_offset_s` places them). All of it when the audio played to its end, or when the
    point cannot be known."""
    words = text.split()
    if not words or played_s is None or not frames:
        return text.strip()
    from livekit import rtc

    from ....voice._fixtures import clip_from_pcm16, voiced_frames

    frame = rtc.combine_audio_frames(frames)
    if played_s >= frame.duration - 1e-3:
        return text.strip()
    clip = clip_from_pcm16(bytes(frame.data), frame.sample_rate)
    voiced, n = voiced_frames(clip)
    if not voiced.size:
        return text.strip()
    start = float(voiced[0] * n / clip.sample_rate)
    end = float((voiced[-1] + 1) * n / clip.sample_rate)
    heard = [
        w for i, w in enumerate(words, start=1) if word_offset_s(text, i, start, end) < played_s
    ]
    return " ".join(heard)


def _frames_until(frames: list[Any], seconds: float | None) -> list[Any]:
    """The first ``seconds`` of the audio in ``frames`` (all of it for None)."""
    if seconds is None:
        return list(frames)
    from livekit import rtc

    kept: list[Any] = []
    total = 0.0
    for frame in frames:
        left = seconds - total
        if left <= 1e-6:
            break
        if frame.duration > left:
            samples = int(left * frame.sample_rate)
            width = 2 * frame.num_channels
            frame = rtc.AudioFrame(
                data=bytes(frame.data)[: samples * width],
                sample_rate=frame.sample_rate,
                num_channels=frame.num_channels,
                samples_per_channel=samples,
            )
        kept.append(frame)
        total += frame.duration
    return kept


class BargeInTurns:
    """The barge-in turns of one conversation (see the module docstring).

    Args:
        host: The conversation: opens, sends and finishes turns, and bounds waits.
        session: Its session.
        recorder: Its recorder.
        audio_out: The session's audio output (None: the session cannot speak audio, so no
            barge-in can be tested).
        text_out: The session's text output (what each speech said).
        streamer: Streams the interrupting turn's audio (None without audio turns).
        speed: The adapter's speed, which the reply's playout returns to after a barge-in.
    """

    def __init__(
        self,
        host: TurnHost,
        session: AgentSession[Any],
        recorder: TurnRecorder,
        *,
        audio_out: CaptureAudioOutput | None,
        text_out: CaptureTextOutput | None,
        streamer: AudioStreamer | None,
        speed: float,
    ) -> None:
        self._host = host
        self._session = session
        self._recorder = recorder
        self._audio_out = audio_out
        self._text_out = text_out
        self._streamer = streamer
        self._speed = speed
        self._held: dict[int, asyncio.Task[tuple[AgentReply, list[Any]]]] = {}
        """The interrupting turns running since their interruption, by turn index."""
        self._untested: dict[int, str] = {}
        """Why an interrupting turn could not barge in, by turn index."""
        self._pending_run: Awaitable[Any] | None = None
        """The result of an interrupted text turn's ``session.run``, collected later."""

    def plan(self, turn: TurnInput) -> TurnInput | None:
        """The turn that will interrupt the reply to ``turn``, if it can: without an audio
        output there is nothing to interrupt, so it runs as an ordinary turn and its check
        errors, saying so."""
        following = turn.interrupted_by
        if following is not None and self._audio_out is None:
            self._untested[following.index] = (
                "the session has no TTS (or LiveKitAdapter(capture_audio=False)), so the agent "
                "never speaks audio that could be interrupted; give the AgentSession a TTS "
                "(SynthesizerTTS() speaks offline)"
            )
            return None
        return following

    async def held_reply(self, index: int) -> tuple[AgentReply, list[Any]] | None:
        """Turn ``index``'s reply and items if a barge-in started it: the task running it
        since the interruption, awaited (raising what it failed with)."""
        held = self._held.pop(index, None)
        if held is None:
            return None
        return await held

    async def drop_held(self) -> None:
        """Stop interrupting turns nobody asked for (the run ended before them)."""
        tasks = list(self._held.values())
        self._held.clear()
        for task in tasks:
            if not task.done():
                task.cancel()
        for task in tasks:
            with contextlib.suppress(BaseException):
                await task

    def untested(self, index: int) -> BargeIn | None:
        """The record of turn ``index`` when it should have interrupted and could not."""
        reason = self._untested.pop(index, None)
        return None if reason is None else BargeIn(precondition=reason)

    async def respond_interrupted(
        self, turn: TurnInput, following: TurnInput, stage: Stage, opened: OpenedTurn
    ) -> AgentReply:
        """Turn ``turn`` (k-1), interrupted by ``following`` (k): returns k-1's reply once the
        reply being played is over, and leaves k running (see the module docstring)."""
        assert following.turn.interrupt is not None
        host, recorder = self._host, self._recorder
        label = f"turn {turn.index + 1}"
        self._set_playout(1.0)
        try:
            async with host.deadline(stage, turn_label=label):
                sent = await host.send(turn, stage, settle=False)
                self._pending_run = sent.pending
                handle, untested = await self._reply_playing(turn, following.turn.interrupt, stage)
                if untested is not None:
                    # Turn k runs as an ordinary turn once the agent is done with this one.
                    self._untested[following.index] = untested
                    self._set_playout(self._speed)
                    await recorder.settle(stage.set)
                    await self._collect_pending_run(stage)
                    capture = recorder.end_turn(sent.anchors)
                    return host.finish(turn, capture, opened, sent, label=label)
            # The interruption starts now: turn k-1's part so far, then turn k begins.
            capture = recorder.end_turn(sent.anchors)
            recorder.carry_over()
            saved = self._streamer.saved if self._streamer is not None else None
            opened.stop_counting(self._session, saved)
        except BaseException:
            self._set_playout(self._speed)
            raise
        interrupted = _Interrupted(handle)
        task = asyncio.create_task(self._interrupt(following, interrupted))
        self._held[following.index] = task
        assert self._audio_out is not None
        over = _playout_over(self._audio_out, handle)
        try:
            async with host.deadline(stage, turn_label=label):
                stage.set(f"the interrupted reply to turn {turn.index + 1} to stop or play out")
                ends: set[asyncio.Future[Any]] = {over, _done_future(handle), task}
                await recorder.guard(asyncio.wait(ends, return_when=asyncio.FIRST_COMPLETED))
            if capture.unfinished_calls and handle.interrupted:
                # The user's turn interrupts the speeches still running the cut turn's tools; a
                # tool may end cancelled then: wait until they ended (or turn k did), so each
                # reads as the interruption left it (cancelled, or pending if it ran on).
                await self._calls_ended(capture, task, stage, label=label)
        finally:
            over.cancel()
        capture.note_cancellations()
        said = self._what_played(interrupted)
        # What else its speech said since (another speech of the turn), then that speech's
        # own message when LiveKit adds it: reported here, not again in turn k.
        recorder.reported.add(handle.id)
        others = [text for text, sid in recorder.take_said(turn.index) if sid != handle.id]
        text = " ".join(part for part in (capture.reply, said, *others) if part)
        capture.speech_ids.append(handle.id)
        own_first = self._text_out.first_text_time(handle.id) if self._text_out else None
        if own_first is not None and said:
            capture.first_text_at = min(
                t for t in (capture.first_text_at, own_first) if t is not None
            )
        capture.reply = text
        frames = self._frames_of(capture.speech_ids, interrupted)
        return host.finish(turn, capture, opened, sent, label=label, frames=frames)

    async def _calls_ended(
        self, capture: TurnCapture, task: asyncio.Task[Any], stage: Stage, *, label: str
    ) -> None:
        recorder = self._recorder
        names = ", ".join(c.name for c in capture.unfinished_calls)
        async with self._host.deadline(stage, turn_label=label):
            stage.set(f"the tools the interruption cut ({names}) to be cancelled or return")
            ended = asyncio.ensure_future(recorder.calls_ended(capture.unfinished_calls))
            try:
                either: set[asyncio.Future[Any]] = {ended, task}
                await recorder.guard(asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED))
            finally:
                if not ended.done():
                    ended.cancel()

    def _what_played(self, interrupted: _Interrupted) -> str:
        """The interrupted reply's words as far as its audio played; also noted on
        ``interrupted``."""
        handle, audio_out = interrupted.handle, self._audio_out
        assert audio_out is not None
        played = audio_out.played_by_speech.get(handle.id)
        frames = audio_out.frames_by_speech.get(handle.id, [])
        text = self._text_out.text_of(handle.id) if self._text_out is not None else ""
        interrupted.played_s = played
        interrupted.frames = _frames_until(frames, played)
        interrupted.said = played_words(text, frames, played)
        return interrupted.said

    def _frames_of(self, speech_ids: list[str], interrupted: _Interrupted) -> list[Any]:
        """The earlier turn's reply audio: its speeches' frames, the interrupted one's as far
        as it played."""
        audio_out = self._audio_out
        assert audio_out is not None
        frames: list[Any] = []
        seen: set[str] = set()
        for speech_id in [*speech_ids, interrupted.handle.id]:
            if speech_id in seen:
                continue
            seen.add(speech_id)
            if speech_id == interrupted.handle.id:
                frames.extend(interrupted.frames)
            else:
                frames.extend(audio_out.frames_by_speech.get(speech_id, []))
        return frames

    def _set_playout(self, speed: float) -> None:
        if self._audio_out is not None:
            self._audio_out.set_speed(speed)

    async def _collect_pending_run(self, stage: Stage) -> None:
        run, self._pending_run = self._pending_run, None
        if run is not None:
            stage.set("the result of the text turn (session.run)")
            await self._recorder.guard(_await_run(run))

    async def _reply_playing(
        self, turn: TurnInput, config: InterruptConfig, stage: Stage
    ) -> tuple[Any, str | None]:
        """Wait until the interruption is due; return the speech being interrupted, or why the
        barge-in cannot be tested (the agent did not speak, its reply ended before the
        interruption was due, or it was not speaking at that moment)."""
        audio_out, recorder, session = self._audio_out, self._recorder, self._session
        assert audio_out is not None
        stage.set(f"the agent's reply to turn {turn.index + 1} to start playing")
        playing = asyncio.ensure_future(audio_out.playing_started.wait())
        done = asyncio.ensure_future(recorder.settle(stage.set))
        try:
            await recorder.guard(asyncio.wait({playing, done}, return_when=asyncio.FIRST_COMPLETED))
        finally:
            for future in (playing, done):
                if not future.done():
                    future.cancel()
        activity = session_activity(session)
        handle = activity_current_speech(activity) if activity is not None else None
        if not playing.done() or handle is None:
            return None, (
                f"the agent did not speak in reply to turn {turn.index + 1}, so there was "
                "nothing to interrupt"
            )
        ended = _done_future(handle)
        if config.at_word is not None:
            stage.set(f"the whole reply audio, to place word {config.at_word}")
            flushed = asyncio.ensure_future(audio_out.segment_flushed.wait())
            either: set[asyncio.Future[Any]] = {flushed, ended}
            await recorder.guard(asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED))
            if not flushed.done():
                flushed.cancel()
            offset, why = self._word_offset(config.at_word, handle)
            if why is not None:
                return None, why
            due = f"at word {config.at_word} ({offset:.2f} s into the reply)"
        else:
            assert config.after_ms is not None
            offset = config.after_ms / 1000
            due = f"{config.after_ms:g} ms into the reply"
        started_at = audio_out.segment_started_at
        if started_at is not None:
            stage.set(f"the interruption {due}")
            wait = started_at + offset - time.perf_counter()
            if wait > 0:
                # Pacing: the interruption waits for a position in audio played in real time.
                sleeper = asyncio.ensure_future(asyncio.sleep(wait))
                await recorder.guard(
                    asyncio.wait({sleeper, ended}, return_when=asyncio.FIRST_COMPLETED)
                )
                if not sleeper.done():
                    sleeper.cancel()
        if handle.done() or not audio_out.playing:
            played = (
                "" if started_at is None else f" after {time.perf_counter() - started_at:.2f} s"
            )
            return None, (
                f"the agent's reply ended{played}, before the interruption was due ({due}); "
                "interrupt earlier or make the reply longer"
            )
        if session.agent_state != "speaking":
            return None, (
                f"the agent was not speaking when the interruption was due ({due}; agent state "
                f"{session.agent_state!r})"
            )
        return handle, None

    def _word_offset(self, word: int, handle: Any) -> tuple[float, str | None]:
        from livekit import rtc

        from ....voice._fixtures import clip_from_pcm16, voiced_frames

        assert self._audio_out is not None
        text = self._text_out.text_of(handle.id) if self._text_out is not None else ""
        frames = list(self._audio_out.frames)
        if not frames or not text.strip():
            return 0.0, "the reply's words or audio were not observed, to place at_word"
        frame = rtc.combine_audio_frames(frames)
        clip = clip_from_pcm16(bytes(frame.data), frame.sample_rate)
        voiced, n = voiced_frames(clip)
        if not voiced.size:
            return 0.0, "the reply's audio is silent, so no word can be placed in it"
        start = float(voiced[0] * n / clip.sample_rate)
        end = float((voiced[-1] + 1) * n / clip.sample_rate)
        try:
            return word_offset_s(text, word, start, end), None
        except AdapterError as exc:
            return 0.0, str(exc)

    async def _interrupt(
        self, turn: TurnInput, interrupted: _Interrupted
    ) -> tuple[AgentReply, list[Any]]:
        """Turn k: stream its audio over the reply in real time and end it as any turn."""
        assert turn.audio is not None and turn.turn.interrupt is not None
        host, recorder, session, streamer = (
            self._host,
            self._recorder,
            self._session,
            self._streamer,
        )
        assert self._audio_out is not None and streamer is not None
        handle = interrupted.handle
        label = f"turn {turn.index + 1}"
        stage = Stage()
        opened = host.open_turn(turn)
        audio_out = self._audio_out
        position_s = audio_out.position_s()
        halts_before, resumes_before = len(audio_out.halts), len(audio_out.resumes)
        played: list[float] = []
        listener = audio_out.on("playback_finished", lambda ev: played.append(ev.playback_position))

        def reply_over(_: Any) -> None:
            # The interrupted reply is over: the audio that plays from now on is new.
            audio_out.frames = []
            audio_out.first_frame_at = None

        if handle.done():
            reply_over(handle)
        else:
            handle.add_done_callback(reply_over)
        try:
            async with host.deadline(stage, turn_label=label):
                path = turn.audio
                audio, segments = await streamer.load(
                    turn, path, stage, without_speech="it cannot interrupt anything", replay=False
                )
                streamer.prime(path, turn.turn.user, segments)
                interruption = session.options.interruption
                min_s = float(interruption.get("min_duration", 0.5))
                first = segments[0]
                onset_s = first.end_s - first.speech_s
                anchors: list[float] = []
                onset: list[float] = []
                pusher = asyncio.create_task(
                    streamer.stream_live(audio, segments, anchors, onset_s, onset)
                )
                try:
                    n = len(segments)
                    for k in range(1, n + 1):
                        stage.set(
                            f"the session's VAD to end the interrupting speech (segment {k} of "
                            f"{n} in {path})"
                        )
                        await recorder.guard(recorder.speech_ended.reach(k))
                    if handle.allow_interruptions:
                        # The session hears it all: wait until it has had every segment, as in
                        # any turn (see _hearing).
                        for k in range(1, n + 1):
                            stage.set(f"the STT's transcript of segment {k} of {n} in {path}")
                            await streamer.heard(k, n, path, stage)
                    stage.set("the interrupting audio to finish streaming")
                    await recorder.guard(pusher)
                finally:
                    if not pusher.done():
                        pusher.cancel()
                        with contextlib.suppress(asyncio.CancelledError):
                            await pusher
                await recorder.settle(stage.set)
                await self._collect_pending_run(stage)
                if not handle.allow_interruptions and isinstance(session.stt, SegmentSTT):
                    # Audio heard while an uninterruptible reply played was replaced by silence
                    # for the STT; what it did get, it may still be transcribing.
                    stage.set("the STT to finish what it got of the interrupting speech")
                    await recorder.guard(session.stt.idle())
                    await recorder.settle(stage.set)
        finally:
            audio_out.off("playback_finished", listener)
            self._set_playout(self._speed)
        halts = audio_out.halts[halts_before:]
        resumes = audio_out.resumes[resumes_before:]
        onset_at = onset[0] if onset else None
        stopped = bool(handle.interrupted) and bool(halts)
        # Quiet for good: the first halt after the last resume (a resumed reply went on).
        last_resume = max(resumes, default=None)
        final = [h for h in halts if last_resume is None or h >= last_resume]
        stop_at = final[0] if final else None
        first_quiet = halts[0] if halts else None

        def since_onset(at: float | None) -> float | None:
            if at is None or onset_at is None:
                return None
            return round(max(0.0, at - onset_at), 3)

        if recorder.unrecoverable:
            raise AdapterError(
                f"{label}: the agent failed to reply to the audio {turn.audio}: "
                + "; ".join(recorder.errors)
            )
        capture = recorder.end_turn(anchors)
        barge = BargeIn(
            precondition=(
                f"the interrupting speech lasts {first.speech_s:.2f} s, shorter than the "
                f"session's minimum interruption duration ({min_s:g} s), so the session cannot "
                "take it as an interruption; use a longer utterance"
                if first.speech_s < min_s
                else None
            ),
            reply_position_s=round(position_s + onset_s, 3),
            speech_s=round(first.speech_s, 3),
            min_interruption_s=min_s,
            stopped=stopped,
            stop_latency_s=since_onset(stop_at) if stopped else None,
            resumed=bool(resumes),
            played_s=round(played[0], 3) if played else None,
            quiet_after_s=since_onset(first_quiet),
            interrupted_text=interrupted.said or None,
        )
        extra = {**audio_turn_extra(turn, audio, len(segments)), "interrupt": True}
        sent = SentTurn(anchors, recorder.heard, extra)
        reply = host.finish(turn, capture, opened, sent, label=label, barge_in=barge)
        return reply, capture.items


def _playout_over(audio_out: Any, handle: Any) -> asyncio.Future[None]:
    """Finishes when the audio output reports ``handle``'s audio over (stopped or played to
    its end)."""
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def check(_: Any = None) -> None:
        if handle.id in audio_out.played_by_speech and not future.done():
            future.set_result(None)

    audio_out.on("playback_finished", check)
    future.add_done_callback(lambda _: audio_out.off("playback_finished", check))
    check()
    return future


def _done_future(handle: Any) -> asyncio.Future[None]:
    future: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def done(_: Any) -> None:
        if not future.done():
            future.set_result(None)

    if handle.done():
        done(handle)
    else:
        handle.add_done_callback(done)
    return future


async def _await_run(run: Awaitable[Any]) -> Any:
    return await run
