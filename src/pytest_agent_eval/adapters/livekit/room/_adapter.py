"""LiveKitRoomAdapter: each run is a call to a deployed agent, through a real LiveKit room."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Sequence
from pathlib import Path

from ....errors import AdapterError, ConfigError
from ....models import AudioCondition, Transcript
from ....voice._fixture_pcm import check_fixtures
from ..._closing import close_after_failure
from ...base import ConversationInfo
from .._audio import FixtureAudio, cached_fixture_audio, load_fixture_audio
from ._conversation import LiveKitRoomConversation, slug
from ._microphone import FRAME_MS, REAL_TIME
from ._observer import AUDIO_RATE
from ._sip import check_sip

__all__ = ["LiveKitRoomAdapter", "LiveKitRoomConversation"]


class LiveKitRoomAdapter:
    """Runs transcripts against a deployed LiveKit agent, one room per run, as a caller would.

    Per run it creates a uniquely named room (``livekit-api``), joins it as the caller with a
    token it mints, dispatches the agent named ``agent_name`` to it explicitly, and waits for
    the agent to join and listen. An audio turn publishes the turn's WAV fixture (after its
    audio conditions) as the caller's microphone, in 20 ms frames at real-time pace, with
    silence before and after (the microphone never stops, so the agent's VAD can end the
    turn); a text turn is sent on the chat topic the agent's RoomIO reads (``lk.chat``). The
    room is deleted at the end of the run, also after a failure, so the agent's job ends at
    once.

    With `publish_eval_events` in the agent's entrypoint, the agent's own process records each
    turn with the recorder `LiveKitAdapter` uses, so a room run returns the same records as an
    in-process run of the same agent: the reply, the tool calls with arguments, outputs and
    errors, what its STT heard (per segment), the speech it started on its own and why, the
    handoffs, the active agent, the greeting, the LLM tokens, and ``metadata["livekit"]`` with
    the same keys. The room adds what a caller experiences: the latencies from the end of the
    caller's input to the first reply text and to the first audible reply audio, and the reply
    audio (saved with ``audio_out_dir``). An audio turn's ``timeline`` is the one the agent's
    session kept in its process, with the caller's stream on the same axis (``real`` clock).

    A turn ends on events, never on a timer. For an audio turn, the agent has heard the whole
    fixture (its VAD ended speech where the fixture's speech ends), its STT transcribed every
    segment, and it answered what it heard, then settled as in process (no tool, handoff or
    speech pending); the room's reply streams have closed and the agent listens again. Every
    wait is bounded; a timeout says what was pending.

    Without the helper, a room shows no tool calls, agents or handoffs, and not whether the
    agent heard all of a fixture: audio turns and turns with tool or agent expectations fail,
    naming the helper; tool and agent checks error with ``tool_calls_unobserved`` and
    ``metadata["agents_unobserved_reason"]``. Text turns still run, ending when the reply
    streams closed and the agent listens again.

    An agent that stops answering (its process died) ends the turn within a few seconds, not
    after the server's participant timeout; a dispatch no worker took fails after
    ``dispatch_timeout_s``, naming the worker files found in the project and the names they
    register.

    Args:
        agent_name: The name the agent's worker registered (``rtc_session(agent_name=...)``).
        url: The server's URL (``ws://``, ``wss://``, ``http://`` or ``https://``); defaults
            to ``LIVEKIT_URL``.
        api_key: Defaults to ``LIVEKIT_API_KEY``.
        api_secret: Defaults to ``LIVEKIT_API_SECRET``.
        dispatch_metadata: Job metadata handed to the agent (``ctx.job.metadata``).
        join_timeout_s: Longest the start of a run may take: room, dispatch, the agent
            joining, listening and greeting.
        dispatch_timeout_s: Longest the server may take to hand the dispatch to a worker (it
            decides within about 5 s); a dispatch still without a job then fails at once.
        timeout_s: Longest a turn may take: waiting for the agent to be quiet, saying the
            input, and the whole reply.
        wait_for_greeting: Without the helper: the agent speaks first (``on_enter``), so wait
            for its greeting before turn 1. With the helper the greeting is always waited for.
        capture_audio: Subscribe to the agent's audio for first-audio latency and reply audio.
        audio_out_dir: Save each turn's reply audio there as a WAV (``AgentReply.audio_out``).
        audio_in_dir: Save the exact audio each audio turn says (after its audio conditions)
            there as a WAV (``AgentReply.audio_in``); ``--agent-eval-save-audio DIR`` wins.
        room_prefix: Start of every room name (``<prefix>-<transcript>-r<run>-<random>``).
        caller_identity: The caller's participant identity.
        log_level: LiveKit's loggers are raised to this level while conversations are open;
            None leaves logging alone.
        sip: Call the agent over a phone line instead of joining as a WebRTC caller: the SIP
            URI to dial, ``"sip:<number>@<host>:<port>"``, a number your inbound trunk answers
            at your LiveKit SIP service. Each run is a real call from a PJSIP phone (the
            ``sip`` extra) as the transcript's ``phone: caller_number``; the service's dispatch
            rule picks the room and must dispatch no agent (the adapter dispatches
            ``agent_name`` once it listens). Turns need audio fixtures; ``dtmf:`` keys are
            pressed as RFC 4733 events. docs/livekit-room.md, "Over SIP".
        sip_codec: ``"PCMU"`` or ``"PCMA"``, the G.711 law the phone offers.

    Raises:
        ConfigError: No URL, key or secret (neither given nor in the environment), a URL
            that is not a LiveKit URL, or a ``sip`` URI or ``sip_codec`` that is malformed.
        MissingExtraError: ``sip`` is given and pjsua2 (the ``sip`` extra) is not installed.

    Example:
        ```python
        @pytest.fixture
        def llm_eval_agent():
            return LiveKitRoomAdapter("booking-agent")   # LIVEKIT_URL/_API_KEY/_API_SECRET
        ```
    """

    consumes_audio = True
    agent_runs_in_worker = True
    """The agent runs in the worker's process (wrappers that patch the agent's process, such
    as `OpenAIRealtimeReplay`, refuse this adapter)."""

    def __init__(
        self,
        agent_name: str,
        *,
        url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        dispatch_metadata: str = "",
        join_timeout_s: float = 30.0,
        dispatch_timeout_s: float = 8.0,
        timeout_s: float = 60.0,
        wait_for_greeting: bool = False,
        capture_audio: bool = True,
        audio_out_dir: str | os.PathLike[str] | None = None,
        audio_in_dir: str | os.PathLike[str] | None = None,
        room_prefix: str = "agent-eval",
        caller_identity: str = "caller",
        log_level: int | str | None = logging.WARNING,
        sip: str | None = None,
        sip_codec: str = "PCMU",
    ) -> None:
        if not isinstance(agent_name, str) or not agent_name.strip():
            raise ConfigError(
                "LiveKitRoomAdapter needs the agent's name: the agent_name its worker "
                "registers with (@server.rtc_session(agent_name=...)); explicit dispatch "
                "needs one"
            )
        self.agent_name = agent_name
        self.url = _setting(url, "LIVEKIT_URL", "url")
        if not re.match(r"^(wss?|https?)://[^/\s]+", self.url):
            raise ConfigError(
                f"LiveKitRoomAdapter: {self.url!r} is not a LiveKit server URL; expected "
                "ws://host:port or wss://your-project.livekit.cloud (LIVEKIT_URL)"
            )
        self.api_key = _setting(api_key, "LIVEKIT_API_KEY", "api_key")
        self.api_secret = _setting(api_secret, "LIVEKIT_API_SECRET", "api_secret")
        if join_timeout_s <= 0 or timeout_s <= 0 or dispatch_timeout_s <= 0:
            raise ValueError(
                "LiveKitRoomAdapter: join_timeout_s, dispatch_timeout_s and timeout_s must be > 0"
            )
        self.dispatch_metadata = dispatch_metadata
        self.join_timeout_s = join_timeout_s
        self.dispatch_timeout_s = dispatch_timeout_s
        self.timeout_s = timeout_s
        self.wait_for_greeting = wait_for_greeting
        self.capture_audio = capture_audio
        self.audio_out_dir = Path(audio_out_dir) if audio_out_dir is not None else None
        self.audio_in_dir = Path(audio_in_dir) if audio_in_dir is not None else None
        self.room_prefix = slug(room_prefix) or "agent-eval"
        self.caller_identity = caller_identity
        self.log_level = log_level
        self.sip = check_sip(sip, sip_codec) if sip is not None else None
        self.sip_codec = sip_codec

    def __repr__(self) -> str:
        sip = f", sip={self.sip!r}" if self.sip else ""
        return f"LiveKitRoomAdapter({self.agent_name!r}, url={self.url!r}{sip})"

    # -- the adapter protocol -------------------------------------------------------------

    async def prepare(self, transcript: Transcript) -> None:
        """Check every audio fixture of ``transcript`` before any room is created.

        Raises:
            AdapterError: A turn interrupts the agent (``interrupt:``): barge-in is not
                supported in room mode; or, over SIP, a turn has no audio fixture.
            AudioFixtureError: For the first fixture that is missing, unreadable, empty or
                silent; the message names the transcript, the turn and the fix.
        """
        for index, turn in enumerate(transcript.turns):
            if self.sip is not None and turn.audio is None:
                raise AdapterError(
                    f"transcript {transcript.id!r}, turn {index + 1} has no audio fixture, and "
                    f"LiveKitRoomAdapter(sip={self.sip!r}) calls the agent on a phone line, "
                    "which carries no text: give the turn audio (voice: or audio:), or run "
                    "the transcript without sip="
                )
            if turn.interrupt is not None:
                raise AdapterError(
                    f"transcript {transcript.id!r}, turn {index + 1} interrupts the agent "
                    "(interrupt:), and LiveKitRoomAdapter does not perform barge-in: run this "
                    "transcript with LiveKitAdapter (in process, pipeline or realtime agents), "
                    "or drop interrupt: for room mode"
                )
        await check_fixtures(transcript, self.fixture_audio)

    async def start_conversation(self, info: ConversationInfo) -> LiveKitRoomConversation:
        """Create the run's room, join it, dispatch the agent and wait until it listens (and,
        with the helper, until it has greeted).

        Raises:
            AdapterError: The server is unreachable, rejected the credentials, no worker took
                the job, or the agent joined but did not start in time (the message says
                which, and what to check); or the session asks for a streaming speed other
                than real time.
        """
        if info.speed is not None and info.speed != REAL_TIME:
            # Refused before a room exists: a run that ignored the setting would report a speed
            # it never had.
            raise AdapterError(
                f"LiveKitRoomAdapter streams in real time only (the audio goes through a LiveKit "
                f"server as a caller speaks it), but the session's speed is {info.speed:g} "
                "(--agent-eval-speed or [tool.agent_eval] speed); leave it unset or set it to "
                "'realtime' for room mode"
            )
        conversation = LiveKitRoomConversation(self, info)
        try:
            await conversation.start()
        except BaseException as exc:
            await close_after_failure(conversation.aclose(after_failure=True), exc)
            raise
        return conversation

    def fixture_audio(self, path: Path, *, tail_s: float = 0.0) -> FixtureAudio:
        """``path`` as 20 ms frames at 48 kHz (validated; kept for the process while the file is
        unchanged, shared with other adapters)."""
        return cached_fixture_audio(path, sample_rate=AUDIO_RATE, frame_ms=FRAME_MS, tail_s=tail_s)

    def turn_audio(
        self,
        path: Path,
        conditions: Sequence[AudioCondition] = (),
        seed: int = 0,
        *,
        tail_s: float = 0.0,
    ) -> FixtureAudio:
        """What a turn says: ``path`` as frames, after its audio ``conditions`` drawn with
        ``seed`` (the fixture on disk is never changed; without conditions, `fixture_audio`)."""
        if not conditions:
            return self.fixture_audio(path, tail_s=tail_s)
        from ....voice._degrade import apply, babble_sources

        babble = (
            babble_sources(path)
            if any(c.kind == "noise" and c.params.get("color") == "babble" for c in conditions)
            else []
        )
        return load_fixture_audio(
            path,
            sample_rate=AUDIO_RATE,
            frame_ms=FRAME_MS,
            tail_s=tail_s,
            transform=lambda clip: apply(clip, conditions, seed, babble=babble),
        )


def _setting(value: str | None, env: str, name: str) -> str:
    value = value or os.environ.get(env, "")
    if not value.strip():
        raise ConfigError(
            f"LiveKitRoomAdapter needs {name}: pass {name}=... or set {env} (for LiveKit Cloud, "
            "the project's URL and an API key pair from its settings)"
        )
    return value.strip()
