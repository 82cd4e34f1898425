"""Audio turns for an agent on a realtime (speech-to-speech) model, in-process.

Such an agent has no STT: the fixture's audio goes to the model as production sends it, and what
the model transcribed is what was heard. Its turns are taken by the model's server-side
detection, or by the session's VAD when the agent asks for that and the model can hand turns to
the client; `RealtimeAudio` leaves that choice as the agent made it and reports it.

No single session event ends a realtime turn (``wait_for_idle`` returns before the reply that
follows a tool). A phrase is answered once the model's final transcript of it came, a reply was
created for it, and `TurnRecorder.settle` found nothing left (no speech handle, tool, handoff or
``on_enter`` pending, the session idle). Phrases go in one at a time, each once the agent is done
with the one before, at every speed: the pause a caller leaves.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livekit.agents import AgentSession, llm
from livekit.agents import vad as lk_vad
from livekit.agents.types import NOT_GIVEN
from livekit.agents.utils import is_given
from livekit.agents.voice.events import SpeechCreatedEvent, UserInputTranscribedEvent

from ....errors import AdapterError
from ....voice._segments import SpeechSegment
from .._audio import FixtureAudio
from .._compat import (
    activity_rt_turn_detection,
    recognition_vad_stream,
    session_activity,
    session_skip_aec_warmup,
)
from .._segments import flush_session_vad, frames_for_phrase, scan_fixture
from .._turn import SLOW_AGENT, Stage, TurnRecorder
from ..offline._stt import FixtureTextSTT
from ..realtime._scripted import ScriptedRealtimeModel
from ._io import FrameQueueInput

__all__ = [
    "RealtimeAudio",
    "RealtimeTurn",
    "disable_aec_warmup",
    "realtime_model_of",
    "server_turn_detection",
    "warn_switched_turn_detection",
]

_warned: set[tuple[str, str]] = set()


def realtime_model_of(session: AgentSession[Any], agent: Any = None) -> llm.RealtimeModel | None:
    """The realtime model the session's current agent (or ``agent``) talks to, if any: the
    agent's own ``llm`` when it has one, else the session's."""
    if agent is None:
        try:
            agent = session.current_agent
        except RuntimeError:
            agent = None
    own = agent.llm if agent is not None else NOT_GIVEN
    model = own if is_given(own) and own is not None else session.llm
    return model if isinstance(model, llm.RealtimeModel) else None


def server_turn_detection(session: AgentSession[Any]) -> bool | None:
    """True when the running agent's turns are taken by the model's server, False when by the
    session; None when the session runs no realtime agent right now."""
    activity = session_activity(session)
    return None if activity is None else activity_rt_turn_detection(activity)


def disable_aec_warmup(session: AgentSession[Any]) -> None:
    """No echo-cancellation warm-up: there is no echo in a test, and during the warm-up (3 s of
    the agent's first speech by default) the session feeds the model silence instead of the
    caller, so a barge-in's first seconds would be lost."""
    session_skip_aec_warmup(session)


def warn_switched_turn_detection(session: AgentSession[Any], model: llm.RealtimeModel) -> None:
    """Say so (once per model class) when the session took the turns off a model that takes
    them on its server in production: ``turn_detection="vad"`` (as `eval_session_kwargs` sets)
    tests the session's VAD instead of the model's own turn-taking."""
    caps = model.capabilities
    if not (caps.turn_detection and caps.can_disable_turn_detection):
        return
    if server_turn_detection(session) is not False:
        return
    key = (type(model).__module__, type(model).__qualname__)
    if key in _warned:
        return
    _warned.add(key)
    warnings.warn(
        f"the agent's realtime model ({type(model).__name__}) takes turns on its server unless "
        "the session is given turn_handling={'turn_detection': 'vad'} (which "
        "eval_session_kwargs() sets), and this session was: the evals test the session's VAD "
        "taking turns, not the model's. To test the turn-taking production uses, build the "
        "session with eval_session_kwargs(turn_detection=None) or without a turn detection",
        UserWarning,
        stacklevel=2,
    )


@dataclass
class RealtimeTurn:
    """What the session reported of the user's side in one realtime audio turn."""

    transcripts: list[str] = field(default_factory=list)
    """Every final transcript of the model's, empty ones included, in order."""
    speeches: int = 0
    """Speech handles created since the turn began."""
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class RealtimeAudio:
    """Streams audio turns into a session whose agent runs on a realtime model.

    Made by `LiveKitConversation` for a transcript with audio turns, when the session's agent
    talks to a realtime model; it listens to the session for the whole conversation.
    """

    def __init__(
        self,
        session: AgentSession[Any],
        recorder: TurnRecorder,
        audio_in: FrameQueueInput,
        *,
        speed: float,
    ) -> None:
        self._session = session
        self._recorder = recorder
        self._audio_in = audio_in
        self._speed = speed
        self.turn = RealtimeTurn()
        session.on("user_input_transcribed", self._on_transcript)
        session.on("speech_created", self._on_speech)

    def detach(self) -> None:
        self._session.off("user_input_transcribed", self._on_transcript)
        self._session.off("speech_created", self._on_speech)

    def _on_transcript(self, ev: UserInputTranscribedEvent) -> None:
        if ev.is_final:
            self.turn.transcripts.append(ev.transcript)
            self.turn.changed.set()

    def _on_speech(self, ev: SpeechCreatedEvent) -> None:
        self.turn.speeches += 1
        self.turn.changed.set()

    async def _until(self, done: Any) -> None:
        while not done():
            self.turn.changed.clear()
            await self._recorder.guard(self.turn.changed.wait())

    # -- one audio turn -------------------------------------------------------------------

    def model(self) -> llm.RealtimeModel:
        model = realtime_model_of(self._session)
        if model is None:
            raise AdapterError(
                "the session's agent no longer talks to a realtime model, so this audio turn "
                "has no STT to be heard with; give every agent of the session an STT or a "
                "realtime model"
            )
        return model

    async def segments(
        self, audio: FixtureAudio, path: Path, stage: Stage
    ) -> tuple[SpeechSegment, ...]:
        """Where the turns' VAD (the model's, on the server, or the session's) cuts ``audio``,
        once every frame streamed before reached it and it was started afresh."""
        session, model = self._session, self.model()
        stage.set("the session to take the audio streamed before this turn")
        await self._recorder.guard(self._audio_in.taken())
        await asyncio.sleep(0)  # the session hands each frame taken to the model on
        server = server_turn_detection(session)
        recognition = self._recorder.probe.recognition
        if recognition is not None and recognition_vad_stream(recognition) is not None:
            # The session's own VAD (taking the turns, or only the user's state) starts the
            # fixture afresh too, as in a pipeline agent's turn.
            await self._recorder.guard(flush_session_vad(recognition, self._audio_in.taken))
        vad: lk_vad.VAD | None
        if server is not False and isinstance(model, ScriptedRealtimeModel):
            model.reset_turn_detection()
            vad = model.vad
        else:
            vad = session.vad
            if vad is None and server is False:
                raise AdapterError(
                    "the session takes the realtime agent's turns (turn_detection='vad') but "
                    "has no VAD; give it vad=silero.VAD.load()"
                )
        if vad is None:
            from ..realtime._scripted import _shared_vad

            vad = _shared_vad()  # where a provider's server VAD will cut, approximately
        stage.set(f"the speech segments of {path} (one VAD pass, once per fixture)")
        scan = await scan_fixture(vad, audio, 0)
        return scan.segments

    def prime(self, path: Path, user: str, segments: tuple[SpeechSegment, ...]) -> None:
        """Hand a scripted model's `FixtureTextSTT` the fixture's phrases, one per segment."""
        model = self.model()
        if isinstance(model, ScriptedRealtimeModel) and isinstance(model.hearing, FixtureTextSTT):
            model.hearing.clear()
            spans = [(s.end_s - s.speech_s, s.end_s) for s in segments]
            model.hearing.expect(path, user, spans, detected=[s.detected_s for s in segments])

    async def stream(
        self,
        audio: FixtureAudio,
        segments: tuple[SpeechSegment, ...],
        path: Path,
        stage: Stage,
        anchors: list[float],
        *,
        settle_last: bool = True,
    ) -> int:
        """Stream the fixture phrase by phrase, each answered before the next; returns the
        phrase count. ``anchors`` gets the time each phrase's speech was streamed to its end
        when streaming is paced. Without ``settle_last``, the last phrase counts as answered
        once its reply was created (a barge-in is to speak over it)."""
        self.turn = RealtimeTurn()
        n = len(segments)
        pushed = 0
        for k, segment in enumerate(segments, start=1):
            before = self.turn.speeches
            # The last phrase streams the whole tail: the model's VAD sees every frame.
            upto = frames_for_phrase(segment, segments[k], audio) if k < n else len(audio.frames)
            end_frame = min(len(audio.frames) - 1, int(segment.end_s / audio.frame_s))
            await self._push(audio, pushed, upto, end_frame, anchors)
            pushed = upto
            await self.answered(
                k, n, path, stage, speeches_before=before, settle=settle_last or k < n
            )
        return n

    async def answered(
        self,
        k: int,
        n: int,
        path: Path,
        stage: Stage,
        *,
        speeches_before: int,
        settle: bool = True,
    ) -> None:
        """Wait until the agent is done with phrase ``k`` of ``n``: the model's transcript of
        it, a reply created since the phrase began streaming (``speeches_before`` had been),
        and nothing left pending."""
        turn = self.turn
        stage.set(
            f"the realtime model's transcript of phrase {k} of {n} in {path} "
            f"(user_input_transcribed; user state {self._session.user_state!r})",
            hint=(
                "The model never reported hearing this phrase: its turn detection did not end "
                "it (a pause in the fixture right at the VAD's min_silence_duration?), or it "
                "failed to hear (see the session errors)."
            ),
        )
        await self._until(lambda: len(turn.transcripts) >= k or self._recorder.unrecoverable)
        self._raise_errors(path)
        if not turn.transcripts[k - 1].strip():
            raise AdapterError(
                f"the realtime model heard nothing in phrase {k} of {n} of {path}: its "
                "transcript came back empty, so the agent got no user turn"
            )
        stage.set(
            f"the agent's reply to phrase {k} of {n} in {path} (speech_created)",
            hint=(
                "With user state 'speaking', the session's VAD has not ended the turn, and a "
                "model whose server takes the turns answers after it (as a provider's answer "
                "arrives): give that VAD a min_silence_duration under the silence after the "
                "phrase (LiveKitAdapter(tail_silence_s=...) for the last one). " + SLOW_AGENT
            ),
        )
        await self._until(lambda: turn.speeches > speeches_before or self._recorder.unrecoverable)
        self._raise_errors(path)
        if settle:
            await self._recorder.settle(stage.set)
            self._raise_errors(path)

    def _raise_errors(self, path: Path) -> None:
        if self._recorder.unrecoverable:
            raise AdapterError(
                f"the realtime model failed on the audio {path}: "
                + "; ".join(self._recorder.errors)
            )

    async def _push(
        self, audio: FixtureAudio, start: int, upto: int, end_frame: int, anchors: list[float]
    ) -> None:
        frames = audio.frames
        if self._speed <= 0:
            for i in range(start, upto):
                self._audio_in.push(frames[i])
                if i % 25 == 24:
                    await asyncio.sleep(0)
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        began = loop.time()
        for i in range(start, upto):
            due = began + (i - start) * audio.frame_s / self._speed
            if (delay := due - loop.time()) > 0:
                await asyncio.sleep(delay)  # pacing a microphone, not waiting for an event
            self._audio_in.push(frames[i])
            if i == end_frame:
                anchors.append(time.perf_counter())

    def describe(self) -> dict[str, Any]:
        """What ``metadata["livekit"]["realtime"]`` says of the turn."""
        model = realtime_model_of(self._session)
        server = server_turn_detection(self._session)
        return {
            "model": type(model).__name__ if model is not None else None,
            "turn_detection": "server" if server else "session",
            "transcripts": list(self.turn.transcripts),
        }
