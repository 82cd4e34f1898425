"""PipecatAdapter: each run is one real Pipecat pipeline, on its own thread and clock."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import time
import warnings
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..._text import safe_name
from ...errors import AdapterError, AgentEvalError, AgentTimeoutError, AudioFixtureError
from ...models import (
    AgentReply,
    AgentSpeech,
    BargeIn,
    Greeting,
    ToolCall,
    Transcript,
    Usage,
    describe_conditions,
)
from ...voice._clock import PipelineClock, PipelineThread
from ...voice._dtmf import in_band
from ...voice._factory import takes_info
from ...voice._far_end_audio import SETTLE_S, far_end_pcm, prove_far_end_lines
from ...voice._fixture_pcm import (
    FixturePCM,
    check_fixtures,
    load_fixture_pcm,
    resolve_audio,
    save_reply_audio,
    save_streamed_audio,
)
from ...voice._heard import fixture_text_refusal, keys_before_refusal
from ...voice._latency import Unmeasured, reply_latency_s
from .._closing import close_after_failure
from .._crash import agent_packages
from .._turn_timeout import TurnDeadlineError, within_turn_timeout
from ..base import ConversationInfo, TurnInput
from ._barge_in import _barge_lag, _barge_record
from ._commit_twin import committed_turns_twin
from ._compat import check_pipecat, pure_work
from ._hearing_twin import fixture_hearing_twin
from ._keypad import Keypad
from ._logs import hold_pipecat_logs, resolve_level
from ._memo import share_model_sessions
from ._record import Call, TurnLog, join_text
from ._session import BargeInRun, BotSession, SessionOptions, TurnTimeout, call_bot
from ._transport import InProcessTransport

__all__ = ["BotFactory", "BotInfo", "PipecatAdapter", "PipecatConversation"]

_SLOW_BOT = "If the bot is only slow, raise PipecatAdapter(timeout_s=...)."
_WALL_GRACE_S = 5.0
"""A wait's wall-clock bound is timeout_s plus this: the pipeline's own (in its time, ahead of
the wall at max speed) normally fires first and says more."""


@dataclass(frozen=True, slots=True)
class BotInfo:
    """What a bot may know about the run it builds a pipeline for: a ``make_bot`` that takes a
    second required positional argument gets it, and so does a ``run_bot`` that takes a third
    (after ``transport`` and ``runner_args``)."""

    transcript_id: str
    """Id of the transcript being run."""
    run_index: int
    """Zero-based index of the run."""
    transcript: Transcript
    """The transcript itself (its ``userdata``, to seed the bot's fakes, among the rest)."""

    @property
    def tags(self) -> list[str]:
        """The transcript's tags."""
        return list(self.transcript.tags)

    @property
    def variant(self) -> str | None:
        """The variant this run is of (``phone`` for ``booking[phone]``), or None."""
        return self.transcript.variant


BotFactory = Callable[..., Any]
"""``make_bot(transport[, info]) -> Pipeline | list[FrameProcessor] | PipelineWorker``, sync
or async, called once per run on the pipeline's own thread."""


class PipecatAdapter:
    """Runs transcripts against a real Pipecat pipeline, one pipeline per run.

    Hand it the function that builds your bot around a transport, in one of two shapes:

    - ``PipecatAdapter(make_bot)``: ``make_bot(transport)`` returns the ``Pipeline`` (or its
      list of processors, or a ``PipelineWorker`` you configured) built around
      ``transport.input()`` and ``transport.output()``; the adapter runs it. A second required
      positional parameter gets a `BotInfo`.
    - ``PipecatAdapter(run_bot=run_bot)``: your bot's own entrypoint, ``async def
      run_bot(transport, runner_args)`` as Pipecat's examples write it: it builds the pipeline,
      its worker and runner, registers its event handlers and runs. A third required
      positional parameter gets the `BotInfo`.

    Each run gets a fresh pipeline on a thread of its own; every turn of the run goes to that
    pipeline, so the bot keeps its context. An audio turn streams the turn's fixture through
    the transport's microphone (20 ms ``InputAudioRawFrame``s, then silence, as a live line);
    a text turn is delivered as Pipecat's clients deliver one (appended to the context, the
    LLM run). The bot's speech goes to a speaker that plays each chunk's length and records it.

    **Speed.** At ``speed=0`` (the default) the pipeline runs on a virtual clock: whenever
    nothing is runnable, its time jumps to the next timer. Every Pipecat timer (the VAD's and
    turn analyzer's, the user-turn stop timeouts, the bot-speaking state, your functions'
    ``asyncio.sleep``) takes its full length in the pipeline's time and none of the wall's, and
    work in threads (Silero, smart-turn, Whisper, the TTS) takes none of the pipeline's. So a
    run at max speed makes the decisions a real-time run makes, as if compute were free.
    ``speed=1.0`` runs in real time; other values scale the clock.

    **A turn ends when the bot is done**: the user's turn closed, no function call running,
    the LLM's response complete, the TTS finished and the bot no longer speaking, decided at a
    moment when nothing more is on its way. Every wait is bounded by ``timeout_s`` (of the
    pipeline's time, and of the wall); on timeout the turn fails naming what was pending.

    Args:
        bot: ``make_bot(transport[, info])`` (see above).
        run_bot: Instead of ``bot``: the bot's entrypoint ``run_bot(transport, runner_args[,
            info])``.
        speed: 0 for max speed on the virtual clock, 1.0 for real time, other values scale.
        timeout_s: Longest a turn (or the start) may take.
        sample_rate: Rate of the microphone (fixtures are converted to it).
        chunk_ms: Length of each microphone chunk.
        tail_silence_s: Silence streamed after each fixture before the turn may end (the line
            stays open with silence after it until the bot is done).
        audio_out_dir: Save each turn's reply audio there as a WAV (``AgentReply.audio_out``).
        audio_in_dir: Save the exact audio each audio turn streams there
            (``AgentReply.audio_in``); ``--agent-eval-save-audio`` wins.
        allow_network: Let the pipeline open network connections (refused by default: a
            service that needs a network fails its turn saying so). While a connection is
            open the virtual clock runs as the wall does.
        log_level: Pipecat's messages print from this level (WARNING) while it runs; None: as is.
    """

    consumes_audio = True
    presses_keys = True
    """It presses a turn's ``dtmf:`` keys for the caller, so a turn of keys alone can run."""
    plays_far_end_audio = True
    """Streams a far end heard as audio (``far_end: {as: audio}``) into the bot."""
    with_fixture_hearing = fixture_hearing_twin  # attribution's counterfactuals: hearing,
    with_committed_turns = committed_turns_twin  # and turn-taking

    def __init__(
        self,
        bot: BotFactory | None = None,
        *,
        run_bot: Callable[..., Awaitable[Any]] | None = None,
        speed: float = 0.0,
        timeout_s: float = 30.0,
        sample_rate: int = 16000,
        chunk_ms: int = 20,
        tail_silence_s: float = 1.0,
        audio_out_dir: str | os.PathLike[str] | None = None,
        audio_in_dir: str | os.PathLike[str] | None = None,
        allow_network: bool = False,
        log_level: str | None = "WARNING",
    ) -> None:
        if (bot is None) == (run_bot is None):
            raise TypeError(
                "PipecatAdapter takes exactly one of bot (make_bot(transport) returning the "
                "pipeline) and run_bot (your bot's run_bot(transport, runner_args))"
            )
        factory = bot if bot is not None else run_bot
        if not callable(factory):
            raise TypeError(
                f"PipecatAdapter needs a function building the bot; got {type(factory).__name__}"
            )
        if speed < 0 or timeout_s <= 0 or tail_silence_s < 0 or chunk_ms <= 0:
            raise ValueError(
                "PipecatAdapter: speed and tail_silence_s must be >= 0, timeout_s and chunk_ms > 0"
            )
        if sample_rate <= 0 or (sample_rate * chunk_ms) % 1000:
            raise ValueError(
                f"PipecatAdapter: sample_rate={sample_rate} and chunk_ms={chunk_ms} must give a "
                "whole number of samples per chunk"
            )
        self.bot = bot
        self.run_bot = run_bot
        self.speed = speed
        self.timeout_s = timeout_s
        self.sample_rate = sample_rate
        self.chunk_ms = chunk_ms
        self.tail_silence_s = tail_silence_s
        self.audio_out_dir = Path(audio_out_dir) if audio_out_dir is not None else None
        self.audio_in_dir = Path(audio_in_dir) if audio_in_dir is not None else None
        self.allow_network = allow_network
        self.log_level = resolve_level(log_level)
        self._takes_info = (
            takes_info(bot, position=1) if bot is not None else takes_info(factory, position=2)
        )

    # -- the adapter protocol ---------------------------------------------------------------------

    async def prepare(self, transcript: Transcript) -> None:
        """Check the Pipecat release and every audio fixture before any pipeline is built.

        Raises:
            AdapterError: pipecat-ai outside the supported range, or imported too early.
            AudioFixtureError: The first fixture that is missing, unreadable, empty or silent.
        """
        check_pipecat()
        await check_fixtures(transcript, self.fixture)

    async def start_conversation(self, info: ConversationInfo) -> PipecatConversation:
        """Build a fresh pipeline and start it (its greeting included).

        Raises:
            AdapterError: See `PipecatConversation.start`.
        """
        check_pipecat()
        conversation = PipecatConversation(self, info)
        try:
            await conversation.start()
        except BaseException as exc:
            await close_after_failure(conversation.aclose(), exc)
            raise
        return conversation

    # -- fixtures -----------------------------------------------------------------------------------

    def fixture(self, path: Path) -> FixturePCM:
        """``path`` as the microphone streams it (validated; kept while unchanged)."""
        return load_fixture_pcm(path, sample_rate=self.sample_rate)

    def turn_audio(self, turn: TurnInput, path: Path) -> FixturePCM:
        """What a turn streams: its fixture after its audio conditions."""
        return load_fixture_pcm(
            path,
            sample_rate=self.sample_rate,
            conditions=turn.conditions,
            seed=turn.seed,
            keys=in_band(turn.turn.dtmf),  # a turn's keys as tones too (dtmf: in_audio)
        )


class PipecatConversation:
    """One run's pipeline: turns in, `AgentReply` out; closed exactly once."""

    def __init__(self, adapter: PipecatAdapter, info: ConversationInfo) -> None:
        self.adapter = adapter
        self.info = info
        self.speed = adapter.speed if info.speed is None else info.speed
        """How fast this run's pipeline runs: the session's speed (``--agent-eval-speed``,
        ``[tool.agent_eval] speed``) if it says one, else the adapter's; 0: the virtual clock."""
        self.clock = PipelineClock(rate=None if self.speed == 0 else self.speed)
        self._thread: PipelineThread | None = None
        self._session: BotSession | None = None
        self._greeting = Greeting()
        self._greeting_log: TurnLog | None = None
        self._closed = False
        self._failed = False
        self._held: dict[int, AgentReply | BaseException] = {}
        """Replies of interrupting turns, run by the call for the turn they interrupt."""
        self._untested: dict[int, str] = {}
        """Why an interrupting turn could not barge in, by turn index."""
        self._logs: contextlib.ExitStack = contextlib.ExitStack()

    @property
    def session(self) -> BotSession:
        """The pipeline's session (on the pipeline's thread)."""
        if self._session is None:
            raise AdapterError("this Pipecat conversation is not started")
        return self._session

    # -- lifecycle --------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the pipeline on its own thread and observe the greeting.

        Raises:
            AdapterError: The factory failed or returned no pipeline around the transport, or
                the pipeline did not start (or greet) within timeout_s.
        """
        adapter, info = self.adapter, self.info
        share_model_sessions()  # before the bot builds its VAD and turn analyzer
        self._logs.enter_context(hold_pipecat_logs(adapter.log_level))
        name = f"pipecat {safe_name(info.transcript.id)} run {info.run_index + 1}"
        self._thread = PipelineThread(
            self.clock, name=name, allow_network=adapter.allow_network, inline=pure_work
        )
        options = SessionOptions(
            build=self._build,
            entrypoint=adapter.run_bot is not None,
            sample_rate=adapter.sample_rate,
            chunk_ms=adapter.chunk_ms,
            tail_silence_s=adapter.tail_silence_s,
            timeout_s=adapter.timeout_s,
            live_mic=info.transcript.has_audio,
            own=agent_packages(adapter.bot, adapter.run_bot),
        )

        async def start() -> TurnLog:
            self._session = BotSession(options, self.clock)
            return await self._session.start()

        log = await self._call(start, label="the pipeline's start")
        if log.crashes and not self.clock.network_attempts:
            # A processor of the bot raised while it started or greeted. (A service refused
            # the network is ours to report, as an ERROR, at the first turn.)
            raise log.crashes[0].labelled("before turn 1: the bot crashed")
        self._refuse_fixture_text_under_conditions()
        if self.session.fixture_stts():  # it hears by provenance: a far end's lines prove theirs
            await asyncio.to_thread(prove_far_end_lines, self.info.transcript)
        self._greeting_log = log
        calls = [_tool_call(c) for c in log.calls]
        text = join_text(log.reply_pieces())
        speech = []
        if text:
            speech = [
                AgentSpeech(
                    text=text,
                    cause="greeting",
                    agent=self.session.recorder.node,
                    turn_index=None,
                    started_at_s=_since(log.reply_pieces()[0][0], self.session.origin),
                    latency_s=_since(log.reply_pieces()[0][0], log.started_at),
                )
            ]
        self._greeting = Greeting(speech, calls)

    def _refuse_fixture_text_under_conditions(self, far_end: TurnInput | None = None) -> None:
        """`FixtureTextSTTService` answers with the fixture's words without listening: under
        audio conditions, or after keys sounding first, it would pass for the wrong reason
        (checked at the start for the transcript's turns, and for ``far_end``, a far end's turn
        heard as audio, when it comes)."""
        stts = self.session.fixture_stts(refusing=True)
        if not stts:
            return
        transcript, stt = self.info.transcript, type(stts[0]).__name__
        chains = list(enumerate(self.info.turn_conditions))
        if far_end is not None:
            chains = [(far_end.index, far_end.conditions)]  # a far end's turn, made as it goes
        for index, conditions in chains:
            if conditions:
                raise AdapterError(
                    fixture_text_refusal(
                        transcript,
                        index,
                        conditions,
                        stt=stt,
                        listener="bot",
                        owner="pipeline",
                        instead="WhisperSTTService()",
                    )
                )
        if keyed := keys_before_refusal(transcript, stt=stt, instead="WhisperSTTService()"):
            raise AdapterError(keyed)

    def greeting(self) -> Greeting:
        """What the bot said and did once the pipeline started (``on_client_connected``),
        before turn 1: an empty `Greeting` when it said nothing."""
        return Greeting(list(self._greeting.speech), list(self._greeting.tool_calls))

    @property
    def greeting_text(self) -> str:
        """The greeting's text ("" when the bot said nothing before turn 1)."""
        return self._greeting.text

    def _build(self, transport: InProcessTransport) -> Any:
        adapter = self.adapter
        info = BotInfo(
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            transcript=self.info.transcript,
        )
        return call_bot(
            adapter.bot, adapter.run_bot, transport, info, takes_info=adapter._takes_info
        )

    async def aclose(self) -> None:
        """End the pipeline and its thread; safe to call twice."""
        if self._closed:
            return
        self._closed = True
        try:
            thread = self._thread
            if thread is None:
                return
            session = self._session
            async with thread.stopped_after(10.0):
                if session is not None:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(thread.run(session.close()), 15.0)
        finally:
            self._logs.close()

    # -- turns ------------------------------------------------------------------------------------

    async def respond(self, turn: TurnInput) -> AgentReply:
        """Send one turn (audio when it has a fixture, else text) and collect the reply.

        Raises:
            AdapterError: The turn timed out (saying what was pending), a service failed,
                the pipeline tried to reach the network, or the latency was not measurable.
            AudioFixtureError: The fixture is unusable, or `FixtureTextSTTService` found
                nothing proving what it says.
        """
        if self._closed or self._session is None:
            raise AdapterError("this Pipecat conversation is closed")
        held = self._held.pop(turn.index, None)
        if isinstance(held, BaseException):
            raise held
        if held is not None:  # a barge-in ran this turn over the reply to the one before
            return held
        following = turn.interrupted_by
        if following is not None and not self._session.has_tts():
            self._untested[following.index] = (
                "the pipeline has no TTS service, so the bot never speaks audio that could be "
                "interrupted; add one (SynthesizerTTSService() speaks offline)"
            )
        elif following is not None:
            return await self._respond_interrupted(turn, following)
        session = self._session
        label = f"turn {turn.index + 1}"
        keypad = Keypad(session, turn)
        started = time.perf_counter()
        pipeline_started = self.clock.elapsed()
        audio_in: Path | None = None
        fixture: FixturePCM | None = None
        if turn.far_end:  # a far end heard as audio: its turn ends its own way
            self._refuse_fixture_text_under_conditions(far_end=turn)
            try:
                clip, words = await asyncio.to_thread(
                    far_end_pcm, self.info.transcript, turn.far_end, self.adapter.sample_rate,
                    turn.conditions, turn.seed,
                )  # fmt: skip
            except AudioFixtureError as exc:
                raise AudioFixtureError(f"{label}: {exc}") from None
            fixture = clip
            audio_in = await asyncio.to_thread(self._save_streamed_audio, clip, turn.index)

            async def run() -> TurnLog:
                return await session.far_end_turn(turn.index, clip, words, SETTLE_S)

        elif turn.audio is not None:
            path = resolve_audio(turn.audio, self.info.transcript)
            try:
                fixture = await asyncio.to_thread(self.adapter.turn_audio, turn, path)
            except AudioFixtureError as exc:
                raise AudioFixtureError(f"{label}: {exc}") from None
            audio_in = await asyncio.to_thread(self._save_streamed_audio, fixture, turn.index)
            loaded = fixture

            async def run() -> TurnLog:
                return await session.audio_turn(turn.index, loaded, turn.turn.user)

        else:
            text = turn.text

            async def run() -> TurnLog:
                return await session.text_turn(turn.index, text)

        try:
            log = await self._call(keypad.around(run), label=label, turn_timeout_s=turn.timeout_s)
        except AgentTimeoutError as exc:
            self._failed = True
            if fixture is None or not turn.conditions or isinstance(exc, TurnDeadlineError):
                raise
            # The bot failed this condition (its VAD never heard the speech start or end in
            # the noise, say): a FAIL that names it, as the LiveKit adapters' does.
            said = str(exc).removeprefix(f"{label}: ")
            raise AgentTimeoutError(
                f"{label}: under the audio conditions {describe_conditions(turn.conditions)}: "
                f"{said}"
            ) from None
        except BaseException:
            self._failed = True
            raise
        self._raise_errors(log, label)
        reply = self._reply(log, label=label, fixture=fixture)
        reply = keypad.stamp(reply, log.audio, log.audio_rate)
        reply.audio_in = audio_in
        meta = reply.metadata["pipecat"]
        meta["turn_wall_s"] = round(time.perf_counter() - started, 4)
        meta["pipeline_s"] = round(self.clock.elapsed() - pipeline_started, 4)
        untested = self._untested.pop(turn.index, None)
        if untested is not None:
            reply.barge_in = BargeIn(precondition=untested)
        if turn.index == 0:
            meta["greeting"] = [
                {"text": s.text, "cause": s.cause, "agent": s.agent, "turn_index": None}
                for s in self._greeting.speech
            ]
        return reply

    async def _respond_interrupted(self, turn: TurnInput, following: TurnInput) -> AgentReply:
        """Turn ``turn`` (k-1) interrupted by ``following`` (k): both run now; k's reply is
        kept for the runner's next call. When the barge-in cannot be tested, k-1 runs to its
        end and k runs later as an ordinary turn whose `BargeIn` says why."""
        session = self.session
        config = following.turn.interrupt
        assert config is not None and following.audio is not None
        label = f"turn {turn.index + 1}"
        started = time.perf_counter()
        first: FixturePCM | str
        fixture: FixturePCM | None = None
        if turn.audio is not None:
            path = resolve_audio(turn.audio, self.info.transcript)
            fixture = first = await asyncio.to_thread(self.adapter.turn_audio, turn, path)
        else:
            first = turn.text
        over_path = resolve_audio(following.audio, self.info.transcript)
        try:
            over = await asyncio.to_thread(self.adapter.turn_audio, following, over_path)
        except AudioFixtureError as exc:
            raise AudioFixtureError(f"turn {following.index + 1}: {exc}") from None
        after_s = config.after_ms / 1000 if config.after_ms is not None else None

        async def run() -> BargeInRun:
            return await session.barge_in(
                turn.index,
                first,
                turn.turn.user,
                over,
                following.turn.user,
                after_s=after_s,
                at_word=config.at_word,
            )

        try:
            barge = await self._call(
                run,
                label=f"{label} (interrupted by turn {following.index + 1})",
                turn_timeout_s=turn.timeout_s,
            )
        except BaseException:
            self._failed = True
            raise
        self._raise_errors(barge.first, label)
        reply = self._reply(barge.first, label=label, fixture=fixture)
        reply.metadata["pipecat"]["turn_wall_s"] = round(time.perf_counter() - started, 4)
        if turn.index == 0:
            reply.metadata["pipecat"]["greeting"] = [
                {"text": s.text, "cause": s.cause, "agent": s.agent, "turn_index": None}
                for s in self._greeting.speech
            ]
        if barge.untested is not None or barge.second is None:
            self._untested[following.index] = barge.untested or "the barge-in did not run"
            return reply
        second = barge.second
        next_label = f"turn {following.index + 1}"
        try:
            self._raise_errors(second, next_label)
            held = self._reply(second, label=next_label, fixture=over)
        except AgentEvalError as exc:
            self._held[following.index] = exc
            return reply
        held.metadata["pipecat"]["interrupt"] = True
        behind, decided = _barge_lag(barge, second)
        held.metadata["pipecat"]["barge_in_behind_s"] = round(behind, 4)
        if decided:
            note = (
                f"{next_label}: the real-time run fell {behind * 1000:.0f} ms behind the "
                f"audio's schedule while the barge-in cut the reply, and the last word(s) of "
                f"the interrupted reply ({' '.join(decided)!r}) were said within that lag: "
                "where the cut fell was decided by the CPU, not the audio alone (max speed "
                "decides it from the audio); run it on a less loaded machine, or at speed=0"
            )
            held.metadata["pipecat"]["barge_in_warning"] = note
            warnings.warn(note, RuntimeWarning, stacklevel=2)
        held.barge_in = _barge_record(barge, second)
        self._held[following.index] = held
        return reply

    async def _call(
        self,
        make: Callable[[], Awaitable[Any]],
        *,
        label: str,
        turn_timeout_s: float | None = None,
    ) -> Any:
        """Run ``make()`` on the pipeline's thread, bounded on the wall too; failures become
        one `AdapterError` naming ``label``. ``turn_timeout_s`` (a turn's) bounds it in the
        pipeline's time as well, failing the turn as the runner's deadline does: at max speed
        and in real time alike."""
        thread = self._thread
        assert thread is not None
        timeout_s = self.adapter.timeout_s
        work = within_turn_timeout(_coroutine(make), turn_timeout_s)
        # Not asyncio.wait_for: Pipecat swaps in wait_for2's before Python 3.12, whose
        # CancelledWithResultError escapes the runner's own deadline racing this one.
        wall = asyncio.timeout(timeout_s + _WALL_GRACE_S)
        try:
            async with wall:
                return await thread.run(work)
        except TurnDeadlineError:
            raise
        except TurnTimeout as exc:
            # A bot that does not finish in time failed (as a LiveKit agent that never answers);
            # one held up by the network it may not reach could not be evaluated.
            offline = "network" in str(exc)
            error = AdapterError if offline else AgentTimeoutError
            hint = "" if offline else f" {_SLOW_BOT}"
            raise error(
                f"{label}: no end within timeout_s={timeout_s:g} s of the pipeline's time; still "
                f"waiting for {exc}.{hint}"
            ) from None
        except TimeoutError:
            if not wall.expired():
                raise
            raise AgentTimeoutError(
                f"{label}: no end within timeout_s={timeout_s:g} s (+{_WALL_GRACE_S:g} s) of wall "
                f"time; the pipeline's loop was busy (a processor computing without yielding?). "
                f"{_SLOW_BOT}"
            ) from None
        except AgentEvalError as exc:
            raise exc.labelled(label) from None

    def _raise_errors(self, log: TurnLog, label: str) -> None:
        attempts = self.clock.network_attempts
        if attempts:
            raise AdapterError(
                f"{label}: the pipeline tried to reach the network ({', '.join(attempts[:3])}), "
                "which PipecatAdapter refuses: a service of the bot needs a network (and "
                "probably a key). Build the bot with offline services for tests "
                "(ScriptedLLMService, FixtureTextSTTService or WhisperSTTService, "
                "SynthesizerTTSService), or pass PipecatAdapter(allow_network=True) to call the "
                "real ones" + (f"; the pipeline reported: {log.errors[0]}" if log.errors else "")
            )
        if log.crashes:
            # The bot's own processor failed (its exception, an error it pushed): a crash.
            raise log.crashes[0].labelled(f"{label}: the bot crashed")
        if log.errors:
            raise AdapterError(
                f"{label}: the pipeline reported an error: " + "; ".join(log.errors[:3])
            )

    # -- the reply ----------------------------------------------------------------------------------

    def _reply(self, log: TurnLog, *, label: str, fixture: FixturePCM | None) -> AgentReply:
        session = self.session
        recorder = session.recorder
        pieces = log.reply_pieces()
        text = join_text(pieces)
        first_text = log.first_text_at if text else None
        if log.kind == "text":
            anchors = [log.sent_at] if log.sent_at is not None else []
        elif log.kind == "keys":
            anchors = list(log.keys_at)
        else:
            anchors = list(log.speech_ends)
        latency = _latency(anchors, first_text, what="first reply text", label=label)
        audio_latency = _latency(anchors, log.first_audio_at, what="first reply audio", label=label)
        meta: dict[str, Any] = {
            "input": log.kind,
            "events": [
                {"t": round(at - log.started_at, 3), "frame": name} for at, name in log.events
            ],
            "user_turns": len(log.user_stops),
            "speech_segments": log.vad_stops,
            "interruptions": len(log.interruptions),
            "llm_responses": log.responses,
            "reply_audio_s": round(len(log.audio) / 2 / log.audio_rate, 3)
            if log.audio_rate
            else 0.0,
            "agent": recorder.node if recorder.flows else None,
            "handoffs": [{"from": h.from_agent, "to": h.to_agent} for h in log.handoffs],
            "late_tool_results": [_late(c) for c in log.late_results],
        }
        agent_speech = [
            AgentSpeech(
                text=said.text,
                cause=said.cause,
                agent=said.agent,
                turn_index=log.index,
                started_at_s=_since(said.at, session.origin),
                latency_s=_own_latency(anchors, said.at),
            )
            for said in log.said_on_own
        ]
        meta["agent_speech"] = [dataclasses.asdict(s) for s in agent_speech]
        if log.turn_predictions:
            meta["turn_predictions"] = log.turn_predictions
        if fixture is not None:
            meta.update(
                audio_duration_s=round(fixture.duration_s, 3),
                fixture_rate=fixture.source_rate,
                fixture_channels=fixture.source_channels,
            )
        prompt, completion, requests = log.usage
        return AgentReply(
            text,
            [_tool_call(c) for c in log.calls],
            heard=" ".join(log.transcripts) if log.kind == "audio" else None,
            heard_segments=list(log.transcripts) if log.kind == "audio" else [],
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            usage=Usage(prompt, completion, requests) if requests else None,
            audio_out=self._save_reply_audio(log),
            active_agent=recorder.node if recorder.flows else None,
            handoffs=list(log.handoffs) if recorder.flows else None,
            metadata={"pipecat": meta, "speed": self.speed},
            agent_speech=agent_speech,
            timeline=log.timeline.take(flows=recorder.flows)
            if log.kind == "audio" and log.timeline
            else None,
        )

    def _save_streamed_audio(self, fixture: FixturePCM, index: int) -> Path | None:
        folder = self.info.save_audio_dir or self.adapter.audio_in_dir
        if folder is None:
            return None
        return save_streamed_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=index,
            pcm=fixture.pcm,
            sample_rate=fixture.sample_rate,
        )

    def _save_reply_audio(self, log: TurnLog) -> Path | None:
        folder = self.adapter.audio_out_dir
        if folder is None or not log.audio or not log.audio_rate or log.index is None:
            return None
        from ...voice._fixtures import clip_from_pcm16

        return save_reply_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=log.index,
            clip=clip_from_pcm16(bytes(log.audio), log.audio_rate),
        )


async def _coroutine(make: Callable[[], Awaitable[Any]]) -> Any:
    result = make()
    return await result if inspect.isawaitable(result) else result


def _tool_call(call: Call) -> ToolCall:
    return ToolCall(
        call.name,
        call.args,
        output=call.result,
        is_error=call.is_error,
        call_id=call.call_id,
        error=call.error,
        done=call.done,
        cancelled=call.cancelled,
        refused=call.refused,
    )


def _late(call: Call) -> dict[str, Any]:
    return {
        "call_id": call.call_id,
        "name": call.name,
        "turn_index": call.turn_index,
        "output": call.result,
        "is_error": call.is_error,
        "error": call.error,
        "refused": call.refused,
    }


def _since(at: float | None, origin: float) -> float | None:
    return None if at is None else round(max(0.0, at - origin), 3)


def _own_latency(anchors: list[float], at: float) -> float | None:
    """Seconds from the end of the user's speech to speech the bot started on its own; None
    when it did not come after one (it is a record, not something a check reads)."""
    latency = reply_latency_s(anchors, at)
    return None if latency is None or isinstance(latency, Unmeasured) else round(latency, 4)


def _latency(anchors: list[float], first: float | None, *, what: str, label: str) -> float | None:
    """Seconds from the last anchor at or before ``first`` to ``first``; None without a reply.

    Raises:
        AdapterError: There is a reply but no anchor before it (it came before the end of the
            user's speech, or no end of speech was observed): the latency is not a number, and
            a latency check must not pass on it.
    """
    latency = reply_latency_s(anchors, first)
    if not isinstance(latency, Unmeasured):
        return None if latency is None else round(latency, 4)
    why = (
        "with no end of the user's speech observed (the VAD never stopped)"
        if latency.early_s is None
        else f"{latency.early_s:.2f} s before the end of the user's speech (it talked over them)"
    )
    raise AdapterError(
        f"{label}: the bot's {what} came {why}, so its latency cannot be measured; fix the "
        "pipeline or the fixture rather than read a negative latency"
    )
