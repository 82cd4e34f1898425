"""The caller's microphone in a room: the turn's audio in 20 ms frames at real-time pace, and
silence whenever nothing is said (the agent's VAD hears a caller who pauses, not one who
vanishes)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import NamedTuple

from livekit import rtc

from ._observer import AUDIO_RATE

__all__ = ["FRAME_MS", "REAL_TIME", "Microphone", "SpokenSpan"]

FRAME_MS = 20
"""Length of each microphone frame sent."""

_MIC_LEAD_S = 0.5
"""How far ahead of real time the microphone keeps its queue. The track sends silence when its
queue runs dry, so a caller process held up for longer than this (a busy CI machine) would cut
a gap into the speech, which the agent hears as the end of a phrase. Latencies are unaffected:
they count from when the last frame leaves the queue, not from when it was handed over."""

REAL_TIME = 1.0
"""The only streaming speed of room mode: a LiveKit server carries the audio as it is spoken."""


class SpokenSpan(NamedTuple):
    """When what the caller said left it: its first sample and its last (``perf_counter``)."""

    start: float
    end: float


class Microphone:
    """The caller's microphone: 20 ms frames at real-time pace, silence when nothing is said."""

    def __init__(self, source: rtc.AudioSource) -> None:
        self._source = source
        self._per_frame = AUDIO_RATE * FRAME_MS // 1000
        self._silence = rtc.AudioFrame(
            data=b"\0\0" * self._per_frame,
            sample_rate=AUDIO_RATE,
            num_channels=1,
            samples_per_channel=self._per_frame,
        )
        self._queue: asyncio.Queue[tuple[tuple[rtc.AudioFrame, ...], asyncio.Future[SpokenSpan]]]
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="agent-eval-microphone")

    def say(self, frames: tuple[rtc.AudioFrame, ...]) -> asyncio.Future[SpokenSpan]:
        """Queue ``frames``; the future gets when their first and last sample leave the
        caller."""
        done: asyncio.Future[SpokenSpan] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((frames, done))
        return done

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        frame_s = FRAME_MS / 1000
        start = loop.time()
        sent = 0
        while True:
            if self._queue.empty():
                frames: tuple[rtc.AudioFrame, ...] = (self._silence,)
                done = None
            else:
                frames, done = self._queue.get_nowait()
            first: float | None = None
            for frame in frames:
                due = start + sent * frame_s - _MIC_LEAD_S
                if (delay := due - loop.time()) > 0:
                    await asyncio.sleep(delay)  # pacing a microphone, not waiting for an event
                elif delay < -1.0:
                    # The loop fell far behind (a long pause); restart the clock rather than
                    # bursting a second of audio at once.
                    start, sent = loop.time() + _MIC_LEAD_S, 0
                if first is None and done is not None:
                    # It leaves once what is queued ahead of it has.
                    first = time.perf_counter() + self._source.queued_duration
                await self._source.capture_frame(frame)
                sent += 1
            if done is not None and not done.done():
                last = time.perf_counter() + self._source.queued_duration
                done.set_result(SpokenSpan(last if first is None else first, last))

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        while not self._queue.empty():
            _frames, done = self._queue.get_nowait()
            done.cancel()
