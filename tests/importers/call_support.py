"""A real call, in-process: a microphone and a speaker in real time around an `AgentSession`,
recorded by livekit-agents' own `RecorderIO`, and the session report made from it.

LiveKit starts its recorder only inside a job (``AgentSession.start`` under a `JobContext`,
which an in-process test does not have), and ``JobContext.make_session_report`` needs that job.
So this does what those two do, with livekit's own classes: wraps the session's audio input and
output in ``RecorderIO.record_input``/``record_output`` before the session starts, starts the
recorder, and at the end builds the ``SessionReport`` from the same session fields
``make_session_report`` reads (its options, recorded events, history, usage, the recorder's
path and start time). The recorder clocks audio by arrival (wall time), as in a live call, so
the call runs in real time: the microphone hands the session one 20 ms frame per 20 ms,
silence when the caller is not speaking, and the speaker plays each reply for its duration.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from livekit import rtc
from livekit.agents import Agent, AgentSession
from livekit.agents.voice.io import AudioInput, AudioOutput, AudioOutputCapabilities
from livekit.agents.voice.recorder_io import RecorderIO
from livekit.agents.voice.report import SessionReport

from pytest_agent_eval.voice._fixtures import read_wav, resample, to_pcm16_bytes

__all__ = ["CALLER_LINES", "HERE", "RecordedCall", "record_call", "session_report", "typed_call"]

HERE = Path(__file__).resolve().parent
"""This folder, which the pytest projects of the replays put on sys.path (for call_agent)."""

CALLER_LINES = (
    "Hi, I am Alice and I would like a table for two at seven pm.",
    "What name is the booking under?",
)
"""What the caller says, in order (the agent greets first)."""

RATE = 24000
FRAME = RATE // 50


class Microphone(AudioInput):
    """The caller's microphone: a frame every 20 ms, of speech when `say` gave some."""

    def __init__(self) -> None:
        super().__init__(label="call.Microphone")
        self._pending = np.zeros(0, dtype=np.int16)
        self._spoken: asyncio.Future[None] | None = None
        self._next: float | None = None

    def say(self, pcm: np.ndarray) -> asyncio.Future[None]:
        """Queue speech; the future is done once its last frame went out."""
        self._pending = np.concatenate([self._pending, pcm])
        self._spoken = asyncio.get_running_loop().create_future()
        return self._spoken

    async def __anext__(self) -> rtc.AudioFrame:
        loop = asyncio.get_running_loop()
        # A microphone's clock: the call is real time because the recorder clocks by arrival.
        # When the loop was late (a busy machine), the clock slips rather than catching up in a
        # burst: frames stamped all at once would be laid over each other in the recording.
        self._next = max((self._next or loop.time()) + FRAME / RATE, loop.time())
        await asyncio.sleep(max(0.0, self._next - loop.time()))
        chunk, self._pending = self._pending[:FRAME], self._pending[FRAME:]
        if len(chunk) < FRAME:
            chunk = np.concatenate([chunk, np.zeros(FRAME - len(chunk), dtype=np.int16)])
        if not len(self._pending) and self._spoken is not None and not self._spoken.done():
            self._spoken.set_result(None)
        return rtc.AudioFrame(chunk.tobytes(), RATE, 1, FRAME)


class Speaker(AudioOutput):
    """The caller's speaker: each reply segment plays for its own duration, then reports it."""

    def __init__(self) -> None:
        super().__init__(label="call.Speaker", capabilities=AudioOutputCapabilities(pause=False))
        self._segment_s = 0.0
        self._started: float | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def capture_frame(self, frame: rtc.AudioFrame) -> None:
        await super().capture_frame(frame)
        if self._segment_s == 0.0:
            self._started = asyncio.get_running_loop().time()
            self.on_playback_started(created_at=time.time())
        self._segment_s += frame.duration

    def flush(self) -> None:
        super().flush()
        duration, self._segment_s = self._segment_s, 0.0
        if self._started is None:
            return
        loop = asyncio.get_running_loop()
        left = duration - (loop.time() - self._started)
        self._timer = loop.call_later(max(0.0, left), self._finish, duration, False)

    def _finish(self, position: float, interrupted: bool) -> None:
        self._started = self._timer = None
        self.on_playback_finished(playback_position=position, interrupted=interrupted)

    def clear_buffer(self) -> None:
        if self._timer is not None and self._started is not None:
            self._timer.cancel()
            self._finish(asyncio.get_running_loop().time() - self._started, True)


@dataclass(frozen=True)
class RecordedCall:
    report: Path
    recording: Path


async def _agent_done(states: asyncio.Queue[str]) -> None:
    """Until the agent has spoken and is listening again."""
    spoke = False
    while True:
        state = await states.get()
        spoke = spoke or state == "speaking"
        if spoke and state == "listening":
            return


async def record_call(
    session: AgentSession, agent: Agent, utterances: list[Path], folder: Path
) -> RecordedCall:
    """Hold a call: the agent greets, then the caller says each WAV in turn, waiting for
    each answer. Writes ``session_report.json`` and ``audio.ogg`` into ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    speech = [
        np.frombuffer(to_pcm16_bytes(resample(read_wav(p), RATE)), dtype=np.int16)
        for p in utterances
    ]
    microphone = Microphone()
    recorder = RecorderIO(agent_session=session)
    session.input.audio = recorder.record_input(microphone)
    session.output.audio = recorder.record_output(Speaker())
    states: asyncio.Queue[str] = asyncio.Queue()
    session.on("agent_state_changed", lambda ev: states.put_nowait(ev.new_state))
    await recorder.start(output_path=folder / "audio.ogg")
    try:
        await session.start(agent=agent)
        await asyncio.wait_for(_agent_done(states), 60)
        for pcm in speech:
            await microphone.say(pcm)
            await asyncio.wait_for(_agent_done(states), 60)
    finally:
        await session.aclose()
        await recorder.aclose()
    path = folder / "session_report.json"
    path.write_text(json.dumps(session_report(session, recorder).to_dict(), indent=2))
    return RecordedCall(report=path, recording=folder / "audio.ogg")


def session_report(session: AgentSession, recorder: RecorderIO | None = None) -> SessionReport:
    """The report ``JobContext.make_session_report`` would make of ``session``, from the same
    fields, for a session that ran outside a job."""
    report = SessionReport(
        job_id="in-process",
        room_id="",
        room="in-process-call",
        options=session.options,
        events=session._recorded_events,
        chat_history=session.history.copy(),
        audio_recording_path=recorder.output_path if recorder else None,
        audio_recording_started_at=recorder.recording_started_at if recorder else None,
        started_at=session._started_at,
        model_usage=session.usage.model_usage,
    )
    start = report.audio_recording_started_at or report.started_at
    report.duration = report.timestamp - start if start else None
    return report


async def typed_call(session: AgentSession, agent: Agent, lines: list[str]) -> dict[str, Any]:
    """A session that is typed to (``session.run(user_input=...)``), with no audio at all;
    its report's ``to_dict()``."""
    await session.start(agent=agent)
    try:
        for line in lines:
            await session.run(user_input=line)
    finally:
        await session.aclose()
    return session_report(session).to_dict()
