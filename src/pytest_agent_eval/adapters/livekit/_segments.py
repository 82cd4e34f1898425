"""Where the session's VAD cuts a fixture: known before streaming, checked while streaming.

A fixture's speech segmentation is a pure function of its frames and the VAD's settings, once
the VAD starts from a clean state. The adapter gives it one: at the start of each audio turn
it flushes the session's VAD stream (``VADStream.flush()``, which LiveKit defines as a hard
boundary that drops all accumulated state; Silero resets its model, filter and resampler), and
after a handoff the new agent listens with a new stream anyway. `scan_segments` runs the
same VAD once over the fixture, from that clean state, and keeps the result per fixture and
settings for the rest of the process, so a fixture heard in 50 runs is scanned once.

`SessionVAD` watches the session's own VAD stream while the fixture streams (every event,
after the session handled it) and checks it against the scan: each end of speech must come
where the scan put it, and the stream must not hear on past a predicted end. A disagreement
fails the turn at once, saying so, instead of waiting for an end of speech that will not
come. It also hands each end of speech, with the audio the VAD buffered for it, to a driven
`SegmentSTT`, so the STT transcribes the session's own segments without a VAD of its own.

`scan_fixture` keeps every event of the scan of a fixture from its first frame: at max speed
`_replay` hands them to the session's stream instead of having it compute them again.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from livekit.agents import vad as lk_vad

from ...errors import AdapterError
from ...voice._segments import SpeechSegment, speech_segment
from ._audio import FixtureAudio, speech_at_end
from ._compat import (
    recognition_vad_backlog,
    recognition_vad_stream,
    vad_options,
    watch_vad_events,
)
from ._replay import VADTrace, is_replayable, record_events

__all__ = [
    "FixtureScan",
    "SessionVAD",
    "SpeechEnd",
    "flush_session_vad",
    "frames_for_phrase",
    "frames_past_end",
    "scan_fixture",
    "scan_segments",
    "scans_run",
]

_TOLERANCE_S = 0.1
"""An end of speech this close to the scan's is the same one. They are computed the same way
and nearly always fall in the same VAD window, but LiveKit's resampler dithers (two passes over
the same 24 kHz audio hear it a least significant bit apart), so a probability right at a
threshold could put one a window (32 ms) early or late; three windows of slack keep that from
failing a turn, and the adapter streams 0.25 s past each predicted end, so a later end is
still seen."""

_OLD_AUDIO_SLACK_S = 0.1
"""After a flush, an event this far past all the audio given before it is from new audio."""

_MAX_SCANS_PER_VAD = 1024
_MAX_TRACES_PER_VAD = 64
"""Traces hold the fixture's audio about twice over (the events' copies of it); past this
many, the oldest fixture is forgotten and scanned again when next heard."""


@dataclass(frozen=True, slots=True)
class FixtureScan:
    """One VAD's pass over a fixture, from a clean state."""

    segments: tuple[SpeechSegment, ...]
    """Where it cuts the fixture."""
    trace: VADTrace | None
    """Every event of the pass, for a replay (None: not replayable, or not from frame 0)."""


_scans: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], FixtureScan]] = (
    weakref.WeakKeyDictionary()
)
_pending: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], asyncio.Future[FixtureScan]]] = (
    weakref.WeakKeyDictionary()
)
_scan_count = 0


def scans_run() -> int:
    """How many VAD passes `scan_segments` has run in this process (cache misses)."""
    return _scan_count


def _frames_digest(audio: FixtureAudio, start: int) -> str:
    digest = hashlib.sha256()
    for frame in audio.frames[start:]:
        digest.update(bytes(frame.data))
    first = audio.frames[0] if audio.frames else None
    if first is not None:
        digest.update(f"|{first.sample_rate}|{first.samples_per_channel}".encode())
    return digest.hexdigest()


def _segments_of(events: list[Any], audio: FixtureAudio, start: int) -> tuple[SpeechSegment, ...]:
    offset = start * audio.frame_s
    speaking = False
    segments: list[SpeechSegment] = []
    for event in events:
        if event.type == lk_vad.VADEventType.START_OF_SPEECH:
            speaking = True
        elif event.type == lk_vad.VADEventType.END_OF_SPEECH:
            speaking = False
            segments.append(speech_segment(event, -offset))
    if speaking:
        raise speech_at_end(audio)
    return tuple(segments)


async def scan_fixture(vad: lk_vad.VAD, audio: FixtureAudio, start: int = 0) -> FixtureScan:
    """A fresh stream of ``vad`` over ``audio``'s frames from ``start``: its speech segments
    and, for a replayable VAD from frame 0, its events.

    Times count from the start of the fixture. Cached for the life of the process per VAD
    object, frames and VAD settings (a VAD whose settings cannot be read is scanned every
    time).

    Raises:
        AdapterError: When speech is still going on at the end of the silence tail.
    """
    settings = vad_options(vad)
    if settings is None:
        return await _scan(vad, audio, start, None)
    key = (_frames_digest(audio, start), settings)
    known = _scans.get(vad)
    if known is not None and key in known:
        return known[key]
    # The runs of a transcript start together: the first to need a fixture scans it, the
    # others wait for that scan instead of running their own.
    pending = _pending.setdefault(vad, {})
    waiting = (asyncio.get_running_loop(), key)  # a task is awaited on its own loop only
    task = pending.get(waiting)
    if task is None:
        task = asyncio.ensure_future(_scan(vad, audio, start, key))
        pending[waiting] = task
        task.add_done_callback(lambda done: _settled(pending, waiting, done))
    return await asyncio.shield(task)


def _settled(pending: dict[Any, Any], key: Any, done: asyncio.Future[Any]) -> None:
    """A shared scan finished: forget it, and take its error (every waiter may have left)."""
    pending.pop(key, None)
    if not done.cancelled():
        done.exception()


async def _scan(
    vad: lk_vad.VAD,
    audio: FixtureAudio,
    start: int,
    key: tuple[str, tuple[Any, ...]] | None,
) -> FixtureScan:
    """Scan; keep the result under ``key`` (frames digest, VAD settings) when there is one."""
    global _scan_count
    events = await record_events(vad, audio, start)
    _scan_count += 1
    segments = _segments_of(events, audio, start)
    trace = None
    if key is not None and start == 0 and is_replayable(vad):
        trace = VADTrace.of(key[1], audio, events)
    scan = FixtureScan(segments, trace)
    if key is not None:
        known = _scans.setdefault(vad, {})
        if len(known) >= _MAX_SCANS_PER_VAD:
            known.pop(next(iter(known)))
        traced = [k for k, v in known.items() if v.trace is not None]
        if scan.trace is not None and len(traced) >= _MAX_TRACES_PER_VAD:
            del known[traced[0]]  # scanned again, trace and all, when heard again
        known[key] = scan
    return scan


async def scan_segments(
    vad: lk_vad.VAD, audio: FixtureAudio, start: int = 0
) -> tuple[SpeechSegment, ...]:
    """The speech segments a fresh stream of ``vad`` finds in ``audio``'s frames from
    ``start`` (see `scan_fixture`)."""
    return (await scan_fixture(vad, audio, start)).segments


async def flush_session_vad(
    recognition: Any,
    taken: Callable[[], Any],
    before_flush: Callable[[Any], None] | None = None,
) -> Any:
    """Reset the session's VAD stream once every frame streamed so far has reached it; return
    the stream.

    ``taken`` returns an awaitable that finishes once the session has taken every frame
    pushed into its audio input. The recognition then forwards them to its VAD stream in a
    task of its own; the flush must come after them, or their tail would be heard as the
    start of the next fixture. ``before_flush`` is called with the stream just before.

    Raises:
        AdapterError: The session has no VAD stream to flush, or it is closed.
    """
    await taken()
    for _ in range(10_000):
        if recognition_vad_backlog(recognition) == 0 and recognition_vad_stream(recognition):
            break
        await asyncio.sleep(0)  # the recognition's forwarding task runs on the next turns
    else:
        raise AdapterError(
            "the session's VAD stream never took the audio streamed before this turn (its "
            "VAD task is not running)"
        )
    stream = recognition_vad_stream(recognition)
    if before_flush is not None:
        before_flush(stream)
    try:
        stream.flush()
    except RuntimeError as exc:
        raise AdapterError(f"the session's VAD stream cannot be reset: {exc}") from None
    return stream


@dataclass(frozen=True, slots=True)
class SpeechEnd:
    """One end of speech the session's VAD declared while a fixture streamed."""

    at_s: float | None
    """Where, in seconds from the start of the fixture (None: the stream's timeline is not
    known, after a handoff while audio was flowing)."""
    speech_s: float
    """How long the speech lasted."""


class SessionVAD:
    """The session's own VAD, watched while fixtures stream.

    Args:
        on_start: Called when the VAD hears speech start.
        on_end: Called with each end-of-speech event (its ``frames`` hold the segment's
            audio as the VAD buffered it).
    """

    def __init__(
        self,
        on_start: Callable[[], None] | None = None,
        on_end: Callable[[Any], None] | None = None,
    ) -> None:
        self._on_start = on_start
        self._on_end = on_end
        self._recognition: Any = None
        self._changed = asyncio.Event()
        self._last_inference_s: float | None = None
        self._fed_s = 0.0
        self._fed_before_flush_s = 0.0
        self._await_restart = False
        self._stream_start_s: float | None = 0.0
        self.flush_ignored = False
        """The stream went on with its old timeline after a flush: it kept its state."""
        self.ends: list[SpeechEnd] = []
        """Ends of speech since `begin_fixture`, in order."""
        self.processed_s: float | None = None
        """How far into the fixture the VAD has listened (None: not known)."""

    @property
    def recognition(self) -> Any:
        """The audio recognition watched."""
        return self._recognition

    def follow(self, recognition: Any) -> bool:
        """Watch ``recognition``'s VAD events (a new agent listens with a new one); True when
        it was not watched yet."""
        if recognition is None or recognition is self._recognition:
            return False
        watch_vad_events(recognition, self._on_event)
        self._recognition = recognition
        self._last_inference_s = None
        self._fed_s = 0.0
        return True

    def fed(self, seconds: float) -> None:
        """The session was given ``seconds`` more of audio."""
        self._fed_s += seconds

    def begin_fixture(self, *, stream_start_s: float, flushed: bool) -> None:
        """A fixture starts streaming.

        Args:
            stream_start_s: The VAD stream's time at the fixture's first frame.
            flushed: The stream was just flushed: events still coming from before the flush
                belong to the earlier audio; the stream's time restarts at 0 after them.
        """
        self.ends = []
        self.processed_s = None
        self.flush_ignored = False
        self._stream_start_s = stream_start_s
        self._await_restart = flushed
        if flushed:
            self._fed_before_flush_s, self._fed_s = self._fed_s, 0.0

    def begin_stream(self, *, fixture_s: float | None) -> None:
        """A new VAD stream (a new agent listening) starts at ``fixture_s`` into the fixture
        (None: somewhere unknown, as after a handoff while audio was flowing)."""
        self._await_restart = False
        self._stream_start_s = -fixture_s if fixture_s is not None else None
        self.processed_s = None

    def _on_event(self, event: Any) -> None:
        kind = event.type
        if kind == lk_vad.VADEventType.START_OF_SPEECH and self._on_start is not None:
            self._on_start()
        elif kind == lk_vad.VADEventType.END_OF_SPEECH and self._on_end is not None:
            self._on_end(event)
        # A start or end of speech shares its window's time with the inference event just
        # before it; only those say where the stream's timeline is.
        stamp = float(event.timestamp)
        if kind == lk_vad.VADEventType.INFERENCE_DONE:
            previous, self._last_inference_s = self._last_inference_s, stamp
            restarted = previous is not None and stamp <= previous
            if self._await_restart:
                if previous is None or restarted:
                    self._await_restart = False  # the first window after the flush
                elif stamp > self._fed_before_flush_s + _OLD_AUDIO_SLACK_S:
                    # Later than any audio given before the flush: the stream kept its time.
                    self._await_restart = False
                    self.flush_ignored = True
                    self._stream_start_s = None
                    self._changed.set()
                    return
                else:
                    return  # the end of the audio given before the flush
            elif restarted:
                self._stream_start_s = None  # the stream started over unasked: time unknown
        elif self._await_restart:
            return  # from before the flush
        at: float | None = None
        if self._stream_start_s is not None:
            at = stamp - self._stream_start_s
            if at <= 1e-9:
                return  # audio streamed before this fixture
        if kind == lk_vad.VADEventType.INFERENCE_DONE:
            self.processed_s = at
        elif kind == lk_vad.VADEventType.END_OF_SPEECH:
            self.ends.append(SpeechEnd(at_s=at, speech_s=float(event.speech_duration)))
        self._changed.set()

    async def ended(
        self, k: int, expected: SpeechSegment | None, *, what: str, why: str
    ) -> SpeechEnd:
        """Return the ``k``-th end of speech of the fixture once the VAD declared it.

        Args:
            k: One-based index of the segment.
            expected: Where the fixture's segmentation ends it (None: no check).
            what: Names the segment and fixture in a message ("speech segment 2 of 3 in x.wav").
            why: Why the two should agree, and what to do when they do not.

        Raises:
            AdapterError: The VAD ended it elsewhere, or heard on past its predicted end.
        """
        while True:
            if self.flush_ignored:
                raise AdapterError(
                    f"the session's VAD stream did not start over when reset before {what} "
                    f"(VADStream.flush() kept its state), so where it cuts the fixture cannot "
                    f"be known. {why}"
                )
            if len(self.ends) >= k:
                end = self.ends[k - 1]
                if (
                    expected is not None
                    and end.at_s is not None
                    and abs(end.at_s - expected.detected_s) > _TOLERANCE_S
                ):
                    raise AdapterError(
                        f"the session's VAD ended {what} {end.at_s:.3f} s into the fixture, "
                        f"where the fixture's speech segmentation ends it at "
                        f"{expected.detected_s:.3f} s. {why}"
                    )
                return end
            heard = self.processed_s
            if (
                expected is not None
                and heard is not None
                and heard > expected.detected_s + _TOLERANCE_S
            ):
                raise AdapterError(
                    f"the session's VAD did not end {what} where the fixture's speech "
                    f"segmentation ends it ({expected.detected_s:.3f} s into the fixture): it "
                    f"listened on to {heard:.3f} s without an end of speech. {why}"
                )
            self._changed.clear()
            await self._changed.wait()


# -- how much of a fixture to stream per phrase (in-process, realtime and room mode) ----------


def frames_for_phrase(segment: SpeechSegment, following: SpeechSegment, audio: FixtureAudio) -> int:
    """How many of the fixture's frames to stream before waiting for the answer to a phrase
    that is followed by another one.

    The audio up to where the twin VAD ended the phrase, plus a margin (the session's own VAD
    streams can need a frame or two more than the twin), stopping short of the next phrase so
    the session cannot hear it early.
    """
    total = len(audio.frames)
    frame_s = audio.frame_s
    detected = segment.detected_s
    next_start = following.end_s - following.speech_s
    wanted = math.ceil((detected + PHRASE_MARGIN_S) / frame_s)
    floor = math.ceil((detected + 0.001) / frame_s) + 1
    cap = int((next_start - NEXT_PHRASE_GUARD_S) / frame_s)
    return min(total, max(floor, min(wanted, cap)))


def frames_past_end(segment: SpeechSegment, audio: FixtureAudio) -> int:
    """How many frames to stream for the last phrase: past where the VAD ends it by the same
    margin as `frames_for_phrase`, not the whole silence tail."""
    detected = segment.detected_s
    wanted = math.ceil((detected + PHRASE_MARGIN_S) / audio.frame_s)
    floor = math.ceil((detected + 0.001) / audio.frame_s) + 1
    return min(len(audio.frames), max(floor, wanted))


PHRASE_MARGIN_S = 0.25
"""Audio streamed past the twin's end of a phrase: covers the session's VADs lagging the twin
by a few frames (their resampling and windows line up differently now and then)."""

NEXT_PHRASE_GUARD_S = 0.05
"""Stop this far before the next phrase's speech: less than Silero's 50 ms minimum speech,
so the session cannot start hearing the next phrase while the agent answers this one."""
