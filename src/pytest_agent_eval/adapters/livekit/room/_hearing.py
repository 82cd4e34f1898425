"""How the agent hears, in its own process: whether its VAD and STT have taken in the whole
fixture of the turn in progress (see `_events`: when an audio turn is done), and what the caller
needs to know to say a fixture to it (its VAD's settings; for a realtime agent, its model).
"""

from __future__ import annotations

import asyncio
import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._compat import (
    LiveKitInternalsError,
    activity_recognition,
    session_activity,
    vad_settings,
    watch_vad_events,
)
from ..offline._stt import FixtureTextSTT, SegmentSTT

if TYPE_CHECKING:
    from livekit.agents import AgentSession

__all__ = [
    "HEARD_TOLERANCE_S",
    "FixtureHearing",
    "Heard",
    "RealtimeHeard",
    "realtime_info",
    "realtime_model",
    "still_to_hear",
]

HEARD_TOLERANCE_S = 0.25
"""How far before the fixture's end of speech the agent's VAD may end its last segment and the
fixture still count as heard. The two timelines are matched at the start of the first segment,
and differ by where the codec lets the VAD hear the onset and by the receiver's jitter buffer
stretching time: over 31 runs of a 5 s fixture on 2 cores (10 of them with 4 busy processes
beside) the agent's end came 0.16 s early to 0.54 s late. A piece the agent's VAD splits off at
a gap a busy machine delays into the audio starts at least its min_silence_duration (0.55 s
for Silero) after the gap began, so only a last piece shorter than this could go unnoticed."""


@dataclasses.dataclass
class RealtimeHeard:
    """What a realtime agent's session reported of the audio turn in progress."""

    phrases: int
    transcripts: list[str] = dataclasses.field(default_factory=list)
    """Every final transcript of the model's, empty ones included, in order."""
    speeches: int = 0
    """Speech handles created since the turn began."""
    answered_speeches: int = 0
    """Speech handles created when the phrase before the current one was answered."""
    proven: bool = False
    """The model hears the transcripts the caller proved, one per phrase, in order."""


@dataclasses.dataclass
class Heard:
    """What the agent's VAD and STT did with the audio of the turn in progress."""

    ends: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    """``(start, end)`` of each speech segment the VAD ended, on the agent's audio timeline."""
    finals: int = 0
    segments: int = 0
    """Segments a `SegmentSTT` finished (empty ones too)."""
    segments_with_words: int = 0


class FixtureHearing:
    """The agent's VAD and STT on the turn in progress, followed across agents (a new agent
    listens with a new recognition, whose VAD timeline starts at 0: it continues where the last
    one stopped). Every change sets ``changed``."""

    def __init__(self, session: AgentSession[Any], changed: asyncio.Event) -> None:
        self._session = session
        self._changed = changed
        self.heard = Heard()
        self.fixture: dict[str, float] | None = None
        """Where the fixture's speech starts and ends (the caller's scan); None: no audio turn."""
        self.vad_problem: str | None = None
        """Why the helper cannot watch the agent's VAD, if it cannot."""
        self._recognition: Any = None
        self._vad_base_s = 0.0
        self._vad_last_s = 0.0

    def begin(self, fixture: dict[str, float] | None) -> None:
        """A turn begins: nothing heard of ``fixture`` yet."""
        self.heard = Heard()
        self.fixture = fixture

    def missing(self) -> str | None:
        """What the agent has still to hear or transcribe of the fixture (None: nothing)."""
        heard, fixture = self.heard, self.fixture
        if fixture is not None:
            left = still_to_hear(
                heard.ends, float(fixture["first_start_s"]), float(fixture["last_end_s"])
            )
            if left == math.inf:
                return "the agent's VAD to hear the fixture's speech (no end of speech yet)"
            if left is not None:
                return (
                    f"the agent's VAD to hear the fixture to its end (it ended speech "
                    f"{len(heard.ends)} time(s), {left:.2f} s of the fixture's speech "
                    "still to come)"
                )
        if not self.transcribed():
            return (
                f"the agent's STT to transcribe every speech segment its VAD ended "
                f"({self.transcribed_count()} of {len(heard.ends)} so far)"
            )
        return None

    def ends_in_fixture_time(self) -> list[float]:
        """Where the agent's VAD ended each segment, in seconds into the fixture (its timeline
        matched to the fixture's at the start of its first segment)."""
        ends, fixture = self.heard.ends, self.fixture
        if not ends or fixture is None:
            return []
        shift = float(fixture["first_start_s"]) - ends[0][0]
        return [round(end + shift, 3) for _start, end in ends]

    def transcribed_count(self) -> int:
        heard = self.heard
        return heard.segments if isinstance(self._session.stt, SegmentSTT) else heard.finals

    def transcribed(self) -> bool:
        heard = self.heard
        if isinstance(self._session.stt, SegmentSTT):
            # Every segment finished, and the ones with words were reported to the session.
            return heard.segments >= len(heard.ends) and heard.finals >= heard.segments_with_words
        return heard.finals >= len(heard.ends)

    # -- the session's VAD and STT ----------------------------------------------------------

    def follow_recognition(self) -> None:
        """Watch the VAD of the recognition the session listens with now (a new agent listens
        with a new one, whose timeline starts at 0: it continues where the last one stopped)."""
        try:
            activity = session_activity(self._session)
            recognition = activity_recognition(activity) if activity is not None else None
            if recognition is None or recognition is self._recognition:
                return
            watch_vad_events(recognition, self.on_vad_event)
        except LiveKitInternalsError as exc:
            self.vad_problem = f"the helper cannot watch the agent's VAD: {exc}"
            return
        self._recognition = recognition
        self._vad_base_s += self._vad_last_s
        self._vad_last_s = 0.0

    def on_vad_event(self, event: Any) -> None:
        from livekit.agents import vad as lk_vad

        stamp = float(event.timestamp)
        if event.type == lk_vad.VADEventType.INFERENCE_DONE:
            self._vad_last_s = max(self._vad_last_s, stamp)
        elif event.type == lk_vad.VADEventType.END_OF_SPEECH:
            end = self._vad_base_s + stamp
            self.heard.ends.append((end - float(event.speech_duration), end))
            self._changed.set()

    def on_segment(self, text: str) -> None:
        self.heard.segments += 1
        self.heard.segments_with_words += bool(text.strip())
        self._changed.set()

    def on_final(self) -> None:
        """The agent's STT sent a final transcript with words."""
        self.heard.finals += 1
        self._changed.set()

    def vad_hello(self) -> dict[str, Any]:
        """``hello``'s ``vad`` and ``vad_problem``: the settings of the agent's VAD, which the
        caller scans the fixture with (null, and the problem, when it cannot)."""
        self.follow_recognition()
        vad = self._session.vad
        settings = vad_settings(vad) if vad is not None else None
        problem = self.vad_problem
        if vad is None:
            problem = "the agent's session has no VAD"
        elif settings is None or _vad_kind(vad) != "livekit.plugins.silero.vad.VAD":
            problem = (
                f"the agent's VAD ({_vad_kind(vad)}) is not Silero's, the one whose cuts "
                "the test can reproduce"
            )
            settings = None
        return {"vad": settings, "vad_problem": problem}


def still_to_hear(
    ends: Sequence[tuple[float, float]], first_start_s: float, last_end_s: float
) -> float | None:
    """Seconds of a fixture's speech the agent's VAD has still to hear; None once it has heard
    it to the end (within `HEARD_TOLERANCE_S`), ``inf`` before it ended any speech.

    Args:
        ends: ``(start, end)`` of each speech segment the agent's VAD ended since the fixture
            began, on its own audio timeline (the end is where it declared the end of speech).
        first_start_s: Where the fixture's speech starts, in seconds into the fixture.
        last_end_s: Where a fresh stream of the agent's VAD declares the end of the fixture's
            last segment.
    """
    if not ends:
        return math.inf
    due = ends[0][0] + last_end_s - first_start_s
    last = max(end for _start, end in ends)
    return None if last >= due - HEARD_TOLERANCE_S else due - last


def _vad_kind(vad: Any) -> str:
    return f"{type(vad).__module__}.{type(vad).__qualname__}"


def realtime_model(session: AgentSession[Any]) -> Any:
    """The realtime model the current agent hears with, when the session has no STT."""
    if session.stt is not None:
        return None
    from ..session._realtime import realtime_model_of

    return realtime_model_of(session)


def realtime_info(session: AgentSession[Any]) -> dict[str, Any] | None:
    """What the caller needs to say an audio turn to a realtime agent (`_protocol`: ``hello``)."""
    model = realtime_model(session)
    if model is None:
        return None
    from ..realtime._scripted import ScriptedRealtimeModel
    from ..session._realtime import server_turn_detection

    try:
        server = server_turn_detection(session)
    except LiveKitInternalsError as exc:
        return {"model": type(model).__name__, "vad_problem": str(exc), "hearing": "model"}
    server = True if server is None else server
    problem: str | None = None
    vad: Any = None
    if isinstance(model, ScriptedRealtimeModel):
        hearing = model.hearing
        heard_by = (
            "none"
            if hearing is None
            else "provenance"
            if isinstance(hearing, FixtureTextSTT)
            else type(hearing).__name__
        )
        vad = model.vad if server else session.vad
    else:
        heard_by = "model"
        vad = None if server else session.vad
    settings = vad_settings(vad) if vad is not None else None
    if vad is not None and (settings is None or _vad_kind(vad) != "livekit.plugins.silero.vad.VAD"):
        problem = (
            f"the VAD that takes the realtime agent's turns ({_vad_kind(vad)}) is not "
            "Silero's, the one whose cuts the test can reproduce"
        )
        settings = None
    elif vad is None and not server:
        problem = "the session takes the realtime agent's turns but has no VAD"
    return {
        "model": type(model).__name__,
        "turn_detection": "server" if server else "session",
        "vad": settings,
        "vad_problem": problem,
        "hearing": heard_by,
    }
