"""LiveKitAdapter: each run is one real AgentSession, fed text turns and WAV fixtures in-process."""

from __future__ import annotations

import inspect
import logging
import os
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from livekit.agents import Agent, AgentSession

from ....errors import AdapterError
from ....models import AudioCondition, Transcript
from ....voice._factory import takes_info
from ....voice._fixture_pcm import check_fixtures
from ..._closing import close_after_failure
from ...base import ConversationInfo
from .._audio import FixtureAudio, cached_fixture_audio, load_fixture_audio
from .._compat import agent_in_a_session
from .._logs import resolve_level
from ..offline._stt import SegmentSTT
from ._commit_twin import committed_turns_twin
from ._conversation import LiveKitConversation
from ._hearing import prove_fixture_texts, refuse_fixture_text_under_conditions
from ._hearing_twin import fixture_hearing_twin
from ._virtual import Clock, LiveKitRun, clock_setting, leave_if_unfit, start_virtual

__all__ = ["LiveKitAdapter", "SessionFactory", "SessionInfo"]


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """What a session factory may know about the run it builds a session for.

    A factory that takes one required positional argument gets this, e.g. to seed an agent
    per run: ``def make_session(info): ... random.Random(info.run_index) ...``.
    """

    transcript_id: str
    """Id of the transcript being run."""
    run_index: int
    """Zero-based index of the run."""
    transcript: Transcript
    """The transcript itself."""


SessionFactory = Callable[
    ..., "tuple[AgentSession[Any], Agent] | Awaitable[tuple[AgentSession[Any], Agent]]"
]
"""Returns a fresh ``(AgentSession, Agent)`` pair; sync or async; called once per run, with a
`SessionInfo` when it takes a required positional argument, else with none."""


class LiveKitAdapter:
    """Runs transcripts against a real LiveKit ``AgentSession``, one session per run.

    Each run gets a fresh session from ``session_factory``; every turn of the run goes to that
    same session, so the agent keeps its context across turns (the session's own history is
    the conversation; ``TurnInput.history`` is not replayed into it). A text turn is sent with
    ``session.run(user_input=...)``. An audio turn streams its WAV fixture (resampled and
    down-mixed to ``sample_rate``, cut into ``frame_ms`` frames, followed by
    ``tail_silence_s`` of silence) into the session's audio input, through the session's own
    VAD, STT, turn detection, LLM and tools.

    A turn ends when the agent is really done with it, decided from the session's events and
    state, never by a clock: every phrase of the fixture ended by the session's VAD and
    transcribed, no tool running, no handoff pending (the new agent started and its
    ``on_enter`` finished), no speech scheduled or playing, and the session idle. At the
    default max speed the phrases of a fixture go in one at a time, each once the agent is
    done with the one before, as the pause between them allows in a live call. Every wait is
    bounded by ``timeout_s``; on timeout the turn fails naming what was still pending.

    Per turn it captures the reply (everything the agent said in the turn, in order, including
    speech it started on its own), the tool calls the turn made with parsed arguments,
    outputs and errors, what the STT heard, the speech the agent started on its own
    (greeting, ``on_enter`` after a handoff, ``say`` from a tool) with its cause, the
    handoffs and the agent active at the end, the latency from the end of the user's speech
    (or from sending a text turn) to the first reply text and, with a TTS, to the first audio
    frame, and the LLM tokens spent. See docs/livekit.md for the ``metadata["livekit"]``
    shape.

    Args:
        session_factory: Returns a fresh ``(AgentSession, Agent)``, sync or async. It is
            called inside the running event loop, as ``AgentSession`` requires; a factory
            with a required positional parameter gets a `SessionInfo`.
        sample_rate: The one rate every fixture is converted to (a session's audio input
            must never change rate).
        frame_ms: Length of each audio frame pushed.
        timeout_s: Longest a turn (or the session start) may take.
        speed: Pacing of the audio: 0 pushes as fast as the pipeline accepts, 1.0 is real
            time, 2.0 twice as fast. The captured turns are the same at every speed as long
            as the endpointing delay is no longer than the VAD's ``min_silence_duration``.
        tail_silence_s: Silence appended to each fixture; it must exceed the VAD's
            ``min_silence_duration`` (0.55 s for Silero) for the user's turn to end.
        capture_audio: With a TTS in the session, attach an audio sink that records the
            reply audio and the time of its first frame.
        audio_out_dir: Save each turn's reply audio there as a WAV (``AgentReply.audio_out``);
            needs ``capture_audio`` and a TTS in the session.
        audio_in_dir: Save the exact audio each audio turn streams (after its audio
            conditions) there as a WAV (``AgentReply.audio_in``); pytest's
            ``--agent-eval-save-audio DIR`` (``ConversationInfo.save_audio_dir``) wins.
        log_level: While conversations are open, LiveKit's loggers are raised to this level
            (default WARNING) and tool tracebacks go to DEBUG; None leaves logging alone.
        grace_period_s: Accepted from the earlier package, with a `DeprecationWarning`, and
            ignored: a turn ends when the agent is done (decided from events).
        vad_replay: At max speed, hand the session's Silero VAD stream the decisions Silero
            made over the same fixture frames, with the same settings, when the adapter
            scanned the fixture (once per process), instead of computing them again each
            run. The session's pipeline runs on them as on computed ones; a fixture then
            costs one Silero pass per process. Only for ``silero.VAD`` itself and at
            ``speed=0`` (real-time runs measure the VAD's own time); False computes every
            time. See docs/livekit.md.
        clock: "virtual": max speed on a virtual clock; None: if a turn barges in (docs/livekit.md).

    Example:
        ```python
        @pytest.fixture
        def llm_eval_agent():
            def make_session():
                session = AgentSession(stt=FixtureTextSTT(), vad=VAD, llm=ScriptedLLM(RULES),
                                       **eval_session_kwargs())
                return session, BookingAgent()
            return LiveKitAdapter(make_session)
        ```
    """

    consumes_audio = True
    presses_keys = True
    """It presses a turn's ``dtmf:`` keys for the caller, so a turn of keys alone can run."""
    plays_far_end_audio = True
    """Streams a far end heard as audio (``far_end: {as: audio}``) into the agent."""

    def __init__(
        self,
        session_factory: SessionFactory,
        *,
        sample_rate: int = 24000,
        frame_ms: int = 20,
        timeout_s: float = 30.0,
        speed: float = 0.0,
        tail_silence_s: float = 1.0,
        capture_audio: bool = True,
        audio_out_dir: str | os.PathLike[str] | None = None,
        audio_in_dir: str | os.PathLike[str] | None = None,
        log_level: int | str | None = logging.WARNING,
        grace_period_s: float | None = None,
        vad_replay: bool = True,
        clock: Clock | None = None,
    ) -> None:
        if grace_period_s is not None:
            warnings.warn(
                f"LiveKitAdapter(grace_period_s={grace_period_s!r}) is ignored: turns now end "
                "when the agent is done (no tool running, no handoff or speech pending, the "
                "session listening again), decided from the session's events rather than after "
                "a fixed wait; remove the argument",
                DeprecationWarning,
                stacklevel=2,
            )
        if not callable(session_factory):
            raise TypeError(
                "LiveKitAdapter needs a session_factory: a function returning a fresh "
                f"(AgentSession, Agent) pair; got {type(session_factory).__name__}"
            )
        if sample_rate <= 0 or (sample_rate * frame_ms) % 1000:
            raise ValueError(
                f"LiveKitAdapter: sample_rate={sample_rate} and frame_ms={frame_ms} must give a "
                "whole number of samples per frame"
            )
        if frame_ms <= 0 or timeout_s <= 0 or speed < 0 or tail_silence_s < 0:
            raise ValueError(
                "LiveKitAdapter: frame_ms and timeout_s must be > 0; speed and tail_silence_s "
                "must be >= 0"
            )
        self.session_factory = session_factory
        self.sample_rate = sample_rate
        self.frame_ms = frame_ms
        self.timeout_s = timeout_s
        self.speed = speed
        self.tail_silence_s = tail_silence_s
        self.vad_replay = vad_replay
        self.clock = clock_setting(clock)
        self.capture_audio = capture_audio
        self.audio_out_dir = Path(audio_out_dir) if audio_out_dir is not None else None
        self.audio_in_dir = Path(audio_in_dir) if audio_in_dir is not None else None
        resolve_level(log_level)  # a bad name fails here, not in the first run
        self.log_level = log_level
        self._factory_takes_info = _takes_info(session_factory)

    # -- the adapter protocol -------------------------------------------------------------

    async def prepare(self, transcript: Transcript) -> None:
        """Check every audio fixture of ``transcript`` before any session is started.

        Raises:
            AudioFixtureError: For the first fixture missing, unreadable, empty or silent.
        """
        await check_fixtures(transcript, self.fixture_audio)

    async def start_conversation(self, info: ConversationInfo) -> LiveKitRun:
        """Build a fresh session with ``session_factory`` and start it.

        Raises:
            AdapterError: The factory returned something else than ``(AgentSession, Agent)``,
                the session lacks what audio turns need, or it did not start in time.
        """
        if (virtual := await start_virtual(self, info)) is not None:  # its thread: `_virtual`
            return virtual
        if self._factory_takes_info:
            made = self.session_factory(
                SessionInfo(
                    transcript_id=info.transcript.id,
                    run_index=info.run_index,
                    transcript=info.transcript,
                )
            )
        else:
            made = self.session_factory()
        if inspect.isawaitable(made):
            made = await made
        session, agent = leave_if_unfit(*_check_pair(made))  # (`_virtual`: an unfit session)
        refuse_fixture_text_under_conditions(session, info)
        await prove_fixture_texts(session, info.transcript)
        conversation = LiveKitConversation(self, session, agent, info)
        try:
            await conversation.start(needs_audio=_needs_audio(info.transcript))
        except BaseException as exc:
            await close_after_failure(conversation.aclose(), exc)
            raise
        return conversation

    with_fixture_hearing = fixture_hearing_twin  # attribution's counterfactuals: hearing,
    with_committed_turns = committed_turns_twin  # and turn-taking

    def turn_audio(
        self, path: Path, conditions: Sequence[AudioCondition] = (), seed: int = 0, keys: Any = None
    ) -> FixtureAudio:
        """What a turn streams: ``path`` as frames, after the tones of ``keys`` (``dtmf:``'s
        in_audio) and its ``conditions`` drawn with ``seed`` (without either, `fixture_audio`)."""
        from ....voice._fixture_pcm import turn_transform

        transform = turn_transform(path, conditions, seed, keys)
        if transform is None:
            return self.fixture_audio(path)
        return load_fixture_audio(
            path,
            sample_rate=self.sample_rate,
            frame_ms=self.frame_ms,
            tail_s=self.tail_silence_s,
            transform=transform,
        )

    def fixture_audio(self, path: Path) -> FixtureAudio:
        """``path`` as frames at this adapter's rate (validated; kept for the process while
        the file is unchanged, shared with other adapters)."""
        return cached_fixture_audio(
            path,
            sample_rate=self.sample_rate,
            frame_ms=self.frame_ms,
            tail_s=self.tail_silence_s,
        )


def _needs_audio(transcript: Transcript) -> bool:
    """True when the run streams audio: a turn has a fixture, or the far end is heard as audio
    (its turns get their clips as the call goes)."""
    far = transcript.far_end
    return transcript.has_audio or (far is not None and far.played_as == "audio")


def _takes_info(factory: Callable[..., Any]) -> bool:
    """True when ``factory``'s first positional parameter is required (it wants the info):
    ``def make_session(stt=None)`` keeps being called with no argument."""
    return takes_info(factory, star_args=False)


def _check_pair(made: Any) -> tuple[AgentSession[Any], Agent]:
    if (
        isinstance(made, tuple)
        and len(made) == 2
        and isinstance(made[0], AgentSession)
        and isinstance(made[1], Agent)
    ):
        session, agent = made
        # An Agent runs in one session at a time; LiveKit's own error for a reused one
        # ("an activity is already running") does not say what to change.
        if agent_in_a_session(agent):
            raise AdapterError(
                f"session_factory returned an Agent ({type(agent).__name__}) that is already "
                "running in another session; return a new Agent() on every call, since runs "
                "go in parallel"
            )
        stt_ = session.stt
        if isinstance(stt_, SegmentSTT) and stt_.has_listeners:
            raise AdapterError(
                f"session_factory returned a session whose STT ({type(stt_).__name__}) is "
                "already used by another open session; create the STT inside the factory, one "
                "per session (WhisperSTT caches its model per process, so this costs nothing)"
            )
        return session, agent
    raise AdapterError(
        "LiveKitAdapter's session_factory must return a fresh (AgentSession, Agent) pair; "
        f"it returned {type(made).__name__} {made!r:.80}"
    )
