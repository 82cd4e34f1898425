"""The transport a bot under test is built around: a microphone fed from fixtures, a speaker
that records.

`InProcessTransport` is a Pipecat ``BaseTransport`` like any other: ``transport.input()`` goes
first in the pipeline, ``transport.output()`` after the TTS, and it fires
``on_client_connected`` once the pipeline runs (where bots greet) and
``on_client_disconnected`` when the conversation closes. Nothing goes over a network.

- The input (`Microphone`) pushes what the adapter plays into it as ``InputAudioRawFrame``s,
  one 20 ms chunk at a time at the pace of the pipeline's clock, and silence between
  utterances, as a live microphone does: the VAD, the turn analyzer and a segmented STT all
  count audio, so they hear the same stream at any speed.
- The output (`Speaker`) takes the bot's audio as a sound card would: each chunk takes its
  length in the pipeline's time (a reply that took no time could never be interrupted), and is
  recorded instead of played.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable

from pipecat.frames.frames import (
    Frame,
    InputAudioRawFrame,
    LLMMessagesAppendFrame,
    LLMTextFrame,
    OutputAudioRawFrame,
    StartFrame,
    TTSTextFrame,
)
from pipecat.processors.frame_processor import FrameDirection, FrameProcessorSetup
from pipecat.transports.base_input import BaseInputTransport
from pipecat.transports.base_output import BaseOutputTransport
from pipecat.transports.base_transport import BaseTransport, TransportParams

__all__ = ["MIC_SAMPLE", "InProcessTransport", "Microphone", "Speaker"]

MIC_SAMPLE = "pytest_agent_eval.mic_sample"
"""The key of an input audio frame's ``metadata`` holding the microphone's stream sample at
the frame's end: where the frame lies on the microphone's clock, whatever a processor dropped
before the frame reached its reader."""

_GRID_SAMPLES = 2560
"""Each utterance starts at a multiple of this many samples into the stream: a whole number
of 20 ms chunks (320 samples at 16 kHz) and of Silero's 512-sample windows, so the VAD hears
each fixture cut into the same windows whatever was streamed before it."""


_VAD_WINDOW_S = 0.032
"""The VAD's window (Silero's: 512 samples at 16 kHz, 256 at 8 kHz), which the stream's
sample 0 starts: speech placed over a reply starts on one, as it does at every speed."""


class TransportListener:
    """What the adapter hears from the transport (all called on the pipeline's loop)."""

    def on_setup(self, setup: FrameProcessorSetup) -> None:
        """The pipeline set up the transport's input (its worker and clock are known)."""

    def on_audio_out(self, audio: bytes, sample_rate: int, channels: int) -> None:
        """The bot's audio reached the speaker."""

    def on_spoken(self, frame: Frame) -> None:
        """A text frame left the speaker (after its audio, when it is timed with it)."""


class Microphone(BaseInputTransport):
    """The transport's input: a live microphone playing what the adapter queues."""

    def __init__(self, transport: InProcessTransport, params: TransportParams) -> None:
        super().__init__(params, name="InProcessTransport#input")
        self._transport = transport
        self.started = asyncio.Event()
        self._live = asyncio.Event()
        self._queue: list[bytes] = []
        self._queued = 0
        self._drained: asyncio.Event | None = None
        self._feeder: asyncio.Task[None] | None = None
        self.pushed_samples = 0
        """Samples pushed since the pipeline started."""
        self.last_push_at: float | None = None
        """When the last chunk was due (the pipeline's clock, on the microphone's schedule):
        the stream had been heard up to `pushed_samples` then. The schedule, not the moment
        the push ran: a loop that ran late (a loaded CPU in real time) delays a push, not the
        stream's timeline, and speech placed from a late push would come early."""
        self.max_late_s = 0.0
        """The most any chunk was pushed after it was due since `reset_lateness` (pipeline
        seconds; always 0 on the virtual clock): how far a real-time run fell behind."""

    @property
    def chunk_samples(self) -> int:
        """Samples per chunk."""
        return self._transport.sample_rate * self._transport.chunk_ms // 1000

    async def setup(self, setup: FrameProcessorSetup) -> None:  # type: ignore[override]
        await super().setup(setup)
        self._transport.listener.on_setup(setup)

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        if self._feeder is None:
            self._feeder = self.create_task(self._feed(), name=f"{self}::feed")
        self.started.set()

    async def cleanup(self) -> None:
        if self._feeder is not None:
            await self.cancel_task(self._feeder)
            self._feeder = None
        await super().cleanup()  # type: ignore[no-untyped-call]

    # -- what the adapter does --------------------------------------------------------------

    def play(self, pcm: bytes, *, tail_s: float) -> tuple[int, int]:
        """Queue ``pcm`` (mono 16-bit at the transport's rate) after the audio queued so far,
        starting on the stream's grid, followed by ``tail_s`` of silence; returns the stream
        sample where it starts and where its audio ends."""
        rate = self._transport.sample_rate
        at = self.pushed_samples + self._queued
        gap = (-at) % _GRID_SAMPLES
        silence = b"\0\0" * gap
        tail = b"\0\0" * round(tail_s * rate)
        self._queue.extend([silence, pcm, tail])
        self._queued += gap + len(pcm) // 2 + len(tail) // 2
        start = at + gap
        return start, start + len(pcm) // 2

    def speak_at(self, pcm: bytes, at: float, *, tail_s: float) -> int:
        """Replace the silence still queued with ``pcm``, placed in the stream so that it is
        heard from time ``at`` (the pipeline's clock, now or later), followed by ``tail_s`` of
        silence: speech over the bot's reply. Returns the stream sample where ``pcm`` starts
        (`time_of` says when that is).

        The start is the first VAD window boundary (`_VAD_WINDOW_S`) at or after ``at``:
        where the speech falls in the VAD's windows decides in which window the VAD hears it
        start, and so where the reply is cut. Placed to the sample instead, that would follow
        the compute the reply took to start (in real time), one window either way."""
        rate = self._transport.sample_rate
        heard_at = self.last_push_at if self.last_push_at is not None else time.monotonic()
        start = self.pushed_samples + max(0, math.ceil((at - heard_at) * rate - 1e-6))
        window = max(1, round(_VAD_WINDOW_S * rate))
        start += (-start) % window
        gap = start - self.pushed_samples
        tail = b"\0\0" * round(tail_s * rate)
        self._queue = [b"\0\0" * gap, pcm, tail]
        self._queued = gap + len(pcm) // 2 + len(tail) // 2
        return start

    def reset_lateness(self) -> None:
        """Start measuring `max_late_s` afresh."""
        self.max_late_s = 0.0

    def time_of(self, sample: int) -> float:
        """When stream sample ``sample`` (pushed or still queued) is heard, on the pipeline's
        clock and the microphone's schedule."""
        rate = self._transport.sample_rate
        heard_at = self.last_push_at if self.last_push_at is not None else time.monotonic()
        return heard_at + (sample - self.pushed_samples) / rate

    async def drained(self) -> None:
        """Return once everything queued has been pushed."""
        while self._queued:
            self._drained = asyncio.Event()
            await self._drained.wait()

    @property
    def queued_samples(self) -> int:
        """Samples queued and not pushed yet."""
        return self._queued

    def live(self, on: bool) -> None:
        """Open (or close) the line: while open, the microphone pushes the queued audio and
        then silence, chunk by chunk; closed, it pushes nothing."""
        if on:
            self._live.set()
        else:
            self._live.clear()

    async def push_text(self, text: str) -> None:
        """Send a text turn as Pipecat's own clients do (RTVI ``send-text``): the user's
        message appended to the context, and the LLM run."""
        await self.push_frame(
            LLMMessagesAppendFrame(messages=[{"role": "user", "content": text}], run_llm=True)
        )

    # -- the microphone -----------------------------------------------------------------------

    def _take(self, samples: int) -> bytes:
        out = bytearray()
        want = samples * 2
        while self._queue and len(out) < want:
            head = self._queue[0]
            room = want - len(out)
            if len(head) <= room:
                out += head
                self._queue.pop(0)
            else:
                out += head[:room]
                self._queue[0] = head[room:]
        taken = len(out) // 2
        self._queued -= taken
        if len(out) < want:
            out += b"\0" * (want - len(out))
        if not self._queued and self._drained is not None:
            self._drained.set()
        return bytes(out)

    async def _feed(self) -> None:
        loop = asyncio.get_running_loop()
        rate = self._transport.sample_rate
        samples = self.chunk_samples
        chunk_s = samples / rate
        base: float | None = None
        count = 0
        while True:
            if not self._live.is_set():
                await self._live.wait()
                base = None
            if base is None:
                base, count = loop.time(), 0
            delay = base + count * chunk_s - loop.time()
            if delay > 0:
                await asyncio.sleep(delay)  # a microphone's pace, on the pipeline's clock
            if not self._live.is_set():
                continue
            due = base + count * chunk_s
            self.max_late_s = max(self.max_late_s, loop.time() - due)
            audio = self._take(samples)
            # Counted as it leaves the queue, before the push yields: speech placed while the
            # push is under way (`speak_at`) must count this chunk as already in the stream.
            self.pushed_samples += samples
            self.last_push_at = due
            count += 1
            frame = InputAudioRawFrame(audio, rate, 1)
            frame.metadata[MIC_SAMPLE] = self.pushed_samples
            await self.push_audio_frame(frame)


class Speaker(BaseOutputTransport):
    """The transport's output: a sound card that records instead of playing."""

    def __init__(self, transport: InProcessTransport, params: TransportParams) -> None:
        super().__init__(params, name="InProcessTransport#output")
        self._transport = transport
        self._next_write: float | None = None
        self.started = asyncio.Event()

    async def start(self, frame: StartFrame) -> None:
        await super().start(frame)
        await self.set_transport_ready(frame)
        self.started.set()

    async def write_audio_frame(self, frame: OutputAudioRawFrame) -> bool:
        self._transport.listener.on_audio_out(frame.audio, frame.sample_rate, frame.num_channels)
        # As a device does: a chunk takes its length to play. (The same pacing as Pipecat's
        # WebSocket transports, on the pipeline's clock.)
        seconds = len(frame.audio) / (2 * max(1, frame.num_channels) * frame.sample_rate)
        now = time.monotonic()
        if self._next_write is None or self._next_write <= now:
            self._next_write = now + seconds
        else:
            await asyncio.sleep(self._next_write - now)
            self._next_write += seconds
        return True

    async def push_frame(
        self, frame: Frame, direction: FrameDirection = FrameDirection.DOWNSTREAM
    ) -> None:
        if direction == FrameDirection.DOWNSTREAM and isinstance(
            frame, TTSTextFrame | LLMTextFrame
        ):
            self._transport.listener.on_spoken(frame)
        await super().push_frame(frame, direction)


class InProcessTransport(BaseTransport):
    """A Pipecat transport that connects a bot to `PipecatAdapter` in-process.

    Build the bot's pipeline around ``transport.input()`` and ``transport.output()`` as with
    any Pipecat transport. Events: ``on_client_connected(transport, client)`` once the
    pipeline has started (greet there), ``on_client_disconnected(transport, client)`` when the
    conversation ends.

    Args:
        sample_rate: Rate of the microphone's audio (fixtures are resampled to it).
        chunk_ms: Length of each microphone chunk.
        audio_out_sample_rate: Rate of the speaker (None: the pipeline's output rate).
    """

    def __init__(
        self,
        *,
        sample_rate: int = 16000,
        chunk_ms: int = 20,
        audio_out_sample_rate: int | None = None,
        listener: TransportListener | None = None,
    ) -> None:
        super().__init__(name="InProcessTransport")
        self.sample_rate = sample_rate
        self.chunk_ms = chunk_ms
        self.listener = listener or TransportListener()
        self.client = {"id": "pytest-agent-eval"}
        """What ``on_client_connected`` is given as the client."""
        self.commit_turn: Callable[[], Awaitable[None]] | None = None
        """Ends the user's turn at once (attribution's turn-taking counterfactual set it,
        `_commit_twin`); None: the bot's own user-turn stop strategies end it."""
        self._params = TransportParams(
            audio_in_enabled=True,
            audio_in_sample_rate=sample_rate,
            audio_out_enabled=True,
            audio_out_sample_rate=audio_out_sample_rate,
            audio_out_end_silence_secs=0,
        )
        self._input = Microphone(self, self._params)
        self._output = Speaker(self, self._params)
        self._register_event_handler("on_client_connected")
        self._register_event_handler("on_client_disconnected")

    def input(self) -> Microphone:
        return self._input

    def output(self) -> Speaker:
        return self._output

    async def connect_client(self) -> None:
        """Fire ``on_client_connected`` (the pipeline is running)."""
        await self._call_event_handler("on_client_connected", self.client)

    async def disconnect_client(self) -> None:
        """Fire ``on_client_disconnected``."""
        await self._call_event_handler("on_client_disconnected", self.client)
