"""One conversation's pipeline, on the pipeline's own thread: built, started, fed turns, ended.

Everything in this module runs on the pipeline's event loop (`_clock.PipelineThread`);
`PipecatConversation` hands it coroutines from the runner's loop. The turn waits here are in
the pipeline's time (virtual at max speed); the conversation bounds them on the wall as well.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pipecat.frames.frames import EndFrame
from pipecat.pipeline.base_pipeline import BasePipeline
from pipecat.pipeline.pipeline import Pipeline
from pipecat.pipeline.worker import PipelineParams, PipelineWorker
from pipecat.processors.frame_processor import FrameProcessor
from pipecat.runner.types import RunnerArguments
from pipecat.workers.runner import WorkerRunner

from ...errors import AdapterError
from ...voice._clock import PipelineClock
from ...voice._fixture_pcm import FixturePCM
from ...voice._sidecar import TimedWord
from ._compat import forget_flows, processors_of, watch_flows
from ._record import Recorder, TurnLog
from ._services import FixtureTextSTTService
from ._transport import InProcessTransport

__all__ = [
    "BargeInRun",
    "BotSession",
    "LoopBehindError",
    "SessionOptions",
    "TurnTimeout",
    "call_bot",
]

_END_S = 5.0
"""How long the pipeline gets to end by itself (an EndFrame) before it is cancelled."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionOptions:
    """What a session needs from its adapter."""

    build: Callable[[InProcessTransport], Any]
    """Calls the user's factory (with the run's info if it wants it)."""
    entrypoint: bool
    """The factory is the bot's own ``run_bot(transport, runner_args)``: it runs the pipeline
    itself."""
    sample_rate: int
    chunk_ms: int
    tail_silence_s: float
    timeout_s: float
    live_mic: bool
    """Keep the microphone streaming (silence between utterances) during every turn."""
    own: tuple[str, ...] = ()
    """The installed packages the bot came from (`adapters._crash.agent_packages`): their
    frames are the bot's own code when an error frame's exception passed through them."""
    prepare: Callable[[Any], None] | None = None
    """Called with the running pipeline once it started, before ``on_client_connected``
    (the turn-taking runner scripts the bot's services there)."""


class TurnTimeout(AdapterError):
    """A wait ran past ``timeout_s`` of the pipeline's time."""


class LoopBehindError(AdapterError):
    """What a wait waited for had happened, but the pipeline's loop never went idle to confirm
    it within ``timeout_s``: in real time, a loop that runs behind the audio the whole time
    (the process cannot keep pace at its load). Nothing can be said of the bot then."""


class BotSession:
    """The pipeline of one conversation (see the module docstring)."""

    def __init__(self, options: SessionOptions, clock: PipelineClock) -> None:
        self.options = options
        self.clock = clock
        self.recorder = Recorder(own=options.own)
        self.recorder.timeline_clock = "virtual" if clock.rate is None else "real"
        self.transport = InProcessTransport(
            sample_rate=options.sample_rate, chunk_ms=options.chunk_ms, listener=self.recorder
        )
        self.worker: Any = None
        self._runner_task: asyncio.Task[Any] | None = None
        self._waiter: tuple[Callable[[], bool], asyncio.Future[None]] | None = None
        self.recorder.changed = self._poke
        self.origin = time.monotonic()
        self.closed = False
        clock.add_idle_hook(self._on_idle)

    # -- waiting, decided when the loop is idle ---------------------------------------------------

    def _poke(self) -> None:
        """Something was recorded: an error ends a wait at once."""
        waiter = self._waiter
        if waiter is not None and self.recorder.log.errors and not waiter[1].done():
            waiter[1].set_result(None)

    def _on_idle(self) -> bool:
        waiter = self._waiter
        if waiter is None or waiter[1].done():
            return False
        done, future = waiter
        if done():
            self.clock.hold()  # nothing moves until the next turn
            future.set_result(None)
            return True
        return False

    async def _until(
        self,
        done: Callable[[], bool],
        what: Callable[[], str],
    ) -> None:
        """Wait until ``done()`` holds at an idle moment, or an error is recorded; bounded by
        ``timeout_s`` of the pipeline's time.

        Raises:
            TurnTimeout: With ``what()``, the thing still pending.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        self._waiter = (done, future)
        runner = self._runner_task
        ended = None
        if runner is not None:
            # The pipeline ending (the bot hung up, or crashed) ends the wait too.
            ended = asyncio.ensure_future(asyncio.shield(runner))
            ended.add_done_callback(lambda _: None if future.done() else future.set_result(None))
        try:
            async with asyncio.timeout(self.options.timeout_s):
                await future
        except TimeoutError:
            if done():
                raise LoopBehindError(
                    f"no end within timeout_s={self.options.timeout_s:g} s: what it waited for "
                    "had happened, but the pipeline's loop never went idle to confirm it, "
                    "running behind the audio's schedule all that time (the process could not "
                    "keep pace with real time at its load), so the bot could not be evaluated; "
                    "run at speed=0 (the virtual clock), or fewer conversations at once"
                ) from None
            raise TurnTimeout(what()) from None
        finally:
            self._waiter = None
            if ended is not None and not ended.done():
                ended.cancel()
        if runner is not None and runner.done() and not done() and not self._hung_up(runner):
            raise self._ended(f"while waiting for {what()}")

    # -- start ------------------------------------------------------------------------------------

    async def start(self) -> TurnLog:
        """Build and start the pipeline, fire ``on_client_connected``, and return what the bot
        said and did before the user's first turn.

        Raises:
            AdapterError: The factory failed or returned something else than a pipeline, the
                pipeline does not use the transport, or it did not start within timeout_s.
        """
        self.clock.release()
        if self.options.entrypoint:
            self._runner_task = asyncio.ensure_future(self._run_entrypoint())
        else:
            worker = await self._build_worker()
            self.worker = worker
            runner = WorkerRunner(handle_sigint=False)
            await runner.add_workers(worker)
            self._runner_task = asyncio.ensure_future(runner.run())
        await self._wait_started()
        if self.options.prepare is not None:
            self.options.prepare(self.worker.pipeline)
        watch_flows(self.recorder.worker, self.recorder.on_node)
        log = self.recorder.begin(None, "greeting")
        self.transport.input().live(self.options.live_mic)
        await self.transport.connect_client()
        await self._until(
            lambda: self.recorder.pending() is None,
            lambda: f"the greeting (on_client_connected): waiting for {self.recorder.pending()}",
        )
        self.transport.input().live(False)
        return log

    async def _run_entrypoint(self) -> None:
        await self.options.build(self.transport)

    async def _build_worker(self) -> Any:
        try:
            made = self.options.build(self.transport)
            if inspect.isawaitable(made):
                made = await made
        except AdapterError:
            raise
        except Exception as exc:
            raise AdapterError(
                f"the bot factory raised {type(exc).__name__}: {exc}" + _key_hint(exc)
            ) from exc
        if isinstance(made, PipelineWorker):
            worker = made
        elif isinstance(made, BasePipeline):
            worker = _worker(made)
        elif isinstance(made, list | tuple) and all(isinstance(p, FrameProcessor) for p in made):
            worker = _worker(Pipeline(list(made)))
        else:
            raise AdapterError(
                "the bot factory must return a Pipeline, a list of processors or a "
                f"PipelineWorker built around the transport it is given; it returned "
                f"{type(made).__name__} {made!r:.80}"
            )
        self._check_transport(worker.pipeline)
        return worker

    def _check_transport(self, pipeline: Any) -> None:
        inside = list(processors_of(pipeline))
        missing = [
            name
            for name, processor in (
                ("transport.input()", self.transport.input()),
                ("transport.output()", self.transport.output()),
            )
            if not any(p is processor for p in inside)
        ]
        if missing:
            raise AdapterError(
                f"the pipeline the bot factory built does not contain {' and '.join(missing)} "
                "of the transport it was given, so the adapter can neither speak to the bot nor "
                "hear it; build the pipeline as Pipeline([transport.input(), stt, "
                "user_aggregator, llm, tts, transport.output(), assistant_aggregator]) with the "
                "transport passed to the factory"
            )

    async def _wait_started(self) -> None:
        inp, out = self.transport.input(), self.transport.output()
        started = asyncio.ensure_future(_both(inp.started.wait(), out.started.wait()))
        runner = self._runner_task
        assert runner is not None
        try:
            async with asyncio.timeout(self.options.timeout_s):
                await asyncio.wait({started, runner}, return_when=asyncio.FIRST_COMPLETED)
        except TimeoutError:
            pass
        if started.done():
            await self._pipeline_started()
            return
        started.cancel()
        if runner.done():
            error = runner.exception() if not runner.cancelled() else None
            if error is not None:
                raise AdapterError(
                    f"the bot raised {type(error).__name__}: {error} before its pipeline "
                    f"started{_key_hint(error)}"
                ) from error
            raise AdapterError(
                "the bot returned before starting a pipeline with the transport it was given; "
                "run_bot(transport, runner_args) must build its pipeline around "
                "transport.input() and transport.output() and run it"
            )
        if self.recorder.worker is None or not inp.started.is_set():
            raise AdapterError(
                f"no pipeline started with the transport's input within timeout_s="
                f"{self.options.timeout_s:g} s: the bot's pipeline must begin with "
                "transport.input() of the transport it is given"
            )
        raise AdapterError(
            f"the pipeline did not start within timeout_s={self.options.timeout_s:g} s: "
            "transport.output() never received the StartFrame (is it in the pipeline?)"
        )

    async def _pipeline_started(self) -> None:
        """Give the StartFrame time to reach the end of the pipeline (the processors after
        the output) before anything else is sent."""
        worker = self.recorder.worker
        if worker is None:
            raise AdapterError(
                "the transport's input was started outside a PipelineWorker, so the adapter "
                "cannot observe the pipeline"
            )
        if self.options.entrypoint:
            self.worker = worker
            self._check_transport(worker.pipeline)
        await self._until(lambda: True, lambda: "the pipeline to start")
        self.clock.release()

    # -- turns ------------------------------------------------------------------------------------

    def _hung_up(self, runner: asyncio.Task[Any]) -> bool:
        """Whether the pipeline ended because the bot hung up (and did not fail)."""
        failed = not runner.cancelled() and runner.exception() is not None
        return bool(self.recorder.hang_ups.seen) and not failed

    def _ended(self, when: str) -> AdapterError:
        """The error for a pipeline that is no longer running."""
        runner = self._runner_task
        error = None
        if runner is not None and runner.done() and not runner.cancelled():
            error = runner.exception()
        if error is not None:
            return AdapterError(f"the pipeline failed {when}: {type(error).__name__}: {error}")
        hung_up = self.recorder.hang_ups.describe()
        if hung_up is not None:
            return AdapterError(
                f"the pipeline ended {when}: {hung_up}, so it can take no further turn; end "
                "the transcript where the bot hangs up"
            )
        return AdapterError(
            f"the pipeline ended {when}: the bot ended the conversation (an EndFrame, an "
            "EndWorkerFrame or its runner cancelled), so it can take no further turn; end "
            "the transcript where the bot hangs up"
        )

    def _check_running(self) -> None:
        """Before each turn: the pipeline still runs (and a Flows package the bot imported
        since the last turn is watched too)."""
        runner = self._runner_task
        if runner is not None and runner.done():
            raise self._ended("before this turn")
        if self.recorder.worker is not None:
            watch_flows(self.recorder.worker, self.recorder.on_node)

    async def audio_turn(self, index: int, fixture: FixturePCM, text: str) -> TurnLog:
        """Stream ``fixture`` (the user saying ``text``) and return the turn once the bot is
        done with it.

        Raises:
            TurnTimeout: The bot was not done within timeout_s; says what was pending.
            AudioFixtureError: A `FixtureTextSTTService` found nothing proving the fixture's
                text.
        """
        self._check_running()
        log = self.recorder.begin(index, "audio")
        mic = self.transport.input()
        start, end = mic.play(fixture.pcm, tail_s=self.options.tail_silence_s)
        rate = self.options.sample_rate
        for stt in self.fixture_stts():
            stt.expect_fixture(fixture.path, text, start / rate)
        self.clock.release()
        mic.live(True)
        commit = self.transport.commit_turn
        try:
            if commit is not None:
                # Manual turn detection (attribution's turn-taking counterfactual): the whole
                # fixture taken in, then the turn ends, where the fixture does.
                await self._until(
                    lambda: mic.queued_samples == 0 and not self.recorder.vad_speaking,
                    self._pending_audio,
                )
                self.clock.release()
                await commit()
            await self._until(
                lambda: mic.queued_samples == 0 and self.recorder.pending() is None,
                self._pending_audio,
            )
        finally:
            mic.live(False)
        self._streamed(log, start, end)
        return log

    async def far_end_turn(
        self, index: int, clip: FixturePCM, words: Sequence[TimedWord], settle_s: float
    ) -> TurnLog:
        """Stream a far end's ``clip`` (saying ``words``, or none: a beep, a ring) and then
        ``settle_s`` of the line's silence, and return the turn once the bot is done with
        whatever it began (or began nothing) by then (`voice._far_end_audio`). A turn without
        words is timed from its sound: a reply begun while it played from its start, one after
        it from its end.

        Raises:
            TurnTimeout: The bot was not done within timeout_s; says what was pending.
        """
        self._check_running()
        log = self.recorder.begin(index, "audio")
        log.far_end = True
        mic = self.transport.input()
        start, end = mic.play(clip.pcm, tail_s=settle_s)
        for stt in self.fixture_stts():
            stt.expect_words(words, start / self.options.sample_rate)
        self.clock.release()
        mic.live(True)
        try:
            await self._until(
                lambda: mic.queued_samples == 0 and self.recorder.pending() is None,
                self._pending_audio,
            )
        finally:
            mic.live(False)
        self._streamed(log, start, end)
        if not words:
            log.speech_ends = sorted([*log.speech_ends, mic.time_of(start), mic.time_of(end)])
        return log

    def _streamed(self, log: TurnLog, start: int, end: int) -> None:
        """Draw on ``log``'s timeline that its fixture streamed from sample ``start`` to
        ``end`` (pushed by now: the microphone's schedule says when)."""
        mic = self.transport.input()
        if log.timeline is not None:
            log.timeline.stream(mic.time_of(start), mic.time_of(end))

    def _pending_audio(self) -> str:
        if self.transport.input().queued_samples:
            return "the fixture to finish streaming"
        return self.recorder.pending() or "nothing (the bot is done)"

    async def text_turn(self, index: int, text: str) -> TurnLog:
        """Send ``text`` as Pipecat delivers a text turn and return the turn once the bot is
        done with it.

        Raises:
            TurnTimeout: The bot was not done within timeout_s; says what was pending.
        """
        self._check_running()
        log = self.recorder.begin(index, "text")
        self.clock.release()
        mic = self.transport.input()
        mic.live(self.options.live_mic)
        log.sent_at = self.recorder.now()
        await mic.push_text(text)
        try:
            await self._until(
                lambda: self.recorder.pending() is None,
                lambda: self.recorder.pending() or "nothing",
            )
        finally:
            mic.live(False)
        return log

    async def keys_turn(self, index: int, press: Callable[[], Awaitable[None]]) -> TurnLog:
        """A turn of keys alone: ``press`` them and return the turn once the bot answered them
        and is done, as a text turn waits for the bot's answer to its text (an answer begun
        while the keys were still being pressed counts).

        Raises:
            TurnTimeout: The bot was not done within timeout_s; says what was pending.
        """
        self._check_running()
        log = self.recorder.begin(index, "keys")
        self.clock.release()
        log.sent_at = self.recorder.now()
        await press()
        log.keys_at = [log.sent_at, self.recorder.now()]
        await self.until_done()
        return log

    async def wait_until(self, done: Callable[[], bool], what: str) -> None:
        """Return once ``done()`` holds at an idle moment of the pipeline.

        Raises:
            TurnTimeout: Not within timeout_s of the pipeline's time; names ``what``.
        """
        self.clock.release()
        await self._until(done, lambda: what)

    async def until_done(self) -> None:
        """Return once the bot is done (at an idle moment of the pipeline), as a turn does.

        Raises:
            TurnTimeout: The bot was not done within timeout_s; says what was pending.
        """
        await self._until(
            lambda: self.recorder.pending() is None, lambda: self.recorder.pending() or "nothing"
        )

    async def barge_in(
        self,
        index: int,
        first: FixturePCM | str,
        first_text: str,
        interrupting: FixturePCM,
        interrupting_text: str,
        *,
        after_s: float | None,
        at_word: int | None,
    ) -> BargeInRun:
        """Turn ``index`` (audio when ``first`` is a fixture, else text), interrupted by turn
        ``index + 1``: its speech starts ``after_s`` into the reply's audio, or as word
        ``at_word`` of the reply leaves the speaker.

        Returns the two turns' logs and what happened; when the barge-in cannot be tested
        (the bot did not speak, its reply ended first, ...) turn ``index`` runs to its end,
        ``untested`` says why, and turn ``index + 1`` has not started.
        """
        self._check_running()
        recorder, mic = self.recorder, self.transport.input()
        log = recorder.begin(index, "audio" if isinstance(first, FixturePCM) else "text")
        self.clock.release()
        mic.live(True)
        if isinstance(first, FixturePCM):
            start, end = mic.play(first.pcm, tail_s=self.options.tail_silence_s)
            first_span = (start, end)
            for stt in self.fixture_stts():
                stt.expect_fixture(first.path, first_text, start / self.options.sample_rate)
        else:
            first_span = None
            log.sent_at = recorder.now()
            await mic.push_text(first)
        run = BargeInRun(first=log)

        def playing() -> bool:
            return recorder.bot_speaking and log.first_audio_at is not None

        await self._until(
            lambda: (mic.queued_samples == 0 and playing()) or recorder.pending() is None,
            lambda: (
                f"the bot's reply to turn {index + 1} to start playing "
                f"({recorder.pending() or 'the bot is done'})"
            ),
        )
        self.clock.release()
        if not playing():
            run.untested = (
                f"the bot did not speak in reply to turn {index + 1}, so there was nothing to "
                "interrupt"
            )
            return await self._finish_untested(run)
        reply_start = log.first_audio_at
        assert reply_start is not None
        mic.reset_lateness()  # how far real time falls behind, from here to the cut
        loop = asyncio.get_running_loop()
        onset = _onset_samples(interrupting)
        rate = self.options.sample_rate
        if at_word is not None:
            due_what = f"at word {at_word} of the reply"
            await self._until(
                lambda: _words(log) >= at_word or not recorder.bot_speaking,
                lambda: f"word {at_word} of the bot's reply to be spoken",
            )
            self.clock.release()
            if _words(log) < at_word:
                run.untested = (
                    f"the bot's reply ended after {_words(log)} word(s), before word {at_word} "
                    "was spoken; interrupt earlier or make the reply longer"
                )
                return await self._finish_untested(run)
            due = loop.time()
        else:
            assert after_s is not None
            due_what = f"{after_s * 1000:g} ms into the reply"
            due = reply_start + after_s
        # The interrupting speech is placed in the stream at `due` (on the VAD's window grid,
        # so the VAD hears it start in the same window at every speed); the reply must still
        # be playing when it comes.
        start = mic.speak_at(interrupting.pcm[onset * 2 :], due, tail_s=self.options.tail_silence_s)
        due = mic.time_of(start)  # on the VAD's window grid, at or just after
        for stt in self.fixture_stts():
            stt.expect_fixture(interrupting.path, interrupting_text, (start - onset) / rate)
        # Turn index ends, and turn index + 1 begins, at `due` itself: a callback the loop runs
        # when its clock gets there, not the first idle moment after it. A loaded loop in real
        # time may have no idle moment for seconds, while the interrupting speech is heard and
        # answered: a split made then would give turn index + 1 a log that missed its own
        # speech (and wait for it forever), or find the reply over and call the barge-in
        # untested. On the virtual clock the two are the same moment.
        came: list[bool] = []

        def at_due() -> None:
            came.append(True)
            if recorder.bot_speaking:
                run.second = recorder.begin(index + 1, "audio")
                recorder.carry_spoken_to(log)

        timer = loop.call_at(loop.time() + max(0.0, due - recorder.now()), at_due)
        try:
            await self._until(
                lambda: bool(came) or not recorder.bot_speaking,
                lambda: f"the interruption {due_what}",
            )
            timer.cancel()  # now, not in `finally`: an untested barge-in waits on below
            self.clock.release()
            if run.second is None:
                # The reply ended before `due` (seen at once when the loop had a moment, else at
                # `due`): when its last stop was recorded.
                ended = log.bot_stopped[-1] if log.bot_stopped else recorder.now()
                played = ended - reply_start
                run.untested = (
                    f"the bot's reply ended after {played:.2f} s, before the interruption was due "
                    f"({due_what}); interrupt earlier or make the reply longer"
                )
                mic.speak_at(b"", due, tail_s=0.0)  # the interrupting speech is not said
                for stt in self.fixture_stts():
                    stt.forget_fixtures()
                return await self._finish_untested(run)
            # The interrupting speech starts now: turn index ends here, turn index + 1 begins.
            run.due_at = due
            run.reply_position_s = due - reply_start
            following = run.second
            await self._until(
                lambda: mic.queued_samples == 0 and recorder.pending() is None,
                self._pending_audio,
            )
            mic.live(False)
            run.behind_s = mic.max_late_s
            if first_span is not None:
                self._streamed(log, *first_span)
            self._streamed(following, start, start + len(interrupting.pcm) // 2 - onset)
            return run
        finally:
            timer.cancel()
            recorder.carry_spoken_to(None)  # also when the turn timed out or the bot crashed

    async def _finish_untested(self, run: BargeInRun) -> BargeInRun:
        mic = self.transport.input()
        await self._until(
            lambda: mic.queued_samples == 0 and self.recorder.pending() is None,
            self._pending_audio,
        )
        mic.live(False)
        return run

    def fixture_stts(self, *, refusing: bool = False) -> list[FixtureTextSTTService]:
        """The pipeline's `FixtureTextSTTService`s; with ``refusing``, only those that must
        refuse audio conditions (not attribution's stand-in, which hears through them)."""
        from ._hearing_twin import refuses_conditions

        worker = self.worker or self.recorder.worker
        if worker is None:
            return []
        found = [p for p in processors_of(worker.pipeline) if isinstance(p, FixtureTextSTTService)]
        return [p for p in found if refuses_conditions(p)] if refusing else found

    def has_tts(self) -> bool:
        """True when the pipeline has a TTS service (the bot speaks audio)."""
        from pipecat.services.tts_service import TTSService

        worker = self.worker or self.recorder.worker
        return worker is not None and any(
            isinstance(p, TTSService) for p in processors_of(worker.pipeline)
        )

    # -- end --------------------------------------------------------------------------------------

    async def close(self) -> None:
        """End the pipeline (an EndFrame, then a cancel if it does not end in time)."""
        if self.closed:
            return
        self.closed = True
        self.recorder.hang_ups.closing = True  # our own EndFrame is no hang-up
        self.clock.remove_idle_hook(self._on_idle)
        self.clock.release()
        self.transport.input().live(False)
        worker = self.worker or self.recorder.worker
        if worker is not None:
            forget_flows(worker)
        runner = self._runner_task
        try:
            with contextlib.suppress(Exception):
                await self.transport.disconnect_client()
            if worker is not None and runner is not None and not runner.done():
                with contextlib.suppress(Exception):
                    await worker.queue_frame(EndFrame())
                try:
                    await asyncio.wait_for(asyncio.shield(runner), _END_S)
                except (TimeoutError, Exception):
                    with contextlib.suppress(Exception):
                        await worker.cancel()
        finally:
            if runner is not None and not runner.done():
                runner.cancel()
            if runner is not None:
                with contextlib.suppress(BaseException):
                    await runner


@dataclass
class BargeInRun:
    """What `BotSession.barge_in` observed."""

    first: TurnLog
    """The interrupted turn."""
    second: TurnLog | None = None
    """The interrupting turn (None when the barge-in could not be tested)."""
    untested: str | None = None
    """Why the barge-in could not be tested, if it could not."""
    due_at: float | None = None
    """When the interrupting speech started (pipeline time)."""
    reply_position_s: float | None = None
    """How far into the reply's audio that was."""
    behind_s: float = 0.0
    """The most the microphone ran behind its schedule from the reply's start to the end of
    the interrupting turn (pipeline seconds; 0 on the virtual clock): a real-time run whose
    loop could not keep pace, so where the cut fell was not decided by the audio alone."""


def _words(log: TurnLog) -> int:
    return sum(len(text.split()) for _, text, _ in log.spoken)


def _onset_samples(fixture: FixturePCM) -> int:
    """Where the fixture's speech starts (its first voiced 20 ms frame), in samples."""
    from ...voice._fixtures import clip_from_pcm16, voiced_frames

    clip = clip_from_pcm16(fixture.pcm, fixture.sample_rate)
    voiced, n = voiced_frames(clip)
    return int(voiced[0] * n) if voiced.size else 0


async def _both(first: Awaitable[Any], second: Awaitable[Any]) -> None:
    await first
    await second


def _worker(pipeline: Any) -> PipelineWorker:
    """The worker for a pipeline the factory returned bare: metrics on (token usage), and no
    RTVI (there is no RTVI client in-process; its observer would see every frame for nothing).
    A factory that wants other settings returns its own PipelineWorker."""
    return PipelineWorker(
        pipeline,
        params=PipelineParams(enable_metrics=True, enable_usage_metrics=True),
        enable_rtvi=False,
    )


def _key_hint(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return (
            " (a missing environment variable? The adapter runs the bot offline: build it with "
            "offline services such as ScriptedLLMService, FixtureTextSTTService and "
            "SynthesizerTTSService instead of services that need a key)"
        )
    return ""


def runner_arguments() -> RunnerArguments:
    """What an entrypoint is given as ``runner_args``: no signal handling."""
    return RunnerArguments()


def call_bot(
    bot: Callable[..., Any] | None,
    run_bot: Callable[..., Any] | None,
    transport: InProcessTransport,
    info: Any,
    *,
    takes_info: bool,
) -> Any:
    """Call the user's ``bot(transport[, info])`` or ``run_bot(transport, runner_args[,
    info])``, whichever the adapter was given."""
    if run_bot is not None:
        if takes_info:
            return run_bot(transport, runner_arguments(), info)
        return run_bot(transport, runner_arguments())
    assert bot is not None
    return bot(transport, info) if takes_info else bot(transport)
