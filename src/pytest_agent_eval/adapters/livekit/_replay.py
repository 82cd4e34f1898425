"""The session's VAD decisions for a fixture it has heard before, handed back, not recomputed.

A fixture's VAD decisions are a function of its frames and the VAD's settings once the stream
starts clean (see `_segments`, whose checks would catch a VAD where they are not; Silero's
probabilities are bit-exact too when the audio needs no resampling, and otherwise move by
LiveKit's resampler dither, see docs/livekit.md). The adapter already runs the VAD once over
each fixture per process: the scan that predicts where the session will cut it. `VADTrace`
keeps every event of that pass. At max speed `VADReplay`
stands in front of the session's own Silero stream: each frame the session gives the stream is
checked to be the fixture's next one, and the events Silero produced once that much audio was
in go to the stream's consumers (the recognition, its turn detection and interruptions, the
STT driven by the segments, the VAD metrics) in the same order, as soon as the audio they
describe has arrived, as an infinitely fast VAD would deliver them. So a fixture costs one
Silero pass per process, however many runs hear it.

The stream computes as before where that is not known to be the same: at a real-time speed
(latency then counts the VAD's own time), in barge-in turns, with
``LiveKitAdapter(vad_replay=False)``, for a VAD other than Silero's own class (a subclass may
change what ``flush`` or ``push_frame`` do), for a stream that ever took audio the replay did
not serve (it stays live for good), and after a handoff in the middle of a fixture. A frame
other than the fixture's next one hands the stream the fixture's audio so far, and it computes
from there (see `VADReplay`), as it does after LiveKit resets it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from livekit.agents import vad as lk_vad

from ._audio import FixtureAudio
from ._compat import (
    divert_vad_stream_input,
    restore_vad_stream_input,
    skip_vad_stream_events,
    vad_options,
    vad_stream_emitter,
    vad_stream_open_check,
    vad_stream_unfed,
    vad_stream_vad,
)

__all__ = [
    "VADReplay",
    "VADTrace",
    "is_replayable",
    "record_events",
    "replays_caught_up",
    "replays_served",
]

_served = 0
_caught_up = 0


def replays_served() -> int:
    """How many fixtures a `VADReplay` has started serving in this process."""
    return _served


def replays_caught_up() -> int:
    """How many of them handed over to the stream mid-fixture (see `VADReplay`)."""
    return _caught_up


def is_replayable(vad: Any) -> bool:
    """Silero's own VAD class: deterministic, reset by ``flush()``, known to count samples."""
    kind = type(vad)
    return kind.__module__ == "livekit.plugins.silero.vad" and kind.__qualname__ == "VAD"


async def record_events(vad: lk_vad.VAD, audio: FixtureAudio, start: int = 0) -> list[Any]:
    """Every event a fresh stream of ``vad`` produces over ``audio``'s frames from ``start``.

    The stream is given all the frames and its input is ended, so it works through every one
    of them before its events stop.
    """
    stream = vad.stream()
    try:
        for frame in audio.frames[start:]:
            stream.push_frame(frame)
        stream.end_input()
        return [event async for event in stream]
    finally:
        await stream.aclose()


@dataclass(frozen=True, slots=True)
class VADTrace:
    """What a clean stream of one VAD, with given settings, said about one fixture."""

    settings: tuple[Any, ...]
    """The VAD's settings when it was recorded (`vad_options`)."""
    frames: tuple[Any, ...]
    """The fixture's frames, as the session will give them."""
    events: tuple[Any, ...]
    """Every event, in order."""
    due: tuple[int, ...]
    """For each event, how many frames must have been given before it comes."""

    @classmethod
    def of(cls, settings: tuple[Any, ...], audio: FixtureAudio, events: list[Any]) -> VADTrace:
        """The trace of ``events`` (a clean stream's over all of ``audio``'s frames).

        An event comes once the audio up to its time (the end of its VAD window) is in, plus
        one frame for the resampler's delay: never before the stream could have computed it.
        """
        count = len(audio.frames)
        due = tuple(
            min(count, math.ceil(float(event.timestamp) / audio.frame_s - 1e-6) + 1)
            for event in events
        )
        return cls(settings, audio.frames, tuple(events), due)


class VADReplay:
    """Serves one session VAD stream the events of fixtures recorded in a `VADTrace`.

    A frame other than the fixture's next one (something in the session gave the VAD audio
    of its own), or a change of the VAD's settings, ends the replay for good: the stream is
    given the frames served so far and computes from there, its events for audio already
    served held back, so its consumers see one sequence (exactly what a computing stream would
    have said when the audio reaches Silero at 16 kHz; at other rates a decision right at a
    threshold may move by a window at the hand-over, see docs/livekit.md). A ``flush()`` of
    the stream (LiveKit resets it when its STT ends a turn) ends the replay too and goes
    through: after it the stream starts clean, as it would have.

    Args:
        stream: The session's Silero VAD stream; every frame and flush later given to it
            come here.
    """

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._vad = vad_stream_vad(stream)
        self._check_open = vad_stream_open_check(stream)
        self._emit = vad_stream_emitter(stream)
        self._trace: VADTrace | None = None
        self._given = 0
        self._next = 0
        self.live = False
        """The stream took audio the replay did not serve: it computes from now on."""
        self._own = divert_vad_stream_input(stream, self._push, self._flush)

    @staticmethod
    def attachable(stream: Any) -> bool:
        """True for a stream of Silero's own VAD that never took a frame and whose input
        methods are its class's."""
        if stream is None or not is_replayable(vad_stream_vad(stream)):
            return False
        patched = {"push_frame", "flush"} & set(vars(stream))
        return not patched and vad_stream_unfed(stream)

    @property
    def serving(self) -> bool:
        """A fixture is being served."""
        return self._trace is not None

    def serve(self, trace: VADTrace) -> bool:
        """Serve ``trace`` from the next frame on (the stream was just flushed); False, and
        the stream computes instead, when it has taken other audio or its VAD's settings are
        not the trace's."""
        global _served
        self.stop()
        if self.live or vad_options(self._vad) != trace.settings:
            return False
        self._trace, self._given, self._next = trace, 0, 0
        _served += 1
        return True

    def stop(self) -> None:
        """Frames from now on go to the stream itself."""
        self._trace = None

    def release(self) -> None:
        """Give the stream its own methods back (the conversation is over: what the session
        feeds it while closing decides nothing)."""
        self._trace = None
        restore_vad_stream_input(self.stream)

    def _flush(self) -> None:
        if self._trace is not None:
            self._trace = None
            self.live = True
        self._own.flush()

    def _push(self, frame: Any) -> None:
        trace = self._trace
        if trace is None:
            self.live = True
            self._own.push_frame(frame)
            return
        self._check_open()
        index = self._given
        if (
            index >= len(trace.frames)
            or bytes(frame.data) != bytes(trace.frames[index].data)
            or vad_options(self._vad) != trace.settings
        ):
            self._catch_up(trace, frame)
            return
        self._given = index + 1
        events, due = trace.events, trace.due
        while self._next < len(events) and due[self._next] <= self._given:
            event = events[self._next]
            self._emit(dataclasses.replace(event, frames=list(event.frames)))
            self._next += 1

    def _catch_up(self, trace: VADTrace, frame: Any) -> None:
        """Hand the stream (clean since the fixture's flush) the frames served so far and
        ``frame``; it computes from now on, its events for audio already served held back."""
        global _caught_up
        self._trace = None
        self.live = True
        _caught_up += 1
        served = trace.events[self._next - 1].samples_index if self._next else -1
        skip_vad_stream_events(self.stream, served)
        for given in trace.frames[: self._given]:
            self._own.push_frame(given)
        self._own.push_frame(frame)
