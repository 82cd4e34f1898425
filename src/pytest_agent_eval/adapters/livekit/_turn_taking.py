"""Turn-taking stimuli through a real in-process LiveKit ``AgentSession`` (its VAD, turn
detection, endpointing and interruption handling), each recorded as an `Observation`.

The session is the agent's own (`observe_made` takes the factory the user's `LiveKitAdapter`
builds sessions with: its VAD, turn detection, endpointing, interruption and false-interruption
settings, its agent and that agent's ``on_user_turn_completed``), with three parts replaced so
only turn-taking is under test: a scripted LLM, an offline TTS and `_StimulusSTT`, which for each
speech segment the session's VAD cuts answers the words of the stimulus's events whose audio lies
in that segment (found by its samples in the clip), and nothing for a segment of noise, as an STT
that heard no words. An agent on a realtime model is run when its session takes the turns (its
VAD and turn detection): the model is replaced by a `ScriptedRealtimeModel` that hears through
`_StimulusSTT`; a model that keeps its own (server) turn detection is refused. Times are
seconds on the clip's clock: 0 is the first frame pushed; for a clip that plays over the agent,
the agent's speech starts first and the clip starts with it.

On the virtual clock (the default) the stimulus runs on a thread of its own whose clock jumps to
the next timer whenever nothing is runnable (`pytest_agent_eval.voice._clock`), so LiveKit's own
timers (the endpointing delay, the false-interruption timeout, the reply's playout) run in audio
time, as in production, at whatever speed this machine computes; ``clock="real"`` streams on the
wall clock instead (a stimulus then takes its own length plus the wait for an answer).
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from livekit import rtc
from livekit.agents import Agent, AgentSession, llm

from ..._turn_taking._metrics import Observation
from ..._turn_taking._observer import (
    AGENT_REPLY,
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
from ...voice._factory import takes_info
from ...voice._timeshim import install_time_shim
from ._compat import replace_agent_parts, session_skip_aec_warmup
from .offline._scripted import ScriptedLLM
from .offline._stt import SegmentSTT
from .offline._tts import SynthesizerTTS
from .realtime._scripted import ScriptedRealtimeModel
from .session._io import CaptureAudioOutput, FrameQueueInput
from .session._realtime import realtime_model_of, server_turn_detection
from .session._virtual import _pure_work

__all__ = [
    "DEFAULT_SESSION_KWARGS",
    "SAMPLE_RATE",
    "MakeSession",
    "TurnClock",
    "adapter_observer",
    "observe_livekit",
    "observe_made",
    "observe_pack",
    "session_arguments",
]

_FRAME = SAMPLE_RATE // 50  # 20 ms
DEFAULT_SESSION_KWARGS: Mapping[str, Any] = {
    "turn_handling": {"turn_detection": "vad", "interruption": {"mode": "vad"}},
    "user_away_timeout": None,
    # LiveKit ignores the caller for its first seconds of speech while echo cancellation warms
    # up; the stimuli are clean audio, with no echo to cancel.
    "aec_warmup_duration": None,
}
"""LiveKit's own defaults otherwise (endpointing delays, false-interruption timeout, resume):
turn detection and interruptions by the VAD, as offline as the rest."""


def session_arguments(given: Mapping[str, Any] | None) -> dict[str, Any]:
    """`DEFAULT_SESSION_KWARGS` with ``given`` over them; ``turn_handling`` is merged key by
    key, so ``{"turn_handling": {"endpointing": {"min_delay": 1.5}}}`` keeps the VAD's turn
    detection."""
    merged: dict[str, Any] = dict(DEFAULT_SESSION_KWARGS)
    for key, value in (given or {}).items():
        if key == "turn_handling" and isinstance(value, Mapping):
            merged[key] = {**merged[key], **value}
        else:
            merged[key] = value
    return merged


async def observe_pack(
    folder: Path,
    ids: Sequence[str] | None = None,
    *,
    vad: Any,
    session_kwargs: Mapping[str, Any] | None = None,
    tail_s: float = 3.0,
    clock: TurnClock = "virtual",
) -> list[Observation]:
    """`observe_livekit` for each stimulus of a written pack (``pack.json`` in ``folder``), in
    order; ``ids`` picks some.

    Raises:
        ConfigError: ``ids`` names a stimulus the folder does not hold.
    """
    out = []
    for played in read_pack(folder, ids):
        out.append(
            await observe_livekit(
                played.stimulus,
                played.clip,
                played.events,
                vad=vad,
                session_kwargs=session_kwargs,
                tail_s=tail_s,
                clock=clock,
            )
        )
    return out


class _StimulusSTT(SegmentSTT):
    """Hears, in each segment, the words of the stimulus events its audio covers."""

    def __init__(self, pcm: bytes, events: Sequence[Mapping[str, Any]]) -> None:
        super().__init__()
        self._pcm = pcm
        self._stimulus_events = list(events)

    @property
    def model(self) -> str:
        return "stimulus-events"

    def _span(self, data: bytes) -> tuple[float, float] | None:
        """Where ``data`` (16-bit samples) lies in the clip, in seconds; None when it is
        silence or not from the clip. The probe starts at its first sound: the VAD's segment
        may begin with silence, which is everywhere."""
        lead = len(data) - len(data.lstrip(b"\x00"))
        lead -= lead % 2
        probe = data[lead : lead + 3200]
        if len(probe) < 2:
            return None
        at = self._pcm.find(probe)
        while at >= 0 and at % 2:
            at = self._pcm.find(probe, at + 1)
        if at < 0:
            return None
        start = (at - lead) / 2 / SAMPLE_RATE
        return start, start + len(data) / 2 / SAMPLE_RATE

    async def _transcribe(self, frame: rtc.AudioFrame) -> str:
        span = self._span(bytes(frame.data.cast("B")))
        if span is None:
            return ""
        return words_in(self._stimulus_events, *span)


MakeSession = Callable[[], Awaitable[tuple[AgentSession[Any], Agent]]]
"""Builds the fresh, not yet started ``(session, agent)`` one stimulus is played to."""

TurnClock = Literal["real", "virtual"]

_SETTLE_S = 1.0
"""Silence streamed after the session starts, before waiting for it to be quiet: an agent that
greets in ``on_enter`` has begun by then, and the clip waits until it is done."""
_READY_S = 30.0
"""Most seconds (the session's) the agent may take to be quiet, or to start its line."""
_WALL_S = 120.0
"""Most wall seconds one stimulus may take on the virtual clock (a loop kept busy)."""


def _default_session(vad: Any, session_kwargs: Mapping[str, Any] | None) -> MakeSession:
    async def make() -> tuple[AgentSession[Any], Agent]:
        session: AgentSession[Any] = AgentSession(vad=vad, **session_arguments(session_kwargs))
        return session, Agent(instructions="You answer the caller.")

    return make


async def observe_livekit(
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    *,
    vad: Any,
    session_kwargs: Mapping[str, Any] | None = None,
    tail_s: float = 3.0,
    clock: TurnClock = "virtual",
) -> Observation:
    """`observe_made` with a session of LiveKit's defaults (`DEFAULT_SESSION_KWARGS`, with
    ``session_kwargs`` over them) and ``vad`` (``silero.VAD.load()``, loaded once by the
    caller)."""
    return await observe_made(
        stimulus,
        clip,
        events,
        _default_session(vad, session_kwargs),
        tail_s=tail_s,
        clock=clock,
    )


async def observe_made(
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    make: MakeSession,
    *,
    tail_s: float = 3.0,
    clock: TurnClock = "virtual",
) -> Observation:
    """Play ``stimulus`` (its rendered ``clip`` and ``events``) to the session ``make`` builds
    and say what the agent did.

    Args:
        stimulus: The stimulus (its category, expectation and agent line).
        clip: Its audio, 16 kHz mono.
        events: Its sidecar's events.
        make: Builds the session and agent (called on the loop the stimulus runs on).
        tail_s: Seconds of silence streamed after the clip, for the answer to come.
        clock: "virtual" (LiveKit's timers in audio time) or "real".

    Raises:
        ValueError: The clip is not at 16 kHz.
        AdapterError: The session cannot be run this way (a realtime model taking its turns
            itself, no VAD), or the agent never went quiet or never started its line.
        AgentTimeoutError: On the virtual clock, the stimulus took more than two minutes of
            wall time (something kept the session's loop busy).
    """
    if clip.sample_rate != SAMPLE_RATE:
        raise ValueError(f"the runner streams 16 kHz audio; the clip is at {clip.sample_rate} Hz")
    work = _observe(stimulus, clip, events, make, tail_s=tail_s)
    if clock == "real":
        return await work
    install_time_shim()
    thread = PipelineThread(
        PipelineClock(rate=None, perf=True),
        name=f"turn-taking {stimulus.id}",
        allow_network=False,
        inline=_pure_work,
    )
    async with thread.stopped_after(10.0):
        try:
            return await asyncio.wait_for(thread.run(work), _WALL_S)
        except TimeoutError:
            raise AgentTimeoutError(
                f"stimulus {stimulus.id}: no end within {_WALL_S:g} s of wall time on the "
                "virtual clock; the session's loop was busy (code computing without yielding, "
                "or blocking it)"
            ) from None


def adapter_observer(adapter: Any, transcript: Transcript, *, tail_s: float) -> TurnTakingObserver:
    """The turn-taking runner of a `LiveKitAdapter`: each stimulus gets a fresh session from the
    adapter's own ``session_factory`` (called with a `SessionInfo` when it asks for one), run
    on the virtual clock whatever the adapter's ``clock``: LiveKit's timers then keep the
    agent's production settings in audio time, and the verdict cannot depend on how fast this
    machine streams."""
    from .session._adapter import SessionInfo

    factory = adapter.session_factory
    wants_info = takes_info(factory, star_args=False)
    runs = [0]

    def maker() -> MakeSession:
        index = runs[0]
        runs[0] += 1

        async def make() -> tuple[AgentSession[Any], Agent]:
            made = (
                factory(
                    SessionInfo(transcript_id=transcript.id, run_index=index, transcript=transcript)
                )
                if wants_info
                else factory()
            )
            if inspect.isawaitable(made):
                made = await made
            if not (
                isinstance(made, tuple)
                and len(made) == 2
                and isinstance(made[0], AgentSession)
                and isinstance(made[1], Agent)
            ):
                raise AdapterError(
                    "the session factory must return (AgentSession, Agent), got "
                    f"{type(made).__name__}"
                )
            return made[0], made[1]

        return make

    async def observe(played: PlayedStimulus) -> Observation:
        return await observe_made(
            played.stimulus, played.clip, played.events, maker(), tail_s=tail_s
        )

    return TurnTakingObserver(framework="livekit", clock="virtual", observe=observe)


def _script(
    session: AgentSession[Any], agent: Agent, stimulus: Stimulus, stt: SegmentSTT
) -> llm.RealtimeModel | None:
    """Replace what the session would say and hear with the stimulus's script, or say why the
    session cannot be tested so. For an agent on a realtime model, the model is replaced by a
    `ScriptedRealtimeModel` of the same capabilities (hearing the stimulus's words, speaking
    with the offline voice), and the agent's own model is returned: the session's turn-taking
    is measured only if the session, not the model, takes the turns (`_check_turn_owner`)."""
    realtime = realtime_model_of(session, agent)
    no_vad = session.vad is None and _not_given(agent.vad)
    cloud_vad = not no_vad and _in_cloud(session.vad if _not_given(agent.vad) else agent.vad)
    if realtime is not None and (no_vad or cloud_vad):
        raise AdapterError(
            _realtime_takes_turns(
                realtime,
                session,
                why=(
                    "the session's VAD is LiveKit's inference VAD, AgentSession's default, "
                    "which runs in LiveKit Cloud"
                    if cloud_vad
                    else "the session has no VAD"
                ),
            )
        )
    if no_vad:
        raise AdapterError(
            "the session has no VAD: turn-taking conformance streams audio through the agent's "
            "own VAD (give AgentSession vad=silero.VAD.load())"
        )
    if cloud_vad:
        raise AdapterError(
            "the session's VAD is LiveKit's inference VAD (AgentSession's default), which "
            "runs in LiveKit Cloud; turn-taking conformance runs offline: give the session a "
            "VAD that runs in process (vad=silero.VAD.load())"
        )
    if realtime is None:  # (a realtime model's session: once it started, `_check_turn_owner`)
        _refuse_cloud_turn_detection(session, agent)
    tts = SynthesizerTTS(backend="espeak", sample_rate=SAMPLE_RATE)
    greeting = stimulus.agent_line or AGENT_REPLY
    if realtime is None:
        scripted: ScriptedLLM | ScriptedRealtimeModel = ScriptedLLM(
            [], default_reply=AGENT_REPLY, greeting=greeting
        )
        session_stt: SegmentSTT | None = stt
    else:
        caps = realtime.capabilities
        scripted = ScriptedRealtimeModel(
            [],
            default_reply=AGENT_REPLY,
            greeting=greeting,
            hearing=stt,
            turn_detection="server" if caps.turn_detection else "client",
            can_disable_turn_detection=caps.can_disable_turn_detection,
            audio=caps.audio_output,
            voice=tts,
            auto_tool_reply=caps.auto_tool_reply_generation,
        )
        # The model hears the caller; an STT the session has (for transcripts) stays one.
        session_stt = stt if session.stt is not None else None
    replace_agent_parts(session, stt=session_stt, llm=scripted, tts=tts)
    replace_agent_parts(agent, stt=stt, llm=scripted, tts=tts)
    # The stimuli are clean audio, with no echo to cancel: LiveKit would otherwise ignore the
    # caller during its first seconds of speech.
    session_skip_aec_warmup(session)
    return realtime


def _check_turn_owner(
    session: AgentSession[Any], agent: Agent, realtime: llm.RealtimeModel | None
) -> None:
    """After the session started: refuse a realtime agent whose model kept its own (server)
    turn detection, as LiveKit resolved it for this session; else one whose session takes
    the turns with LiveKit's cloud turn detector (the model's own detection off, LiveKit
    uses the session's)."""
    if realtime is None:
        return
    if server_turn_detection(session):
        raise AdapterError(
            _realtime_takes_turns(
                realtime, session, why="its server-side turn detection is on in this session"
            )
        )
    _refuse_cloud_turn_detection(session, agent)


def _in_cloud(component: object) -> bool:
    """A component of LiveKit Inference (its VAD, its turn detector): it runs in LiveKit
    Cloud, over the network, so it cannot be measured offline."""
    return type(component).__module__.startswith("livekit.agents.inference")


def _refuse_cloud_turn_detection(session: AgentSession[Any], agent: Agent) -> None:
    """Refuse a turn detection of LiveKit Inference (the agent's if it sets one, else the
    session's): AgentSession's default when no turn_detection is given, it asks LiveKit Cloud
    when a turn ends; offline it cannot, and what would be measured is not the agent's."""
    from livekit.agents.types import NotGiven

    own = not isinstance(agent.turn_detection, NotGiven)
    chosen = agent.turn_detection if own else session.turn_detection
    if chosen is None or isinstance(chosen, str) or not _in_cloud(chosen):
        return
    whose = (
        "the agent's turn detection"
        if own
        else "the session's turn detection (AgentSession's default when none is given)"
    )
    raise AdapterError(
        f"{whose} is LiveKit's inference turn detector ({type(chosen).__name__}), which runs "
        "in LiveKit Cloud; turn-taking conformance runs offline: give the session "
        'turn_handling={"turn_detection": "vad"}, or a local turn detector model '
        "(livekit-plugins-turn-detector: turn_detection=MultilingualModel(), its files "
        "cached by the agent's download-files step)"
    )


def _turn_detection_shown(session: AgentSession[Any]) -> str:
    given = session.turn_detection
    if given is None or isinstance(given, str):
        return repr(given)
    return f"a {type(given).__name__}, AgentSession's default when none is given"


def _realtime_takes_turns(model: llm.RealtimeModel, session: AgentSession[Any], *, why: str) -> str:
    name = type(model).__name__
    if model.capabilities.can_disable_turn_detection:
        fix = (
            "give the AgentSession vad=silero.VAD.load() and "
            'turn_handling={"turn_detection": "vad"} (or a turn detector model) explicitly: '
            f"LiveKit then turns {name}'s own turn detection off "
            f"(the session's turn_detection now: {_turn_detection_shown(session)})"
        )
    else:
        fix = (
            f"create {name} with its own turn detection off (OpenAI: RealtimeModel("
            "turn_detection=None); Gemini Live: realtime_input_config with "
            "automatic_activity_detection disabled) and give the AgentSession "
            'vad=silero.VAD.load() and turn_handling={"turn_detection": "vad"} (or a turn '
            "detector model)"
        )
    return (
        f"the agent's realtime model ({name}) takes the turns itself ({why}), so LiveKit's "
        "session does not decide when the agent speaks or yields; the model's server VAD runs "
        "on the provider's servers and cannot be measured offline (a stand-in's turn-taking "
        "would be measured, not the model's). To measure the "
        f"turn-taking of the session instead, {fix}"
    )


def _not_given(value: object) -> bool:
    from livekit.agents.types import NotGiven

    return value is None or isinstance(value, NotGiven)


def _frames(clip: AudioClip) -> list[rtc.AudioFrame]:
    np = _numpy()
    pcm = (np.clip(clip.samples, -1.0, 1.0) * 32767).astype("<i2")
    pad = (-len(pcm)) % _FRAME
    pcm = np.concatenate([pcm, np.zeros(pad, dtype="<i2")])
    return [
        rtc.AudioFrame(pcm[i : i + _FRAME].tobytes(), SAMPLE_RATE, 1, _FRAME)
        for i in range(0, len(pcm), _FRAME)
    ]


async def _observe(
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    make: MakeSession,
    *,
    tail_s: float,
) -> Observation:
    loop = asyncio.get_running_loop()
    origin = [loop.time()]

    def now() -> float:
        return loop.time() - origin[0]

    frames = _frames(clip)
    pcm = b"".join(bytes(f.data.cast("B")) for f in frames)
    session, agent = await make()
    realtime = _script(session, agent, stimulus, _StimulusSTT(pcm, events))
    audio_in = FrameQueueInput()
    audio_out = CaptureAudioOutput(speed=1.0)
    session.input.audio = audio_in
    session.output.audio = audio_out
    turns: list[float] = []
    speaking: list[tuple[float, str]] = []
    session.on("agent_state_changed", lambda ev: speaking.append((now(), str(ev.new_state))))
    heard: list[float] = []
    session.on(
        "user_state_changed",
        lambda ev: heard.append(now()) if str(ev.new_state) == "speaking" else None,
    )
    session.on(
        "conversation_item_added",
        lambda ev: turns.append(now()) if getattr(ev.item, "role", None) == "user" else None,
    )
    silence = _frames(AudioClip(_numpy().zeros(_FRAME, dtype="float32"), SAMPLE_RATE))[0]

    async def stream_until(done: Callable[[], bool], what: str) -> None:
        deadline = time.monotonic() + _READY_S
        while not done():
            if time.monotonic() >= deadline:
                raise AdapterError(f"stimulus {stimulus.id}: {what} within {_READY_S:g} s")
            audio_in.push(silence)
            await asyncio.sleep(0.02)

    await session.start(agent)
    try:
        _check_turn_owner(session, agent, realtime)
        settle_until = time.monotonic() + _SETTLE_S
        await stream_until(
            lambda: (
                time.monotonic() >= settle_until
                and str(session.agent_state) == "listening"
                and not audio_out.playing
            ),
            "the agent never went quiet after it started (its greeting did not end)",
        )
        if stimulus.agent_speaking:
            session.generate_reply(instructions="Say your line.")
            await stream_until(lambda: audio_out.playing, "the agent never started its line")
        origin[0] = loop.time()
        halts_before = len(audio_out.halts)
        turns.clear()
        speaking.clear()
        heard.clear()
        perf_origin = time.perf_counter()
        start = loop.time()
        for index, frame in enumerate(frames + [silence] * round(tail_s * 50)):
            audio_in.push(frame)
            delay = start + (index + 1) * 0.02 - loop.time()
            await asyncio.sleep(max(0.0, delay))
        # What happened while the clip and its tail played; closing the session stops the
        # agent too, which is not the agent's doing.
        halts = [h - perf_origin for h in audio_out.halts[halts_before:]]
        resumes = [r - perf_origin for r in audio_out.resumes if r - perf_origin >= 0]
        seen_turns, seen_states = list(turns), list(speaking)
    finally:
        await session.aclose()
    unheard = unheard_speech(events, heard=bool(heard))
    if unheard is not None:
        # Nothing the agent did (or did not do) can be put down to turn-taking then: a budget
        # would pass on an agent that heard nothing.
        raise AdapterError(
            f"stimulus {stimulus.id}: the session's VAD ({type(session.vad).__name__}) never "
            f"heard the caller speak ({unheard!r}), so its turn-taking could not be observed; "
            "give the session a VAD that runs in process (vad=silero.VAD.load()) and check "
            "its settings (min_speech_duration, activation_threshold)"
        )
    began = [t for t, state in seen_states if state.endswith("speaking")]
    return observation_of(
        stimulus, events, turns=seen_turns, began=began, halts=halts, resumes=resumes
    )
