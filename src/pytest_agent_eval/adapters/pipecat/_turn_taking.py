"""Turn-taking stimuli through the user's own Pipecat pipeline (its VAD, its user-turn start and
stop strategies with their turn analyzer, smart-turn included, its interruption settings, any
processor of its own), each recorded as the `Observation` the LiveKit runner records.

Each stimulus gets a fresh pipeline from the adapter's own factory, run as `PipecatAdapter`
runs a conversation (`_session.BotSession`: the in-process transport, on a thread of its own,
on the virtual clock), with three of its services scripted once it has started, so only
turn-taking is under test: its `ScriptedLLMService` answers every turn with `AGENT_REPLY`, its
`SynthesizerTTSService` speaks with the LiveKit runner's voice (espeak), and its STT
(`FixtureTextSTTService` or `WhisperSTTService`) hears, for each segment the pipeline's VAD
cuts, the words of the stimulus events in that segment (`words_in`), nothing for a noise. A
pipeline with other services (a cloud LLM, STT or TTS) cannot be scripted and says so.

Times are seconds on the clip's clock: 0 is the clip's first sample on the microphone; for a
clip that plays over the agent, the agent's line (a ``TTSSpeakFrame``) starts first and the
clip starts as its audio plays. What the agent did is read from the pipeline's frames
(`_record.Recorder`): a user turn is committed at ``UserStoppedSpeakingFrame``, the agent
begins speaking at ``BotStartedSpeakingFrame``, its speech is halted when its audio stops
(``BotStoppedSpeakingFrame``) after an ``InterruptionFrame`` reached the output transport while
it spoke (the stop the caller hears, as the LiveKit runner's audio output's); Pipecat does not
go back to a halted reply, so nothing resumes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pipecat.frames.frames import TTSSpeakFrame
from pipecat.pipeline.service_switcher import ServiceSwitcher
from pipecat.services.llm_service import LLMService
from pipecat.services.stt_service import STTService
from pipecat.services.tts_service import TTSService

from ..._turn_taking._metrics import Observation
from ..._turn_taking._observer import (
    AGENT_REPLY,
    CALLER_EVENTS,
    SAMPLE_RATE,
    PlayedStimulus,
    TurnTakingObserver,
    observation_of,
    read_pack,
    unheard_speech,
    words_in,
)
from ..._turn_taking._stimulus import Stimulus
from ...errors import AdapterError, AgentTimeoutError
from ...models import Transcript
from ...voice._clip import AudioClip, _numpy
from ...voice._clock import PipelineClock, PipelineThread
from .._crash import agent_packages
from ._compat import check_pipecat, processors_of, pure_work
from ._logs import hold_pipecat_logs
from ._memo import share_model_sessions
from ._services import ScriptedLLMService, SynthesizerTTSService, _CountingSTT
from ._session import BotSession, SessionOptions, TurnTimeout, call_bot
from ._transport import InProcessTransport

__all__ = ["adapter_observer", "observe_bot", "observe_pack"]

_WALL_S = 120.0
"""Most wall seconds one stimulus may take on the virtual clock (a loop kept busy)."""
_VAD_HINT = (
    "give the user aggregator a VAD that runs in process "
    "(LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())) and check its VADParams "
    "(start_secs, confidence, min_volume)"
)

Build = Callable[[InProcessTransport], Any]
"""Calls the user's factory with the transport (see `PipecatAdapter`)."""


def adapter_observer(adapter: Any, transcript: Transcript, *, tail_s: float) -> TurnTakingObserver:
    """The turn-taking runner of a `PipecatAdapter`: each stimulus gets a fresh pipeline from
    the adapter's own factory (with a `BotInfo` when it asks for one), run on the virtual
    clock whatever the adapter's ``speed``: Pipecat's timers then keep the bot's production
    settings in audio time, and the verdict cannot depend on how fast this machine streams."""
    from ._adapter import BotInfo

    check_pipecat()
    runs = [0]
    own = agent_packages(adapter.bot, adapter.run_bot)

    async def observe(played: PlayedStimulus) -> Observation:
        info = BotInfo(transcript_id=transcript.id, run_index=runs[0], transcript=transcript)
        runs[0] += 1

        def build(transport: InProcessTransport) -> Any:
            return call_bot(
                adapter.bot, adapter.run_bot, transport, info, takes_info=adapter._takes_info
            )

        return await observe_bot(
            played.stimulus,
            played.clip,
            played.events,
            build,
            entrypoint=adapter.run_bot is not None,
            tail_s=tail_s,
            timeout_s=adapter.timeout_s,
            own=own,
            log_level=adapter.log_level,
        )

    return TurnTakingObserver(framework="pipecat", clock="virtual", observe=observe)


async def observe_pack(
    folder: Path,
    ids: Sequence[str] | None,
    bot: Build,
    *,
    tail_s: float = 3.0,
    speed: float = 0.0,
) -> list[Observation]:
    """`observe_bot` for each stimulus of a written pack (``pack.json`` in ``folder``), in
    order, each through a fresh pipeline of ``bot(transport)``; ``ids`` picks some.

    Raises:
        ConfigError: ``ids`` names a stimulus the folder does not hold.
    """
    return [
        await observe_bot(p.stimulus, p.clip, p.events, bot, tail_s=tail_s, speed=speed)
        for p in read_pack(folder, ids)
    ]


async def observe_bot(
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    build: Build,
    *,
    entrypoint: bool = False,
    tail_s: float = 3.0,
    speed: float = 0.0,
    timeout_s: float = 30.0,
    own: tuple[str, ...] = (),
    log_level: str | None = "WARNING",
) -> Observation:
    """Play ``stimulus`` (its rendered ``clip`` and ``events``) to a fresh pipeline of the bot
    ``build`` makes and say what the agent did.

    Args:
        stimulus: The stimulus (its category, expectation and agent line).
        clip: Its audio, 16 kHz mono.
        events: Its sidecar's events.
        build: Calls the user's factory with the transport.
        entrypoint: ``build`` is the bot's own ``run_bot``: it runs the pipeline itself.
        tail_s: Seconds of silence streamed after the clip, for the answer to come.
        speed: 0 for the virtual clock (Pipecat's timers in audio time), 1.0 for real time.
        timeout_s: Longest any wait may take, in the pipeline's time.
        own: The packages the bot came from (its errors are its crashes).
        log_level: Pipecat's messages printed from this level.

    Raises:
        ValueError: The clip is not at 16 kHz.
        AdapterError: The pipeline cannot be scripted (a service of another kind), its VAD
            never heard the caller, the agent never started its line, or a wait timed out.
        AgentCrashError: A processor of the bot's own raised.
        AgentTimeoutError: The stimulus took more than two minutes of wall time.
    """
    if clip.sample_rate != SAMPLE_RATE:
        raise ValueError(f"the runner streams 16 kHz audio; the clip is at {clip.sample_rate} Hz")
    share_model_sessions()  # before the bot builds its VAD and turn analyzer
    clock = PipelineClock(rate=None if speed == 0 else speed)
    scripted = _Script(stimulus.agent_line or AGENT_REPLY)
    options = SessionOptions(
        build=build,
        entrypoint=entrypoint,
        sample_rate=SAMPLE_RATE,
        chunk_ms=20,
        tail_silence_s=0.0,
        timeout_s=timeout_s,
        live_mic=True,
        own=own,
        prepare=scripted.prepare,
    )
    sessions: list[BotSession] = []

    async def run() -> Observation:
        session = BotSession(options, clock)
        sessions.append(session)
        return await _observe(session, scripted, stimulus, clip, events, tail_s=tail_s)

    with hold_pipecat_logs(log_level):
        thread = PipelineThread(
            clock, name=f"turn-taking {stimulus.id}", allow_network=False, inline=pure_work
        )
        async with thread.stopped_after(10.0):
            try:
                return await asyncio.wait_for(thread.run(run()), _WALL_S)
            except TurnTimeout as exc:
                raise AdapterError(
                    f"stimulus {stimulus.id}: no end within timeout_s={timeout_s:g} s of the "
                    f"pipeline's time; still waiting for {exc}"
                ) from None
            except TimeoutError:
                raise AgentTimeoutError(
                    f"stimulus {stimulus.id}: no end within {_WALL_S:g} s of wall time; the "
                    "pipeline's loop was busy (a processor computing without yielding?)"
                ) from None
            finally:
                for session in sessions:
                    with contextlib.suppress(Exception):
                        await asyncio.wait_for(thread.run(session.close()), 15.0)


class _Script:
    """Scripts the services of a started pipeline (`SessionOptions.prepare`)."""

    def __init__(self, greeting: str) -> None:
        self.greeting = greeting
        """What the bot says when it greets (the stimulus's agent line, as the LiveKit
        runner's scripted agent does)."""
        self.stts: list[_CountingSTT] = []
        self.tts: SynthesizerTTSService | None = None

    def prepare(self, pipeline: Any) -> None:
        processors = list(processors_of(pipeline))
        # A switcher's inactive services get no media: only its active one is played (a switch
        # to a cloud one during the stimulus needs the network, which is refused: an ERROR).
        idle = {
            id(service)
            for switcher in processors
            if isinstance(switcher, ServiceSwitcher)
            for service in switcher.services
            if service is not switcher.strategy.active_service
        }
        for processor in processors:
            if id(processor) in idle:
                continue
            if isinstance(processor, _CountingSTT):
                self.stts.append(processor)
            elif isinstance(processor, ScriptedLLMService):
                processor.rules = []
                processor.instructions = []
                processor.default_reply = AGENT_REPLY
                processor.greeting = self.greeting
                processor.latency = None
            elif isinstance(processor, SynthesizerTTSService):
                processor.speak_with("espeak")
                self.tts = self.tts or processor
            elif isinstance(processor, STTService | LLMService | TTSService):
                raise AdapterError(_unscriptable(processor))
        if not self.stts:
            raise AdapterError(
                "the pipeline has no STT the turn-taking runner can script: it hears each "
                "stimulus's words through the bot's FixtureTextSTTService or WhisperSTTService "
                "(put one after transport.input())"
            )
        if self.tts is None:
            raise AdapterError(
                "the pipeline has no SynthesizerTTSService: turn-taking conformance needs the "
                "bot to speak (its interruptions and overlaps are in its audio)"
            )


def _unscriptable(processor: Any) -> str:
    kind = (
        "STT" if isinstance(processor, STTService) else "LLM"
        if isinstance(processor, LLMService) else "TTS"
    )  # fmt: skip
    ours = {
        "STT": "FixtureTextSTTService or WhisperSTTService",
        "LLM": "ScriptedLLMService",
        "TTS": "SynthesizerTTSService",
    }[kind]
    return (
        f"the pipeline's {kind} is {type(processor).__name__}, which the turn-taking runner "
        f"cannot script (it plays every bot with a scripted LLM and TTS and a stand-in STT, "
        f"so only turn-taking is under test, offline); build the bot with {ours} for tests"
    )


def _pcm16(clip: AudioClip) -> bytes:
    np = _numpy()
    return bytes((np.clip(clip.samples, -1.0, 1.0) * 32767).astype("<i2").tobytes())


async def _observe(
    session: BotSession,
    scripted: _Script,
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    *,
    tail_s: float,
) -> Observation:
    greeting = await session.start()
    _raise_errors(session, greeting.crashes, greeting.errors, "its start")
    recorder, mic = session.recorder, session.transport.input()
    mic.live(True)
    log = recorder.begin(0, "audio")
    pcm = _pcm16(clip)
    if stimulus.agent_speaking:
        assert scripted.tts is not None
        await scripted.tts.queue_frame(TTSSpeakFrame(stimulus.agent_line or AGENT_REPLY))
        await session.wait_until(
            lambda: recorder.bot_speaking and log.first_audio_at is not None,
            "the agent to start its line",
        )
        assert log.first_audio_at is not None
        start = mic.speak_at(pcm, log.first_audio_at, tail_s=tail_s)
    else:
        start, _ = mic.play(pcm, tail_s=tail_s)
    origin = mic.time_of(start)
    offset_s = start / SAMPLE_RATE
    for stt in scripted.stts:
        stt.stand_in = lambda a, b: words_in(events, a - offset_s, b - offset_s)
    await session.wait_until(lambda: mic.queued_samples == 0, "the clip and its tail to stream")
    mic.live(False)
    _raise_errors(session, log.crashes, log.errors, f"stimulus {stimulus.id}")

    def since(times: Sequence[float]) -> list[float]:
        # To the microsecond: the pipeline's clock counts from an arbitrary base, whose float
        # rounding would otherwise differ in the last digits from run to run.
        return [round(t - origin, 6) for t in times if t >= origin]

    heard = since([t for t, name in log.events if name == "VADUserStartedSpeakingFrame"])
    # A bot whose mute strategy muted the caller drops the audio before its VAD: not deaf, it
    # chose not to listen (measured, as a LiveKit agent with interruptions off).
    muted = _muted_over(events, [(t - origin, on) for t, on in log.mutes])
    unheard = unheard_speech(events, heard=bool(heard) or muted)
    if unheard is not None:
        # Nothing the agent did (or did not do) can be put down to turn-taking then: a budget
        # would pass on an agent that heard nothing.
        raise AdapterError(
            f"stimulus {stimulus.id}: the pipeline's VAD never heard the caller speak "
            f"({unheard!r}), so its turn-taking could not be observed; {_VAD_HINT}"
        )
    return observation_of(
        stimulus,
        events,
        turns=since(log.user_stops),
        began=since(log.bot_started),
        halts=since(log.halts),
        resumes=(),
    )


def _muted_over(events: Sequence[Mapping[str, Any]], mutes: Sequence[tuple[float, bool]]) -> bool:
    """Whether the user was muted (``mutes``: when muted and unmuted, on the clip's clock)
    over any of the caller's words."""
    spans, since = [], None
    for at, on in mutes:
        if on and since is None:
            since = at
        elif not on and since is not None:
            spans.append((since, at))
            since = None
    if since is not None:
        spans.append((since, float("inf")))
    return any(
        a < float(e["end_s"]) and b > float(e["start_s"])
        for e in events
        if e["kind"] in CALLER_EVENTS
        for a, b in spans
    )


def _raise_errors(
    session: BotSession, crashes: Sequence[Any], errors: Sequence[str], when: str
) -> None:
    attempts = session.clock.network_attempts
    if attempts:
        raise AdapterError(
            f"{when}: the pipeline tried to reach the network ({', '.join(attempts[:3])}), "
            "which the turn-taking runner refuses: build the bot with offline services"
        )
    if crashes:
        raise crashes[0].labelled(f"{when}: the bot crashed")
    if errors:
        raise AdapterError(f"{when}: the pipeline reported an error: " + "; ".join(errors[:3]))
