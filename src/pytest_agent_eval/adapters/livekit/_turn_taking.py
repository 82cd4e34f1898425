"""A first runner: one stimulus through a real in-process LiveKit ``AgentSession`` (its VAD,
endpointing and interruption handling), in real time, recorded as an `Observation`.

The session gets the stimulus as its microphone (`FrameQueueInput`, 20 ms frames paced by the
wall clock), a scripted LLM and an offline TTS, so only turn-taking is under test. Its STT is
`_StimulusSTT`: for each speech segment the session's VAD cuts, it answers the words of the
stimulus's events whose audio lies in that segment (found by its samples in the clip), and
nothing for a segment of noise, as an STT that heard no words. Times are seconds on the clip's
clock: 0 is the first frame pushed; for a clip that plays over the agent, the agent's speech
starts first and the clip starts with it.

Real time, not the virtual clock: LiveKit's endpointing and false-interruption timers read the
wall clock (docs/turn-taking.md, "Not built yet"), so a stimulus takes its own length plus the
wait for an answer. Private and experimental: not wired into collection, gates or reports.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from livekit import rtc
from livekit.agents import Agent, AgentSession, llm

from ..._turn_taking._metrics import Observation
from ..._turn_taking._stimulus import Expected, Stimulus
from ...errors import ConfigError
from ...voice._clip import AudioClip, _numpy
from .offline._scripted import ScriptedLLM
from .offline._stt import SegmentSTT
from .offline._tts import SynthesizerTTS
from .session._io import CaptureAudioOutput, FrameQueueInput

__all__ = [
    "DEFAULT_SESSION_KWARGS",
    "SAMPLE_RATE",
    "observe_livekit",
    "observe_pack",
    "session_arguments",
]

SAMPLE_RATE = 16000
_FRAME = SAMPLE_RATE // 50  # 20 ms
_WORD_EVENTS = ("speech", "filler", "backchannel", "side_speech")
_CALLER_EVENTS = ("speech", "filler")
DEFAULT_SESSION_KWARGS: Mapping[str, Any] = {
    "turn_handling": {"turn_detection": "vad", "interruption": {"mode": "vad"}},
    "user_away_timeout": None,
    # LiveKit ignores the caller for its first seconds of speech while echo cancellation warms
    # up; the stimuli are clean audio, with no echo to cancel.
    "aec_warmup_duration": None,
}
"""LiveKit's own defaults otherwise (endpointing delays, false-interruption timeout, resume):
turn detection and interruptions by the VAD, as offline as the rest."""
AGENT_REPLY = "Sure, I can help with that. Let me check it for you right away."


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
) -> list[Observation]:
    """`observe_livekit` for each stimulus of a written pack (``pack.json`` in ``folder``), in
    order; ``ids`` picks some.

    Raises:
        ConfigError: ``ids`` names a stimulus the folder does not hold.
    """
    from ...voice._clip import read_wav

    listed = json.loads((folder / "pack.json").read_text(encoding="utf-8"))["stimuli"]
    by_id = {s["id"]: s for s in listed}
    missing = [i for i in ids or () if i not in by_id]
    if missing:
        raise ConfigError(
            f"{folder / 'pack.json'} lists no stimulus {', '.join(map(repr, missing))}; write "
            "the pack with --turn-taking-pack (and --stimulus for each id)"
        )
    chosen = [by_id[i] for i in ids] if ids is not None else listed
    out = []
    for doc in chosen:
        clip = read_wav(folder / doc["wav"])
        out.append(
            await observe_livekit(
                Stimulus.from_dict(doc),
                clip,
                doc["events"],
                vad=vad,
                session_kwargs=session_kwargs,
                tail_s=tail_s,
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
        start, end = span
        words = [
            str(e.get("text", ""))
            for e in self._stimulus_events
            if e["kind"] in _WORD_EVENTS and e["start_s"] < end and e["end_s"] > start
        ]
        return " ".join(w for w in words if w)


class _ObservingAgent(Agent):
    def __init__(self, turns: list[float], clock: Any) -> None:
        super().__init__(instructions="You answer the caller.")
        self._turns = turns
        self._clock = clock

    async def on_user_turn_completed(self, turn_ctx: llm.ChatContext, new_message: Any) -> None:
        self._turns.append(self._clock())


def _frames(clip: AudioClip) -> list[rtc.AudioFrame]:
    np = _numpy()
    pcm = (np.clip(clip.samples, -1.0, 1.0) * 32767).astype("<i2")
    pad = (-len(pcm)) % _FRAME
    pcm = np.concatenate([pcm, np.zeros(pad, dtype="<i2")])
    return [
        rtc.AudioFrame(pcm[i : i + _FRAME].tobytes(), SAMPLE_RATE, 1, _FRAME)
        for i in range(0, len(pcm), _FRAME)
    ]


async def observe_livekit(
    stimulus: Stimulus,
    clip: AudioClip,
    events: Sequence[Mapping[str, Any]],
    *,
    vad: Any,
    session_kwargs: Mapping[str, Any] | None = None,
    tail_s: float = 3.0,
) -> Observation:
    """Play ``stimulus`` (its rendered ``clip`` and ``events``) to a fresh ``AgentSession``
    and say what the agent did.

    Args:
        stimulus: The stimulus (its category, expectation and agent line).
        clip: Its audio, 16 kHz mono.
        events: Its sidecar's events.
        vad: The VAD (``silero.VAD.load()``); loaded once by the caller.
        session_kwargs: More ``AgentSession`` arguments, as the agent ships them (endpointing,
            interruption, turn detection), over `DEFAULT_SESSION_KWARGS`.
        tail_s: Seconds of silence streamed after the clip, for the answer to come.

    Raises:
        ValueError: The clip is not at 16 kHz.
    """
    if clip.sample_rate != SAMPLE_RATE:
        raise ValueError(f"the runner streams 16 kHz audio; the clip is at {clip.sample_rate} Hz")
    loop = asyncio.get_running_loop()
    origin = [loop.time()]

    def now() -> float:
        return loop.time() - origin[0]

    frames = _frames(clip)
    pcm = b"".join(bytes(f.data.cast("B")) for f in frames)
    turns: list[float] = []
    kwargs = session_arguments(session_kwargs)
    session: AgentSession[Any] = AgentSession(
        vad=vad,
        stt=_StimulusSTT(pcm, events),
        llm=ScriptedLLM([], default_reply=AGENT_REPLY, greeting=stimulus.agent_line or AGENT_REPLY),
        tts=SynthesizerTTS(backend="espeak", sample_rate=SAMPLE_RATE),
        **kwargs,
    )
    audio_in = FrameQueueInput()
    audio_out = CaptureAudioOutput(speed=1.0)
    session.input.audio = audio_in
    session.output.audio = audio_out
    speaking: list[tuple[float, str]] = []
    session.on(
        "agent_state_changed",
        lambda ev: speaking.append((now(), str(ev.new_state))),
    )
    await session.start(_ObservingAgent(turns, now))
    silence = _frames(AudioClip(_numpy().zeros(_FRAME, dtype="float32"), SAMPLE_RATE))[0]
    try:
        if stimulus.agent_speaking:
            session.generate_reply(instructions="Say your line.")
            deadline = time.monotonic() + 20.0
            while not audio_out.playing and time.monotonic() < deadline:
                audio_in.push(silence)
                await asyncio.sleep(0.02)
            if not audio_out.playing:
                raise RuntimeError("the agent never started speaking its line")
        origin[0] = loop.time()
        halts_before = len(audio_out.halts)
        turns.clear()
        speaking.clear()
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
    return _observation(
        stimulus, events, turns=seen_turns, states=seen_states, halts=halts, resumes=resumes
    )


def _observation(
    stimulus: Stimulus,
    events: Sequence[Mapping[str, Any]],
    *,
    turns: Sequence[float],
    states: Sequence[tuple[float, str]],
    halts: Sequence[float],
    resumes: Sequence[float],
) -> Observation:
    caller = [e for e in events if e["kind"] in _CALLER_EVENTS]
    caller_end = max((float(e["end_s"]) for e in caller), default=0.0)
    speech_s = sum(float(e["end_s"]) - float(e["start_s"]) for e in caller)
    interrupt_start = min((float(e["start_s"]) for e in caller), default=None)
    began = [t for t, state in states if state.endswith("speaking")]
    if stimulus.agent_speaking:
        # A turn of its own: a user turn committed, then the agent speaking again after it.
        turn_start = next((t for t in began if turns and t >= turns[0]), None)
        stopped = halts[0] if halts else None
        resumed = stopped is not None and any(r > stopped for r in resumes)
        if stimulus.expect is Expected.YIELD and stopped is not None:
            overlap = max(0.0, stopped - (interrupt_start or stopped))
        else:
            overlap = speech_s if stopped is None and speech_s else 0.0
        return Observation(
            stimulus_id=stimulus.id,
            category=stimulus.category,
            expect=stimulus.expect,
            caller_end_s=caller_end,
            agent_turn_start_s=turn_start,
            agent_stopped_s=stopped,
            agent_resumed=resumed,
            interrupt_start_s=interrupt_start,
            overlap_s=overlap,
            caller_speech_s=speech_s,
        )
    first = began[0] if began else None
    stopped = next((h for h in halts if first is not None and h > first), None)
    return Observation(
        stimulus_id=stimulus.id,
        category=stimulus.category,
        expect=stimulus.expect,
        caller_end_s=caller_end,
        agent_turn_start_s=first,
        agent_stopped_s=stopped,
        overlap_s=max(0.0, caller_end - first) if first is not None else 0.0,
        caller_speech_s=speech_s,
    )
