"""Streaming a turn's fixture audio into the in-process session: `AudioStreamer`.

A conversation is given one streamer for its session (when its transcript has audio turns). It
loads what a turn streams (the fixture after the turn's audio conditions), finds the speech in
it where the session's VAD will, hands a `FixtureTextSTT` the fixture's phrases, and pushes the
frames into the session's microphone: phrase by phrase at max speed, each once the agent is done
with the one before; paced at the adapter's speed; or like a live microphone (a barge-in's
interrupting turn). It follows the session's VAD streams across handoffs, so every end of speech
it waits for is the one the session itself decides on. The ordinary turn, the barge-in's
interrupting turn and the realtime path all stream through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from livekit.agents import AgentSession

from ....errors import AdapterError
from ....models import AudioCondition, DtmfInput
from ....voice._dtmf import in_band
from ....voice._heard import assign_words
from ....voice._hearing import Hearing
from ....voice._sidecar import TimedWord
from ....voice._unheard import no_speech_error
from ...base import TurnInput
from .._audio import FixtureAudio, SpeechSegment, VADMirror
from .._compat import vad_stream_vad
from .._replay import VADReplay
from .._segments import (
    SessionVAD,
    flush_session_vad,
    frames_for_phrase,
    frames_past_end,
    scan_fixture,
)
from .._turn import Stage, TurnRecorder
from ..offline._stt import FixtureTextSTT, SegmentSTT
from ._io import FrameQueueInput
from ._realtime import RealtimeAudio

__all__ = ["AudioStreamer", "StreamSettings"]


class StreamSettings(Protocol):
    """What the streamer reads of its adapter (`LiveKitAdapter`)."""

    speed: float
    vad_replay: bool

    def turn_audio(
        self,
        path: Path,
        conditions: Sequence[AudioCondition] = (),
        seed: int = 0,
        keys: DtmfInput | None = None,
    ) -> FixtureAudio: ...


class AudioStreamer:
    """Streams fixtures into one session's audio input (see the module docstring).

    Args:
        settings: The adapter (speed, VAD replay, how a turn's audio is loaded).
        session: The session the audio goes to.
        recorder: The conversation's recorder (events, counts, failures of the session).
        audio_in: The session's microphone.
        vad: Follows the session's VAD streams (None for a realtime agent: the model, or the
            session on its behalf, takes the turns; see `_realtime`).
        mirror: A twin of the session's VAD streams, when they cannot be reset.
        realtime: Streams the turns of an agent on a realtime model, which hears itself.
        save: Saves the exact audio a turn streams (turn index), or returns None.
    """

    def __init__(
        self,
        settings: StreamSettings,
        session: AgentSession[Any],
        recorder: TurnRecorder,
        audio_in: FrameQueueInput,
        *,
        vad: SessionVAD | None,
        mirror: VADMirror | None,
        realtime: RealtimeAudio | None,
        save: Callable[[FixtureAudio, int], Path | None],
    ) -> None:
        self._settings = settings
        self._session = session
        self._recorder = recorder
        self.audio_in = audio_in
        self.vad = vad
        self.mirror = mirror
        self.realtime = realtime
        self._save = save
        self._mirrored: Any = None
        self._replay: VADReplay | None = None
        """Serves the session's VAD stream recorded decisions (see `_replay`), when it can."""
        self.saved: Path | None = None
        """Where the audio last loaded was saved (None: not asked to save it)."""

    @property
    def pipeline(self) -> bool:
        """True when the session hears with its own VAD and STT (not a realtime model)."""
        return self.vad is not None

    # -- lifecycle ----------------------------------------------------------------------------

    def follow_session(self) -> None:
        """Once the session started: follow the VAD streams it listens with."""
        if self.vad is not None:
            self.vad.follow(self._recorder.probe.recognition)

    def release_replay(self) -> None:
        """What the session feeds its VAD from now on (while closing) is its own."""
        if self._replay is not None:
            self._replay.release()

    async def aclose(self) -> None:
        if self.mirror is not None:
            await self.mirror.aclose()

    # -- what a turn streams ------------------------------------------------------------------

    async def load(
        self,
        turn: TurnInput,
        path: Path,
        stage: Stage,
        *,
        without_speech: str,
        replay: bool = True,
    ) -> tuple[FixtureAudio, list[SpeechSegment]]:
        """Load the turn's audio (conditions applied), save what will stream, follow the
        recognition and find the speech in it; raise, ending with ``without_speech``, when the
        VAD taking the turns would hear none. ``replay``: the VAD's decisions may be replayed
        (the audio streams at max speed)."""
        stage.set(f"the audio fixture {path} to load")
        settings = self._settings
        keys = in_band(turn.turn.dtmf)  # the turn's keys as tones too (dtmf: in_audio)
        audio = await asyncio.to_thread(settings.turn_audio, path, turn.conditions, turn.seed, keys)
        self.saved = await asyncio.to_thread(self._save, audio, turn.index)
        if self.realtime is not None:
            # A realtime agent: cut where the VAD taking its turns (the model's or the
            # session's) will, see `_realtime`.
            segments = list(await self.realtime.segments(audio, path, stage))
            which = "the VAD that takes the realtime agent's turns"
        else:
            await self.follow_recognition()
            segments = list(await self._segments_from(audio, path, stage, start=0, replay=replay))
            which = "the session's VAD"
        if not segments:
            raise no_speech_error(
                which, path, audio.duration_s, turn.conditions, consequence=without_speech
            )
        return audio, segments

    def prime(
        self, path: Path, user: str, segments: Sequence[SpeechSegment], *, heard: int = 0
    ) -> None:
        """Hand a `FixtureTextSTT` the fixture's phrases for ``segments`` (after the first
        ``heard``, which were transcribed already)."""
        if self.realtime is not None:  # the model hears (a barge-in's interrupting turn too)
            self.realtime.prime(path, user, tuple(segments))
            return
        stt_ = self._session.stt
        if not isinstance(stt_, FixtureTextSTT):
            return
        stt_.clear()
        spans = [(s.end_s - s.speech_s, s.end_s) for s in segments]
        stt_.expect(path, user, spans, heard=heard, detected=[s.detected_s for s in segments])

    async def _segments_from(
        self,
        audio: FixtureAudio,
        path: Path,
        stage: Stage,
        *,
        start: int,
        replay: bool = False,
    ) -> tuple[SpeechSegment, ...]:
        """Where the session's current VAD stream will cut ``audio`` from frame ``start`` on.

        Start of a fixture (``start`` 0): the session's VAD stream is reset, so the cut is a
        property of the fixture, scanned once per process. From a later frame: the session has
        just started listening with a new stream (a handoff between two phrases), which is
        fresh too. With a twin (see `LiveKitConversation.start`), the twin is fed the frames
        instead. With ``replay`` (and the adapter's ``vad_replay`` at max speed), the session's
        stream is served the scan's decisions where `VADReplay` can (see `_replay`).
        """
        assert self.vad is not None
        if self.mirror is not None:
            stage.set(f"the twin VAD stream to scan {path}")
            if start == 0:
                self.vad.begin_fixture(stream_start_s=self.mirror.pushed_s, flushed=False)
            else:
                self.vad.begin_stream(fixture_s=start * audio.frame_s)
            return await self.mirror.feed(audio, start=start)
        recognition = self.vad.recognition
        settings = self._settings
        replay = replay and settings.vad_replay and settings.speed == 0
        flushed: Any = None
        if start == 0:
            stage.set("the session's VAD to take the audio streamed before this turn")
            flushed = await self._recorder.guard(
                flush_session_vad(
                    recognition,
                    self.audio_in.taken,
                    before_flush=self._attach_replay if replay else self._stop_replay,
                )
            )
            self.vad.begin_fixture(stream_start_s=0.0, flushed=True)
        else:
            self.vad.begin_stream(fixture_s=start * audio.frame_s)
        stage.set(f"the speech segments of {path} (one VAD pass, once per fixture)")
        # The stream just reset is the one to predict (an agent may listen with a VAD of its
        # own); after a handoff between phrases, the session's.
        vad = vad_stream_vad(flushed) if flushed is not None else self._session.vad
        assert vad is not None
        scan = await scan_fixture(vad, audio, start)
        replayer = self._replay
        if (
            replay
            and scan.trace is not None
            and replayer is not None
            and replayer.stream is flushed
        ):
            replayer.serve(scan.trace)
        return scan.segments

    def _attach_replay(self, stream: Any) -> None:
        """Before the flush that starts a fixture: put a `VADReplay` in front of ``stream``
        if it is new and can take one (see `_replay`)."""
        current = self._replay
        if current is not None and current.stream is stream:
            current.stop()
        elif VADReplay.attachable(stream):
            if current is not None:
                current.release()  # an earlier agent's stream
            self._replay = VADReplay(stream)

    def _stop_replay(self, stream: Any) -> None:
        """Before the flush that starts a fixture streamed in real time: let it compute."""
        if self._replay is not None:
            self._replay.stop()

    # -- streaming ----------------------------------------------------------------------------

    async def stream(
        self,
        audio: FixtureAudio,
        segments: list[SpeechSegment],
        path: Path,
        user: str,
        stage: Stage,
        anchors: list[float],
    ) -> int:
        """Stream a pipeline agent's turn: at max speed one phrase at a time, else paced at the
        adapter's speed (``anchors`` gets when each phrase's speech was streamed to its end);
        return once the session has had every phrase, with the phrase count."""
        speed = self._settings.speed
        if speed == 0:
            return await self._push_phrases(audio, segments, path, user, stage)
        n = len(segments)
        pusher = asyncio.create_task(self._push_paced(audio, tuple(segments), anchors, speed))
        try:
            for k in range(1, n + 1):
                await self.segment_done(k, n, path, stage, expected=segments[k - 1])
            stage.set("the audio to finish streaming")
            await self._recorder.guard(pusher)
        finally:
            await _stop(pusher)
        return n

    async def _push_phrases(
        self,
        audio: FixtureAudio,
        segments: list[SpeechSegment],
        path: Path,
        user: str,
        stage: Stage,
    ) -> int:
        """Stream ``audio`` as fast as possible, one phrase at a time; return the phrase count.

        Up to where the VAD ends phrase k, then the agent finishes its answer to phrase k
        (tools, handoff, the next agent's ``on_enter``) before phrase k+1 comes, as the pause
        gives it the time to in a live call. After a handoff the new agent listens with new
        VAD streams, so the rest of the fixture is cut afresh from where they start, and a
        `FixtureTextSTT` is primed again for the rest as now cut (``user`` is the turn's text).
        """
        recorder, session = self._recorder, self._session
        segments = list(segments)
        pushed = 0
        done = 0
        finished: list[SpeechSegment] = []
        # With the session's VAD reset before every fixture, the silence after the last end
        # of speech can change nothing (the VAD hears no more speech in it: the scan saw the
        # whole tail), so it is not streamed. A twin must see every frame the session sees.
        whole_tail = self.mirror is not None
        while segments:
            if len(segments) > 1:
                upto = frames_for_phrase(segments[0], segments[1], audio)
            elif whole_tail:
                upto = len(audio.frames)
            else:
                upto = frames_past_end(segments[0], audio)
            await self._push_now(audio.frames[pushed:upto])
            pushed = max(pushed, upto)
            done += 1
            await self.segment_done(
                done, done + len(segments) - 1, path, stage, expected=segments[0]
            )
            finished.append(segments.pop(0))
            if not segments or session.turn_detection == "manual":
                continue
            stage.set(f"the session to take the audio of phrase {done} in {path}")
            await recorder.guard(self.audio_in.taken())
            await recorder.settle(stage.set)
            if await self.follow_recognition():
                segments = list(await self._segments_from(audio, path, stage, start=pushed))
                self.prime(path, user, finished + segments, heard=len(finished))
        if whole_tail:
            await self._push_now(audio.frames[pushed:])
        return done

    def prime_far_end(self, words: Sequence[TimedWord], segments: Sequence[SpeechSegment]) -> None:
        """Hand a `FixtureTextSTT` a far end's clip's ``words`` for ``segments`` (none for a
        beep: what the VAD may take for speech in a tone has no words)."""
        stt_ = self._session.stt
        if not isinstance(stt_, FixtureTextSTT):
            return
        stt_.clear()
        stt_.expect_transcripts(
            assign_words(
                words, [s.end_s for s in segments], detected=[s.detected_s for s in segments]
            )
        )

    async def segments_of(
        self, audio: FixtureAudio, path: Path, stage: Stage
    ) -> tuple[SpeechSegment, ...]:
        """Where the session's VAD, reset, will cut ``audio`` (a far end's clip: possibly no
        speech at all), computed as it streams in real time (no replayed decisions)."""
        return await self._segments_from(audio, path, stage, start=0, replay=False)

    async def push_far_end(
        self,
        audio: FixtureAudio,
        segments: tuple[SpeechSegment, ...],
        anchors: list[float],
        settle_s: float,
        *,
        words: bool,
    ) -> None:
        """Stream a far end's clip at its own pace on the loop's clock (the virtual one at max
        speed: no wall time), noting in ``anchors`` when each of ``segments``' speech ended (and,
        for a clip without ``words``, when it started and ended);
        then the phone line's silence until ``settle_s`` after the clip's own audio, unmarked
        on the turn's timeline (the far end's audio is over)."""
        assert self.vad is not None
        audible = min(len(audio.frames), math.ceil(audio.duration_s / audio.frame_s - 1e-9))
        if not words:  # a sound: a reply begun while it plays is timed from its start
            anchors.append(time.perf_counter())
        await self._push_paced(
            dataclasses.replace(audio, frames=audio.frames[:audible]), segments, anchors, 1.0
        )
        if not words:  # and one begun after it from its end
            anchors.append(time.perf_counter())
        silence = _silence_like(audio.frames[0])
        count = max(0, round(settle_s / audio.frame_s))
        frames = [*audio.frames[audible:], *[silence] * max(0, count - len(audio.frames) + audible)]
        loop = asyncio.get_running_loop()
        start = loop.time()
        marked, self.audio_in.on_push = self.audio_in.on_push, None
        try:
            for i, frame in enumerate(frames):
                if (delay := start + i * audio.frame_s - loop.time()) > 0:
                    await asyncio.sleep(delay)  # pacing a phone line, not waiting for an event
                self._notice_new_listener()
                self.vad.fed(frame.duration)
                self.audio_in.push(frame)
        finally:
            self.audio_in.on_push = marked

    async def _push_now(self, frames: tuple[Any, ...]) -> None:
        """Hand ``frames`` to the session at once, yielding now and then as a source would."""
        if self.vad is not None:
            self.vad.fed(sum(frame.duration for frame in frames))
        for i, frame in enumerate(frames):
            self.audio_in.push(frame)
            if i % 25 == 24:
                await asyncio.sleep(0)
        await asyncio.sleep(0)

    async def _push_paced(
        self,
        audio: FixtureAudio,
        segments: tuple[SpeechSegment, ...],
        anchors: list[float],
        speed: float,
    ) -> None:
        """Stream the frames at ``speed``, noting when each segment's speech ended."""
        assert self.vad is not None
        ends = [min(len(audio.frames) - 1, int(s.end_s / audio.frame_s)) for s in segments]
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i, frame in enumerate(audio.frames):
            due = start + i * audio.frame_s / speed
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)  # pacing a microphone, not waiting for an event
            self._notice_new_listener()
            self.vad.fed(frame.duration)
            self.audio_in.push(frame)
            while ends and i >= ends[0]:
                ends.pop(0)
                anchors.append(time.perf_counter())

    async def stream_live(
        self,
        audio: FixtureAudio,
        segments: Sequence[SpeechSegment],
        anchors: list[float],
        onset_s: float,
        onset: list[float],
    ) -> None:
        """Push ``audio`` like a microphone, in real time whatever the adapter's speed (a
        barge-in's interrupting speech); note when its speech starts (``onset``, at ``onset_s``
        into the audio) and when each phrase ends (``anchors``)."""
        frame_s = audio.frame_s
        ends = [min(len(audio.frames) - 1, int(s.end_s / frame_s)) for s in segments]
        start_frame = int(onset_s / frame_s)
        loop = asyncio.get_running_loop()
        start = loop.time()
        for i, frame in enumerate(audio.frames):
            due = start + i * frame_s
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)  # pacing a microphone, not waiting for an event
            if self.vad is not None:
                self.vad.fed(frame.duration)
            self.audio_in.push(frame)
            if i == start_frame:
                onset.append(time.perf_counter() - (onset_s - start_frame * frame_s))
            while ends and i >= ends[0]:
                ends.pop(0)
                anchors.append(time.perf_counter())

    # -- following the session ----------------------------------------------------------------

    async def follow_recognition(self) -> bool:
        """Follow the session when it listens with new VAD streams (an agent was started or
        resumed since the last look); True when it does. A twin starts afresh with them."""
        assert self.vad is not None
        current = self._recorder.probe.recognition
        changed = self.vad.follow(current)
        if self.mirror is not None:
            if self._mirrored is not None and current is not self._mirrored:
                await self.mirror.reset()
                changed = True
            self._mirrored = current
        return changed

    def _notice_new_listener(self) -> None:
        """While audio flows in real time: a new agent started listening (a handoff), with a
        new VAD stream that took its first frames somewhere unknown; its ends of speech are
        counted from now on, without a position to check."""
        assert self.vad is not None
        if self.vad.follow(self._recorder.probe.recognition):
            self.vad.begin_stream(fixture_s=None)

    async def segment_done(
        self,
        k: int,
        n: int,
        path: Path,
        stage: Stage,
        *,
        expected: SpeechSegment | None = None,
    ) -> None:
        """Wait until the session's VAD has ended speech segment ``k`` and the STT has
        transcribed it; with ``expected``, fail at once if the VAD cuts elsewhere."""
        assert self.vad is not None
        recorder, session = self._recorder, self._session
        stage.set(
            f"the session's VAD to end the user's speech (segment {k} of {n} in {path}; "
            f"user state {session.user_state!r})",
            hint=(
                "The fixture's speech segmentation ends this phrase and the session's VAD did "
                "not: its audio may have reached an agent that was not listening, or a pause "
                "in the fixture sits right at the VAD's min_silence_duration (re-synthesize it "
                "with a clearer pause)."
            ),
        )
        await recorder.guard(
            self.vad.ended(
                k, expected, what=f"speech segment {k} of {n} in {path}", why=self._why_agree()
            )
        )
        stage.set(
            f"the STT's transcript of speech segment {k} of {n} in {path}",
            hint="If the STT is only slow, raise LiveKitAdapter(timeout_s=...).",
        )
        await self.heard(k, n, path, stage)

    async def heard(self, k: int, n: int, path: Path, stage: Stage) -> None:
        """Wait until the agent has had segment ``k`` of ``n`` (see `_hearing`): transcribed,
        and its words taken in by the session's turn handling, so the end of the user's turn
        holding it is being decided on and `TurnRecorder.settle` waits for the answer."""
        recorder = self._recorder
        if isinstance(self._session.stt, SegmentSTT):
            await recorder.guard(recorder.segments_recognized.reach(k))
            hearing = self.hearing_of(path, n)
            words = hearing.spoken(k)
            last = recorder.segment_texts[k - 1]
            stage.set(
                f"the session to take in the transcript of speech segment {k} of {n} in "
                f"{path} ({last!r}; user_input_transcribed)",
                hint=(
                    "The STT answered, but the session never reported taking the words in: "
                    "its turn handling did not see them, so the agent could not answer them."
                ),
            )
            await recorder.guard(recorder.final_count.reach(words))
        else:
            # Another kind of STT: a segment counts once its final transcript reached the
            # session (an empty one never does: the turn then times out naming the segment).
            await recorder.guard(recorder.final_count.reach(k))

    def hearing_of(self, path: Path, segments: int) -> Hearing:
        """What the agent has had of ``path`` this turn, as `_hearing` counts it."""
        assert self.vad is not None
        recorder = self._recorder
        own = isinstance(self._session.stt, SegmentSTT)
        texts: list[str | None] = (
            list(recorder.segment_texts) if own else [None] * recorder.final_count.value
        )
        return Hearing(
            fixture=str(path),
            segments=segments,
            ended=min(segments, len(self.vad.ends)),
            transcripts=texts[:segments],
            taken=recorder.final_count.value,
        )

    def check_no_extra_segments(self, expected: int, path: Path) -> None:
        """Fail when the session's VAD ended speech more often than the fixture's segmentation
        says (the STT would have been handed phrases for the wrong segments)."""
        assert self.vad is not None
        heard = len(self.vad.ends)
        if heard > expected:
            raise AdapterError(
                f"the session's VAD cut {heard} speech segments in {path} where the fixture's "
                f"speech segmentation has {expected}. {self._why_agree()}"
            )

    def _why_agree(self) -> str:
        if self.mirror is not None:
            basis = (
                "A twin stream of the same VAD, fed the same frames, predicts the session's streams"
            )
        else:
            basis = (
                "The adapter resets the session's VAD stream at the start of each fixture "
                "(VADStream.flush()) and cuts the fixture once with the same VAD and settings"
            )
        return (
            f"{basis}, so both find the same segments, their ends within a few VAD windows of "
            "each other. They disagree when a pause in the fixture sits right at the VAD's "
            "min_silence_duration (re-synthesize it with a clearer pause), when the VAD's "
            "flush() keeps state, or when its settings change while the session runs. The turn "
            "stops here rather than hand the STT misplaced segments."
        )


def _silence_like(frame: Any) -> Any:
    """A frame of silence of ``frame``'s format (an ``rtc.AudioFrame``)."""
    samples = frame.samples_per_channel
    return type(frame)(
        data=bytes(2 * samples * frame.num_channels),
        sample_rate=frame.sample_rate,
        num_channels=frame.num_channels,
        samples_per_channel=samples,
    )


async def _stop(task: asyncio.Task[Any]) -> None:
    if not task.done():
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
