"""LiveKitRoomAdapter: each run is a call to a deployed agent, through a real LiveKit room."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
from livekit import api, rtc
from livekit.plugins import silero

from ....errors import (
    AdapterError,
    AgentCrashError,
    AgentEvalError,
    AgentTimeoutError,
    AudioFixtureError,
    ConfigError,
)
from ....models import (
    AgentReply,
    AgentSpeech,
    AudioCondition,
    Greeting,
    Handoff,
    ToolCall,
    Transcript,
    Turn,
    Usage,
    describe_conditions,
)
from ....voice._fixture_pcm import check_fixtures, save_reply_audio, save_streamed_audio
from ....voice._heard import segment_words
from ....voice._segments import SpeechSegment
from ....voice._unheard import no_speech_error
from ...base import ConversationInfo, TurnInput
from .._audio import FixtureAudio, cached_fixture_audio, load_fixture_audio
from .._logs import hold_livekit_logs
from .._segments import frames_for_phrase, scan_segments
from .._turn import speech_dict
from ._events import EVAL_EVENTS_VERSION, EVAL_LISTENER_ATTRIBUTE, EVAL_RPC_METHOD
from ._logs import quiet_room_shutdown
from ._observer import AUDIO_RATE, RoomObserver, RoomTurnLog, joined, unobserved_timeline
from ._workers import no_worker_advice

__all__ = [
    "AGENTS_HINT",
    "HEARING_HINT",
    "HELPER_HINT",
    "LiveKitRoomAdapter",
    "LiveKitRoomConversation",
]

FRAME_MS = 20
"""Length of each microphone frame sent."""

TOPIC_CHAT = "lk.chat"
"""The text-stream topic an agent's RoomIO reads typed user input from."""

_HELPER = "add publish_eval_events(session) (from pytest_agent_eval.adapters.livekit) to the agent's entrypoint"

HELPER_HINT = f"a LiveKit room shows no tool calls: {_HELPER} so the test can see them"
"""Why a room run's tool calls are not observable, and the fix (``metadata``
``["tool_calls_unobserved_reason"]`` when the agent does not publish them)."""

AGENTS_HINT = (
    "a LiveKit room does not show which agent is active or the handoffs between agents: "
    f"{_HELPER} so the test can see them"
)
"""Why a room run's agents and handoffs are not observable (``metadata``
``["agents_unobserved_reason"]`` when the agent does not publish them)."""

HEARING_HINT = (
    "a LiveKit room does not show whether the agent has heard the whole audio fixture and its "
    "STT has transcribed every part of it (an agent on a busy machine answers the first part "
    f"of a fixture with a pause while it still transcribes the rest): {_HELPER}"
)
"""Why an audio turn cannot end for a known reason without the agent-side helper."""

_MIC_LEAD_S = 0.5
"""How far ahead of real time the microphone keeps its queue. The track sends silence when its
queue runs dry, so a caller process held up for longer than this (a busy CI machine) would cut
a gap into the speech, which the agent hears as the end of a phrase. Latencies are unaffected:
they count from when the last frame leaves the queue, not from when it was handed over."""

_SCAN_TAIL_S = 1.0
"""Silence after a fixture when the caller finds its speech with the agent's VAD settings (the
microphone sends silence after it too): past any VAD's min_silence_duration."""

_PING_EVERY_S = 1.0
_PING_ACK_S = 3.0
"""The caller asks the agent's participant every second whether it is there (LiveKit RPC: its
SDK acknowledges at once, in native code, with or without the helper). A process that died
sends nothing, and the server only drops its participant after its reconnect window (about
20 s); a missing acknowledgement says so within a few seconds."""

_DISPATCH_POLL_S = 0.25
"""How often the start of a run asks the server whether a worker took the dispatch: the server
tells a room nothing about a dispatch it could not place."""

_RPC_S = 10.0
"""Longest the agent's helper may take to answer a request (they answer at once; a busy agent
process is slow)."""
_GONE_S = 2.0  # after a failed request, how long the room may take to say the agent left

_scan_vads: dict[tuple[tuple[str, Any], ...], Any] = {}
"""Silero VADs built with agents' settings, to find a fixture's speech as the agent's VAD
does (one model per settings for the process)."""


REAL_TIME = 1.0
"""The only streaming speed of room mode: a LiveKit server carries the audio as it is spoken."""


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
    audio (saved with ``audio_out_dir``).

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

    Raises:
        ConfigError: No URL, key or secret (neither given nor in the environment), or a URL
            that is not a LiveKit URL.

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
        self.room_prefix = _slug(room_prefix) or "agent-eval"
        self.caller_identity = caller_identity
        self.log_level = log_level

    def __repr__(self) -> str:
        return f"LiveKitRoomAdapter({self.agent_name!r}, url={self.url!r})"

    # -- the adapter protocol -------------------------------------------------------------

    async def prepare(self, transcript: Transcript) -> None:
        """Check every audio fixture of ``transcript`` before any room is created.

        Raises:
            AdapterError: A turn interrupts the agent (``interrupt:``): barge-in is not
                supported in room mode.
            AudioFixtureError: For the first fixture that is missing, unreadable, empty or
                silent; the message names the transcript, the turn and the fix.
        """
        for index, turn in enumerate(transcript.turns):
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
        except BaseException:
            await conversation.aclose(after_failure=True)
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


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:40]


@dataclass
class _Stage:
    """What the conversation is waiting for right now, for timeout messages."""

    text: str = "starting"

    @property
    def waits_on_agent(self) -> bool:
        """Whether this is a wait on the agent itself (to take a turn, reply, finish speaking):
        its every stage reads "the agent ...". Our own work (loading and scanning a fixture,
        the caller's microphone, sending text) and the agent's eval helper answering are not:
        a deadline there means the turn could not be delivered, an ERROR."""
        return self.text.startswith("the agent") and "eval helper" not in self.text


class _Microphone:
    """The caller's microphone: 20 ms frames at real-time pace, silence when nothing is said."""

    def __init__(self, source: rtc.AudioSource) -> None:
        self._source = source
        self._per_frame = AUDIO_RATE * FRAME_MS // 1000
        self._silence = rtc.AudioFrame(
            data=b"\0\0" * self._per_frame,
            sample_rate=AUDIO_RATE,
            num_channels=1,
            samples_per_channel=self._per_frame,
        )
        self._queue: asyncio.Queue[tuple[tuple[rtc.AudioFrame, ...], asyncio.Future[float]]]
        self._queue = asyncio.Queue()
        self._task = asyncio.create_task(self._run(), name="agent-eval-microphone")

    def say(self, frames: tuple[rtc.AudioFrame, ...]) -> asyncio.Future[float]:
        """Queue ``frames``; the future gets the time their last sample leaves the caller."""
        done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._queue.put_nowait((frames, done))
        return done

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        frame_s = FRAME_MS / 1000
        start = loop.time()
        sent = 0
        while True:
            if self._queue.empty():
                frames: tuple[rtc.AudioFrame, ...] = (self._silence,)
                done = None
            else:
                frames, done = self._queue.get_nowait()
            for frame in frames:
                due = start + sent * frame_s - _MIC_LEAD_S
                if (delay := due - loop.time()) > 0:
                    await asyncio.sleep(delay)  # pacing a microphone, not waiting for an event
                elif delay < -1.0:
                    # The loop fell far behind (a long pause); restart the clock rather than
                    # bursting a second of audio at once.
                    start, sent = loop.time() + _MIC_LEAD_S, 0
                await self._source.capture_frame(frame)
                sent += 1
            if done is not None and not done.done():
                done.set_result(time.perf_counter() + self._source.queued_duration)

    async def aclose(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        while not self._queue.empty():
            _frames, done = self._queue.get_nowait()
            done.cancel()


class _CallerSide:
    """The caller's side of a room holds LiveKit's log scope only to keep it quiet: the agent's
    tools run in the worker, so no tool exception ever belongs to this process."""

    def owns_speech(self, speech_id: str) -> bool:
        return False

    def on_tool_exception(
        self, *, call_id: str | None, function: str | None, speech_id: str | None, text: str
    ) -> None:
        return None


class LiveKitRoomConversation:
    """One run: a room with the caller and the agent; turns in, `AgentReply` out."""

    def __init__(self, adapter: LiveKitRoomAdapter, info: ConversationInfo) -> None:
        self.adapter = adapter
        self.info = info
        transcript = _slug(info.transcript.id) or "run"
        self.room_name = (
            f"{adapter.room_prefix}-{transcript}-r{info.run_index + 1}-{uuid.uuid4().hex[:8]}"
        )
        """The room of this run (deleted when the run ends)."""
        self._greeting: Greeting | None = None
        self._api: api.LiveKitAPI | None = None
        self._room: rtc.Room | None = None
        self._observer: RoomObserver | None = None
        self._mic: _Microphone | None = None
        self._fixture_end_s: float | None = None
        self._helper: dict[str, Any] | None = None
        """The agent-side helper's hello (None: the agent does not publish eval events)."""
        self._room_created = False
        self._dispatch_id: str | None = None
        self._watchers: list[asyncio.Task[None]] = []
        self._stage = _Stage()
        self._closed = False
        self._quiet = contextlib.ExitStack()

    @property
    def observer(self) -> RoomObserver:
        """What the caller has seen of the agent so far."""
        if self._observer is None:
            raise AdapterError("this LiveKit room conversation has not started")
        return self._observer

    def greeting(self) -> Greeting | None:
        """What the agent said and did on its own before turn 1 (an empty `Greeting` when it
        said nothing); None when it could not be observed (no helper, and not
        ``wait_for_greeting``). The runner reads it into `RunResult.greeting`, where a
        transcript's ``greeting:`` checks and the reports find it."""
        if self._greeting is None:
            return None
        return Greeting(list(self._greeting.speech), list(self._greeting.tool_calls))

    @property
    def greeting_text(self) -> str:
        """The greeting's text ("" when the agent said nothing or it was not observed)."""
        return self._greeting.text if self._greeting is not None else ""

    @property
    def publishes_eval_events(self) -> bool:
        """True when the agent runs `publish_eval_events` (its turns are recorded agent-side)."""
        return self._helper is not None

    # -- start ----------------------------------------------------------------------------

    async def start(self) -> None:
        adapter = self.adapter
        self._quiet.enter_context(hold_livekit_logs(_CallerSide(), adapter.log_level))
        self._quiet.enter_context(quiet_room_shutdown())
        needs_audio = self.info.transcript.has_audio
        async with self._deadline(adapter.join_timeout_s, "the start of the run"):
            self._stage.text = f"the LiveKit server at {adapter.url} to create the room"
            self._api = api.LiveKitAPI(adapter.url, adapter.api_key, adapter.api_secret)
            await self._server_call(
                self._api.room.create_room(
                    api.CreateRoomRequest(name=self.room_name, empty_timeout=60)
                )
            )
            self._room_created = True

            self._stage.text = "the caller to join the room"
            room = self._room = rtc.Room()
            observer = self._observer = RoomObserver(
                room, caller_identity=adapter.caller_identity, capture_audio=adapter.capture_audio
            )
            token = (
                api.AccessToken(adapter.api_key, adapter.api_secret)
                .with_identity(adapter.caller_identity)
                .with_name("pytest-agent-eval caller")
                .with_attributes({EVAL_LISTENER_ATTRIBUTE: "1"})
                .with_grants(api.VideoGrants(room_join=True, room=self.room_name))
                .to_jwt()
            )
            try:
                await room.connect(adapter.url, token, rtc.RoomOptions(auto_subscribe=True))
            except rtc.ConnectError as exc:
                hint = ""
                if "timed out" in str(exc) and re.search(
                    r"//(127\.|localhost|\[::1\])", adapter.url
                ):
                    hint = (
                        ". The media connection timed out: WebRTC ignores loopback interfaces, so "
                        "a server on 127.0.0.1 needs another interface carrying a loopback "
                        "address (docs/livekit-room.md, Pitfalls: Loopback)"
                    )
                raise AdapterError(
                    f"the caller could not join room {self.room_name!r} at {adapter.url}: "
                    f"{exc}{hint}"
                ) from exc
            if needs_audio:
                source = rtc.AudioSource(AUDIO_RATE, 1)
                track = rtc.LocalAudioTrack.create_audio_track("caller-microphone", source)
                await room.local_participant.publish_track(
                    track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
                )
                self._mic = _Microphone(source)

            self._stage.text = f"the server to accept the dispatch of agent {adapter.agent_name!r}"
            dispatch = await self._server_call(
                self._api.agent_dispatch.create_dispatch(
                    api.CreateAgentDispatchRequest(
                        agent_name=adapter.agent_name,
                        room=self.room_name,
                        metadata=adapter.dispatch_metadata,
                    )
                )
            )
            self._dispatch_id = dispatch.id

            self._stage.text = f"agent {adapter.agent_name!r} to join room {self.room_name!r}"
            observer.find_agent()
            placed = asyncio.create_task(self._watch_dispatch(), name="agent-eval-dispatch")
            self._watchers.append(placed)
            await observer.until(lambda: observer.agent is not None)
            placed.cancel()
            self._watchers.append(asyncio.create_task(self._watch_agent(), name="agent-eval-ping"))
            self._stage.text = (
                f"the agent ({observer.agent_identity}) to start its session and listen "
                "(lk.agent.state)"
            )
            await observer.until(lambda: observer.agent_state is not None)
            if needs_audio:
                self._stage.text = (
                    f"the agent ({observer.agent_identity}) to subscribe to the caller's microphone"
                )
                await observer.until(lambda: observer.mic_subscribed)
            self._stage.text = f"the agent ({observer.agent_identity}) to answer the eval helper"
            self._helper = await self._hello()
            await self._greet()

    async def _greet(self) -> None:
        """Wait for the agent's greeting as far as it can be observed (see `greeting`)."""
        observer = self.observer
        if self._helper is not None:
            self._stage.text = "the agent to finish starting and greeting (publish_eval_events)"
            await self._request("settle", turn=None)
            await observer.until(lambda: None in observer.captures)
            await observer.until(observer.quiet)
            capture = observer.captures[None]
            _raise_crash(capture, "before turn 1")
            if capture.get("error"):
                raise AdapterError(f"the agent failed while starting: {capture['error']}")
            self._greeting = Greeting(
                [_speech(s) for s in capture.get("agent_speech") or []],
                [ToolCall.from_dict(c) for c in capture.get("tool_calls") or []],
            )
        elif self.adapter.wait_for_greeting:
            self._stage.text = "the agent's greeting (wait_for_greeting=True)"
            await observer.until(lambda: bool(observer.replies) and observer.quiet())
            text = joined(r.text for r in observer.replies)
            self._greeting = Greeting([AgentSpeech(text=text, cause="greeting")] if text else [])
        elif self.info.transcript.greeting is not None:
            raise AdapterError(
                f"transcript {self.info.transcript.id!r} checks the greeting, but a LiveKit room "
                f"does not show when the agent has finished greeting: {_HELPER}, or pass "
                f"LiveKitRoomAdapter(wait_for_greeting=True) for an agent that always speaks "
                f"first{self._old_helper_note()}"
            )

    async def _hello(self) -> dict[str, Any] | None:
        """The helper's hello, or None when the agent does not run it."""
        try:
            answer = await self._request("hello")
        except rtc.RpcError as exc:
            if exc.code == rtc.RpcError.ErrorCode.UNSUPPORTED_METHOD:
                return None
            raise AdapterError(
                f"the agent ({self.observer.agent_identity}) did not answer the eval helper's "
                f"hello: {exc.message} ({exc.code})"
            ) from None
        if answer.get("v") != EVAL_EVENTS_VERSION:
            raise AdapterError(self._outdated(answer.get("v")))
        return answer

    def _outdated(self, version: Any) -> str:
        return (
            f"the agent's publish_eval_events speaks version {version} of the eval events and "
            f"this pytest-agent-eval speaks {EVAL_EVENTS_VERSION}: install the same "
            "pytest-agent-eval in the worker's environment as in the tests'"
        )

    def _old_helper_note(self) -> str:
        version = self.observer.helper_version
        if version is not None and version != EVAL_EVENTS_VERSION:
            return f" ({self._outdated(version)})"
        return ""

    async def _request(self, op: str, **fields: Any) -> dict[str, Any]:
        """One request to the agent's helper (see `_room_events`)."""
        assert self._room is not None
        observer = self.observer
        agent = observer.agent_identity
        assert agent is not None
        try:
            text = await self._room.local_participant.perform_rpc(
                destination_identity=agent,
                method=EVAL_RPC_METHOD,
                payload=json.dumps({"op": op, **fields}),
                response_timeout=_RPC_S,
            )
        except rtc.RpcError as exc:
            observer.raise_if_gone()  # the reason the room already gave, if any
            codes = rtc.RpcError.ErrorCode
            if exc.code in (codes.RECIPIENT_DISCONNECTED, codes.RECIPIENT_NOT_FOUND):
                raise AdapterError(f"the agent ({agent}) left the room") from None
            raise
        try:
            answer = json.loads(text or "{}")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise AdapterError(f"the agent's eval helper answered {op!r} with {text!r:.80}")
        return answer

    async def _watch_dispatch(self) -> None:
        """Fail the start at once when the server placed the dispatch with no worker."""
        observer, adapter = self.observer, self.adapter
        assert self._api is not None
        loop = asyncio.get_running_loop()
        given_up = loop.time() + adapter.dispatch_timeout_s
        while observer.agent is None:
            with contextlib.suppress(Exception):
                dispatches = await self._api.agent_dispatch.list_dispatch(self.room_name)
                if any(d.id == self._dispatch_id and d.state.jobs for d in dispatches):
                    return  # a worker took it: the job process may still take a while
            if loop.time() >= given_up:
                observer.agent_gone = (
                    f"no worker took the dispatch of agent {adapter.agent_name!r} within "
                    f"dispatch_timeout_s={adapter.dispatch_timeout_s:g} s: "
                    + _no_worker(adapter)
                    + f". {no_worker_advice(adapter.agent_name, Path.cwd())}"
                )
                observer.notify()
                return
            await asyncio.sleep(_DISPATCH_POLL_S)  # the server sends no event for this

    async def _watch_agent(self) -> None:
        """Notice at once an agent whose process died: it stops acknowledging RPC."""
        observer = self.observer
        assert self._room is not None
        agent = observer.agent_identity
        assert agent is not None
        payload = json.dumps({"op": "ping"})
        while True:
            try:
                await self._room.local_participant.perform_rpc(
                    destination_identity=agent,
                    method=EVAL_RPC_METHOD,
                    payload=payload,
                    response_timeout=_RPC_S,
                    max_round_trip_latency=_PING_ACK_S,
                )
            except rtc.RpcError as exc:
                codes = rtc.RpcError.ErrorCode
                if exc.code == codes.CONNECTION_TIMEOUT:
                    observer.agent_gone = (
                        f"the agent ({agent}) stopped answering: its participant acknowledged "
                        f"nothing for {_PING_ACK_S:g} s (its job process died or hangs; the "
                        "worker's log says why)"
                    )
                    observer.notify()
                    return
                if exc.code in (codes.RECIPIENT_DISCONNECTED, codes.RECIPIENT_NOT_FOUND):
                    observer.agent_left = True
                    observer.notify()
                    return
                # Any other answer (no helper: unsupported method) came from a live agent.
            except Exception:
                return  # the room is closing
            await asyncio.sleep(_PING_EVERY_S)  # a liveness probe's period: no event exists

    async def _server_call(self, call: Any) -> Any:
        """Await a livekit-api call, turning its failures into messages that say what to fix."""
        url = self.adapter.url
        try:
            return await call
        except api.TwirpError as exc:
            if exc.status in (401, 403):
                raise AdapterError(
                    f"the LiveKit server at {url} rejected the API key {self.adapter.api_key!r} "
                    f"and its secret ({exc.status} {exc.code}: {exc.message}); check "
                    "LIVEKIT_API_KEY and LIVEKIT_API_SECRET (or api_key=/api_secret=)"
                ) from exc
            raise AdapterError(
                f"the LiveKit server at {url} refused the request: {exc.code} ({exc.status}): "
                f"{exc.message}"
            ) from exc
        except (TimeoutError, OSError, aiohttp.ClientError) as exc:
            raise AdapterError(
                f"cannot reach the LiveKit server at {url}: {type(exc).__name__}: {exc}. Is it "
                "running, and is LIVEKIT_URL right?"
            ) from exc

    async def _why_no_agent(self) -> str:
        """Ask the server what became of the dispatch, to say why the agent did not join."""
        adapter = self.adapter
        if self._api is None or self._dispatch_id is None:
            return ""
        try:
            dispatches = await asyncio.wait_for(
                self._api.agent_dispatch.list_dispatch(self.room_name), 5.0
            )
        except Exception as exc:
            return f" (the server could not say what became of the dispatch: {exc})"
        dispatch = next((d for d in dispatches if d.id == self._dispatch_id), None)
        jobs = list(dispatch.state.jobs) if dispatch is not None else []
        if not jobs:
            return (
                f": no worker took the job. {_no_worker(adapter)}. "
                f"{no_worker_advice(adapter.agent_name, Path.cwd())}"
            )
        job = jobs[-1]
        status = api.JobStatus.Name(job.state.status) if job.state else "unknown"
        error = f", error {job.state.error!r}" if job.state and job.state.error else ""
        return (
            f": the dispatch was accepted (worker {job.state.worker_id or '?'} has job {job.id}, "
            f"status {status}{error}) but the agent never joined the room. Does the "
            "entrypoint connect (await ctx.connect(), or session.start(room=ctx.room))? If "
            "the worker logs 'error initializing process', its setup_fnc outlasts "
            "initialize_process_timeout (10 s by default): raise it on the AgentServer"
        )

    # -- turns ----------------------------------------------------------------------------

    async def respond(self, turn: TurnInput) -> AgentReply:
        """Say one turn (audio when it has a fixture, else text) and collect the reply.

        Raises:
            AdapterError: The turn timed out (the message says what was pending), the agent
                left or stopped answering, its session closed or reported an error it gave
                up on, or the turn needs the agent-side helper and the agent has none.
            AudioFixtureError: The fixture is missing, unreadable, empty or silent.
        """
        if self._closed or self._observer is None or self._room is None:
            raise AdapterError("this LiveKit room conversation is closed")
        observer = self._observer
        label = f"turn {turn.index + 1}"
        started = time.perf_counter()
        async with self._deadline(self.adapter.timeout_s, label):
            self._stage.text = "the agent to finish what it was saying before the turn"
            await observer.until(observer.quiet)
            if self._helper is not None and turn.audio is not None:
                # How the agent hears now (a handoff may have brought in an agent on another
                # model): the helper's hello says.
                self._stage.text = (
                    f"the agent ({observer.agent_identity}) to answer the eval helper"
                )
                self._helper = await self._hello() or self._helper
            self._needs_helper(turn)
            log = RoomTurnLog(began_at=time.perf_counter())
            observer.turn = log
            audio: FixtureAudio | None = None
            audio_in: Path | None = None
            if turn.audio is not None:
                audio = await self._load_audio(turn)
                audio_in = await asyncio.to_thread(self._save_streamed_audio, turn, audio)
            realtime = self._realtime_agent() if audio is not None else None
            segments: tuple[SpeechSegment, ...] = ()
            if self._helper is not None:
                fields: dict[str, Any] = {}
                fixture: dict[str, Any] | None
                if realtime is not None:
                    fixture, segments, transcripts = await self._realtime_speech(turn, realtime)
                    fields["realtime"] = {"transcripts": transcripts, "phrases": len(segments)}
                else:
                    fixture = await self._speech_of(turn) if turn.audio is not None else None
                self._stage.text = f"the agent ({observer.agent_identity}) to take the turn"
                await self._request(
                    "begin",
                    turn=turn.index,
                    input="audio" if turn.audio is not None else "text",
                    fixture=fixture,
                    **fields,
                )
            if audio is not None and realtime is not None:
                extra = await self._say_phrases(turn, audio, segments, log)
            elif audio is not None:
                extra = await self._say_audio(turn, audio, log)
            else:
                extra = await self._say_text(turn, log)
            if self._helper is not None:
                capture = await self._settled(turn, log, phrases=len(segments) or None)
            else:
                capture = None
                await self._room_settled(log)
            log.ended_at = time.perf_counter()
        if capture is not None:
            return self._reply(turn, log, capture, extra, started, audio_in)
        return self._reply_without_helper(turn, log, extra, started)

    def _realtime_agent(self) -> dict[str, Any] | None:
        """The helper's account of the agent's realtime model (None: the agent has an STT, or
        no helper)."""
        realtime = self._helper.get("realtime") if self._helper is not None else None
        return realtime if isinstance(realtime, dict) else None

    def _needs_helper(self, turn: TurnInput) -> None:
        """Refuse, before saying anything, a turn the room alone cannot decide."""
        realtime = self._realtime_agent() if turn.audio is not None else None
        if realtime is not None:
            model = realtime.get("model") or "realtime model"
            if realtime.get("hearing") == "none":
                raise AdapterError(
                    f"audio fixture {turn.audio}: the agent's {model} in the worker was given "
                    "hearing=None, so it cannot hear the caller; give it hearing=WhisperSTT() "
                    "(real recognition, in the worker), or leave the default hearing (the "
                    "fixture's provenance: the test hands the worker what each phrase says)"
                )
            if realtime.get("vad_problem"):
                raise AdapterError(
                    f"audio fixture {turn.audio}: the test cannot find where the agent's "
                    f"{model} will take the turns in it: {realtime['vad_problem']}"
                )
            return
        if self._helper is not None:
            if turn.audio is not None and self._helper.get("vad") is None:
                raise AdapterError(
                    f"audio fixture {turn.audio}: the agent's helper cannot tell when the agent "
                    f"has heard the whole fixture: {self._helper.get('vad_problem')}"
                )
            return
        note = self._old_helper_note()
        if turn.audio is not None:
            raise AdapterError(
                f"audio fixture {turn.audio}: the turn cannot end once the agent heard the whole "
                f"audio fixture, because {HEARING_HINT}{note}"
            )
        if expected := _tool_expectations(turn.turn):
            raise AdapterError(
                f"this turn has tool expectations ({', '.join(expected)}) but they cannot be "
                f"checked: {HELPER_HINT}{note}"
            )
        if expected := _agent_expectations(turn.turn):
            raise AdapterError(
                f"this turn has agent expectations ({', '.join(expected)}) but they cannot be "
                f"checked: {AGENTS_HINT}{note}"
            )

    async def _settled(
        self, turn: TurnInput, log: RoomTurnLog, *, phrases: int | None = None
    ) -> dict[str, Any]:
        """Have the helper settle the turn (for a realtime agent's fixture of ``phrases``
        phrases: its last one); its record, once the room shows the reply over."""
        observer = self.observer
        self._stage.text = f"the agent ({observer.agent_identity}) to take the end of the turn"
        if turn.index not in observer.captures:  # (a phrase that failed sent its record)
            fields = {"phrase": phrases, "phrases": phrases} if phrases else {}
            await self._request("settle", turn=turn.index, **fields)
        self._stage.text = (
            f"the agent ({observer.agent_identity}) to finish the turn (publish_eval_events)"
        )
        await observer.until(lambda: turn.index in observer.captures)
        capture = observer.captures[turn.index]
        _raise_crash(capture, f"turn {turn.index + 1}")
        if capture.get("error"):
            raise AdapterError(f"the agent's session failed during the turn: {capture['error']}")
        if capture.get("unrecoverable"):
            raise AdapterError(
                "the agent failed to reply: " + "; ".join(capture.get("errors") or [])
            )
        if turn.audio is not None and not (capture.get("heard") or "").strip():
            who = "realtime model" if capture.get("realtime") else "STT"
            raise AdapterError(
                f"the agent's {who} heard nothing in {turn.audio}: all "
                f"{capture.get('speech_segments')} speech segment(s) came back empty, so the "
                "agent got no user turn"
            )
        self._stage.text = "the agent's reply streams to close and the agent to listen again"
        said = bool((capture.get("reply") or "").strip())
        anchor = log.anchor or log.began_at
        await observer.until(
            lambda: observer.quiet() and (not said or bool(observer.replies_since(anchor)))
        )
        return capture

    async def _room_settled(self, log: RoomTurnLog) -> None:
        """Without the helper (text turns only): a reply after the input, every reply stream
        closed, the agent listening, and no transcript of the caller after the last reply
        started (that phrase would still be answered)."""
        observer = self.observer
        anchor = log.anchor or log.began_at
        self._stage.text = (
            f"the agent ({observer.agent_identity}) to reply after the end of the caller's input"
        )
        await observer.until(lambda: bool(observer.replies_since(anchor)))
        self._stage.text = "the agent to finish its reply and listen again"

        def done() -> bool:
            if not observer.quiet():
                return False
            opened = [r.opened_at for r in observer.replies_since(log.began_at)]
            return not opened or not any(at >= max(opened) for at in log.heard_at)

        await observer.until(done)

    async def _load_audio(self, turn: TurnInput) -> FixtureAudio:
        assert turn.audio is not None
        if self._mic is None:
            raise AdapterError(
                "this conversation was started for a transcript without audio turns, so the "
                "caller has no microphone; start it with the transcript that has the audio"
            )
        path = Path(turn.audio)
        self._stage.text = f"the audio fixture {path} to load"
        return await asyncio.to_thread(self.adapter.turn_audio, path, turn.conditions, turn.seed)

    async def _speech_of(self, turn: TurnInput) -> dict[str, Any]:
        """Where the fixture's speech starts and where the agent's VAD ends its last segment
        (its settings, from the helper), for the helper's "heard the whole fixture"."""
        assert turn.audio is not None and self._helper is not None
        path = Path(turn.audio)
        self._stage.text = f"the speech segments of {path} (the agent's VAD settings)"
        settings = self._helper["vad"]
        audio = await asyncio.to_thread(
            self.adapter.turn_audio, path, turn.conditions, turn.seed, tail_s=_scan_tail(settings)
        )
        segments = await scan_segments(_scan_vad(settings), audio)
        if not segments:
            raise no_speech_error("the agent's VAD", path, audio.duration_s, turn.conditions)
        first, last = segments[0], segments[-1]
        self._fixture_end_s = round(last.detected_s, 3)
        return {
            "first_start_s": first.detected_s - first.speech_s,
            "last_end_s": last.detected_s,
            "segments": len(segments),
        }

    async def _realtime_speech(
        self, turn: TurnInput, realtime: dict[str, Any]
    ) -> tuple[dict[str, Any], tuple[SpeechSegment, ...], list[str] | None]:
        """For a realtime agent: where the VAD that takes its turns (the model's own, or the
        session's; Silero's defaults standing in for a provider's server) cuts the fixture
        into phrases, and, for a scripted model hearing through provenance, what each phrase
        says (proven here, from the fixture's provenance: the worker has no fixture file)."""
        assert turn.audio is not None
        path = Path(turn.audio)
        self._stage.text = f"the phrases of {path} (the VAD that takes the realtime agent's turns)"
        settings = realtime.get("vad") or {}
        audio = await asyncio.to_thread(
            self.adapter.turn_audio, path, turn.conditions, turn.seed, tail_s=_scan_tail(settings)
        )
        segments = await scan_segments(_scan_vad(settings), audio)
        if not segments:
            raise no_speech_error(
                "the VAD that takes the realtime agent's turns",
                path,
                audio.duration_s,
                turn.conditions,
            )
        transcripts: list[str] | None = None
        if realtime.get("hearing") == "provenance":
            transcripts = await self._proven_phrases(turn, path, segments)
        first, last = segments[0], segments[-1]
        self._fixture_end_s = round(last.detected_s, 3)
        fixture = {
            "first_start_s": first.detected_s - first.speech_s,
            "last_end_s": last.detected_s,
            "segments": len(segments),
        }
        return fixture, segments, transcripts

    async def _proven_phrases(
        self, turn: TurnInput, path: Path, segments: Sequence[SpeechSegment]
    ) -> list[str]:
        """What each phrase (speech segment) of the fixture says, as its provenance proves:
        the words that ended within it (`segment_words`), what the worker's
        `ScriptedRealtimeModel` hears through `FixtureTextSTT`."""
        fix = (
            "give the worker's ScriptedRealtimeModel hearing=WhisperSTT(), which hears the "
            "audio itself"
        )
        if turn.conditions:
            raise AdapterError(
                f"audio fixture {path}: the agent's ScriptedRealtimeModel hears through the "
                f"fixture's provenance, which says what the clean fixture says, not what is "
                f"left of it under the turn's audio conditions "
                f"({describe_conditions(turn.conditions)}); {fix}"
            )
        from ....voice._status import prove_fixture_text

        try:
            words = await asyncio.to_thread(prove_fixture_text, path, turn.turn.user)
        except AudioFixtureError as exc:
            raise AudioFixtureError(
                f"{exc}. The agent's ScriptedRealtimeModel in the worker hears through the "
                f"fixture's provenance, which this fixture does not prove: {fix}"
            ) from None
        return segment_words(words, segments)

    async def _say_phrases(
        self,
        turn: TurnInput,
        audio: FixtureAudio,
        segments: tuple[SpeechSegment, ...],
        log: RoomTurnLog,
    ) -> dict[str, Any]:
        """Say a fixture to a realtime agent phrase by phrase, each once the agent answered
        the one before (the microphone sends silence meanwhile: a caller's pause), as
        `LiveKitAdapter` streams it; the last phrase with the fixture's tail."""
        assert turn.audio is not None and self._mic is not None and self._helper is not None
        path, observer, n = Path(turn.audio), self.observer, len(segments)
        pushed = 0
        for k, segment in enumerate(segments, start=1):
            if k < n:
                upto = frames_for_phrase(segment, segments[k], audio)
                self._stage.text = (
                    f"the caller's microphone to finish saying phrase {k} of {n} of {path.name}"
                )
                await self._mic.say(audio.frames[pushed:upto])
                self._stage.text = (
                    f"the agent ({observer.agent_identity}) to answer phrase {k} of {n} of "
                    f"{path.name} (publish_eval_events)"
                )
                await self._request("settle", turn=turn.index, phrase=k, phrases=n)
                await observer.until(partial(_phrase_done, observer, turn.index, k))
                if turn.index in observer.captures:
                    break  # the phrase failed; the turn's record says why
                pushed = upto
                continue
            # The last phrase: latency counts from the end of its speech, then the tail.
            self._stage.text = f"the caller's microphone to finish saying {path.name}"
            end = min(len(audio.frames), max(pushed, int(segment.end_s / audio.frame_s) + 1))
            speech = self._mic.say(audio.frames[pushed:end])
            tail = self._mic.say(audio.frames[end:])
            log.anchor = await speech
            await tail
        return self._audio_extra(turn, audio)

    async def _say_audio(
        self, turn: TurnInput, audio: FixtureAudio, log: RoomTurnLog
    ) -> dict[str, Any]:
        assert turn.audio is not None and self._mic is not None
        path = Path(turn.audio)
        self._stage.text = f"the caller's microphone to finish saying {path.name}"
        log.anchor = await self._mic.say(audio.frames)
        return self._audio_extra(turn, audio)

    @staticmethod
    def _audio_extra(turn: TurnInput, audio: FixtureAudio) -> dict[str, Any]:
        return {
            "input": "audio",
            "conditions": describe_conditions(turn.conditions),
            "conditions_seed": turn.seed if turn.conditions else None,
            "audio_duration_s": audio.duration_s,
            "fixture_rate": audio.source_rate,
            "fixture_channels": audio.source_channels,
        }

    async def _say_text(self, turn: TurnInput, log: RoomTurnLog) -> dict[str, Any]:
        assert self._room is not None
        self._stage.text = f"the text to be sent on {TOPIC_CHAT!r}"
        agent = self.observer.agent_identity
        log.anchor = time.perf_counter()
        await self._room.local_participant.send_text(
            turn.text, topic=TOPIC_CHAT, destination_identities=[agent] if agent else None
        )
        return {"input": "text"}

    def _room_meta(self, log: RoomTurnLog, extra: dict[str, Any], started: float) -> dict[str, Any]:
        observer = self.observer
        end = log.ended_at or time.perf_counter()
        meta: dict[str, Any] = {
            **extra,
            "mode": "room",
            "room": self.room_name,
            "agent_identity": observer.agent_identity,
            "agent_states": list(log.states),
            "turn_wall_s": end - started,
            "tool_calls_observed": self._helper is not None,
        }
        if self.adapter.capture_audio:
            meta["reply_audio_s"] = len(observer.reply_audio(log.began_at, end)) / 2 / AUDIO_RATE
        return meta

    def _latencies(self, log: RoomTurnLog) -> tuple[float | None, float | None]:
        """From the end of the caller's input to the first reply text and audible audio that
        came after it (a fixture the agent takes in parts also has replies to earlier parts)."""
        observer = self.observer
        anchor = log.anchor or log.began_at
        first_text = min(
            (
                s.first_chunk_at
                for s in observer.replies_since(log.began_at)
                if s.first_chunk_at and s.opened_at >= anchor
            ),
            default=None,
        )
        first_audio = observer.audible_since(anchor)
        return (
            first_text - anchor if first_text is not None else None,
            first_audio - anchor if first_audio is not None else None,
        )

    def _reply(
        self,
        turn: TurnInput,
        log: RoomTurnLog,
        capture: dict[str, Any],
        extra: dict[str, Any],
        started: float,
        audio_in: Path | None,
    ) -> AgentReply:
        """The reply as the agent's recorder saw it, with what the caller measured."""
        meta = self._room_meta(log, extra, started)
        meta.update(capture.get("metadata") or {})
        if capture.get("realtime") is not None:
            meta["realtime"] = capture["realtime"]
        if turn.audio is not None:
            meta["speech_segments"] = capture.get("speech_segments")
            # Where the agent's VAD ended speech, and where the caller's scan of the fixture
            # says its speech ends (seconds into the fixture): how "heard it all" was decided.
            meta["speech_ends_s"] = capture.get("speech_ends_s")
            meta["fixture_speech_end_s"] = self._fixture_end_s
        if capture.get("errors"):
            meta["errors"] = list(capture["errors"])
        if turn.index == 0 and self._greeting is not None:
            meta["greeting"] = [speech_dict(s) for s in self._greeting.speech]
            if self._greeting.tool_calls:
                meta["greeting_tool_calls"] = [c.to_dict() for c in self._greeting.tool_calls]
        latency, audio_latency = self._latencies(log)
        tokens = capture.get("usage") or [0, 0]
        usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1]) if any(tokens) else None
        end = log.ended_at or time.perf_counter()
        return AgentReply(
            capture.get("reply") or "",
            [ToolCall.from_dict(c) for c in capture.get("tool_calls") or []],
            heard=capture.get("heard"),
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            usage=usage,
            audio_out=self._save_audio(turn, self.observer.reply_audio(log.began_at, end)),
            metadata={"livekit": meta, "tool_calls_observed": True, "speed": REAL_TIME},
            agent_speech=[_speech(s) for s in capture.get("agent_speech") or []],
            heard_segments=list(capture.get("heard_segments") or []),
            active_agent=capture.get("agent"),
            handoffs=[Handoff(h.get("from"), str(h["to"])) for h in capture.get("handoffs") or []],
            audio_in=audio_in,
            timeline=unobserved_timeline(turn.audio),
        )

    def _reply_without_helper(
        self, turn: TurnInput, log: RoomTurnLog, extra: dict[str, Any], started: float
    ) -> AgentReply:
        """A text turn's reply as the room alone shows it: no tools, agents or handoffs."""
        meta = self._room_meta(log, extra, started)
        if turn.index == 0 and self._greeting is not None:
            meta["greeting"] = [speech_dict(s) for s in self._greeting.speech]
        latency, audio_latency = self._latencies(log)
        end = log.ended_at or time.perf_counter()
        return AgentReply(
            joined(s.text for s in self.observer.replies_since(log.began_at)),
            [],
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            audio_out=self._save_audio(turn, self.observer.reply_audio(log.began_at, end)),
            metadata={
                "livekit": meta,
                "speed": REAL_TIME,
                "tool_calls_observed": False,
                "tool_calls_unobserved_reason": HELPER_HINT,
                "agents_unobserved_reason": AGENTS_HINT,
            },
            tool_calls_unobserved=HELPER_HINT,
            # Only the helper sees agents; without it these stay unknown (None), never "none".
            active_agent=None,
            handoffs=None,
            timeline=unobserved_timeline(turn.audio),
        )

    def _save_streamed_audio(self, turn: TurnInput, audio: FixtureAudio) -> Path | None:
        """The exact audio the turn says (its frames, after its conditions), as a WAV in the
        save folder; None when not asked to save it."""
        folder = self.info.save_audio_dir or self.adapter.audio_in_dir
        if folder is None:
            return None
        frame = rtc.combine_audio_frames(list(audio.frames))
        return save_streamed_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=turn.index,
            pcm=bytes(frame.data),
            sample_rate=frame.sample_rate,
        )

    def _save_audio(self, turn: TurnInput, pcm: bytes) -> Path | None:
        folder = self.adapter.audio_out_dir
        if folder is None or not pcm:
            return None
        from ....voice._fixtures import clip_from_pcm16

        return save_reply_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=turn.index,
            clip=clip_from_pcm16(pcm, AUDIO_RATE),
        )

    # -- deadlines and close --------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _deadline(self, timeout_s: float, label: str) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(timeout_s):
                yield
        except TimeoutError as exc:
            observer = self._observer
            agent_missing = observer is None or observer.agent is None
            why = await self._why_no_agent() if agent_missing and self._dispatch_id else ""
            seen = f" ({observer.describe()})" if observer and not agent_missing else ""
            knob = "join_timeout_s" if label == "the start of the run" else "timeout_s"
            # An agent in the room that says nothing failed the turn; no agent: an ERROR.
            silent = label.startswith("turn ") and not agent_missing and self._stage.waits_on_agent
            error = AgentTimeoutError if silent else AdapterError
            raise error(
                f"{label}: nothing within {knob}={timeout_s:g} s; still waiting for "
                f"{self._stage.text}{seen}{why}. If the agent is only slow, raise "
                f"LiveKitRoomAdapter({knob}=...)"
            ) from exc
        except rtc.RpcError as exc:
            gone = await self._observer.gone_reason(_GONE_S) if self._observer else None
            unanswered = (
                f"the agent's eval helper did not answer while waiting for {self._stage.text}"
            )
            why = gone or f"{unanswered}: {exc.message} ({exc.code})"
            raise AdapterError(f"{label}: {why}") from None
        except AgentEvalError as exc:
            if str(exc).startswith(f"{label}:"):
                raise
            raise exc.labelled(label) from exc

    async def aclose(self, *, after_failure: bool = False) -> None:
        """Leave and delete the room (always: the agent's job ends with it); safe to call twice.

        Raises:
            AdapterError: The room could not be deleted (it then lingers until the server's
                empty timeout).
        """
        if self._closed:
            return
        self._closed = True
        problem: str | None = None
        try:
            for task in self._watchers:
                task.cancel()
            for task in self._watchers:
                with contextlib.suppress(BaseException):
                    await task
            if self._mic is not None:
                await self._mic.aclose()
            if self._observer is not None:
                await self._observer.aclose()
            # Leave first, then delete: a room deleted under the caller closes its data
            # channels from the server's side, which livekit-rtc logs as an error.
            if self._room is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._room.disconnect(), 5.0)
            if self._api is not None and self._room_created:
                try:
                    await asyncio.wait_for(
                        self._api.room.delete_room(api.DeleteRoomRequest(room=self.room_name)),
                        10.0,
                    )
                except api.TwirpError as exc:
                    if exc.status != 404:
                        problem = f"{exc.code}: {exc.message}"
                except Exception as exc:
                    problem = f"{type(exc).__name__}: {exc}"
        finally:
            if self._api is not None:
                with contextlib.suppress(Exception):
                    await self._api.aclose()
            self._quiet.close()
        if problem is not None and not after_failure:
            raise AdapterError(f"could not delete room {self.room_name!r}: {problem}")


def _no_worker(adapter: LiveKitRoomAdapter) -> str:
    name = adapter.agent_name
    return (
        f"no worker is registered for agent_name {name!r} on {adapter.url}, or every such "
        "worker reported itself full (on a small machine set its load_threshold explicitly: a "
        "worker busy starting up is above the default 0.7 and is given no job)"
    )


def _raise_crash(capture: dict[str, Any], label: str) -> None:
    """Raise the crash the agent's helper reported in ``capture`` (an exception LiveKit logged
    from the agent's code, an error the session could not recover from), as in process."""
    crash = capture.get("crash")
    if not isinstance(crash, dict):
        return
    raise AgentCrashError(
        f"{label}: the agent crashed: {crash.get('message')}",
        kind=str(crash.get("kind") or "Exception"),
        detail=str(crash.get("detail") or ""),
        where=crash.get("where"),
    )


def _scan_tail(settings: dict[str, Any]) -> float:
    """Silence after the fixture for the scan: past the VAD's min_silence_duration (the
    caller's microphone sends silence for as long as the agent takes)."""
    try:
        silence = float(settings.get("min_silence_duration") or 0.0)
    except (TypeError, ValueError):
        silence = 0.0
    return max(_SCAN_TAIL_S, silence + 0.45)


def _scan_vad(settings: dict[str, Any]) -> Any:
    """A Silero VAD with the agent's settings (one per settings for the process)."""
    key = tuple(sorted(settings.items()))
    vad = _scan_vads.get(key)
    if vad is None:
        vad = _scan_vads[key] = silero.VAD.load(**settings)
    return vad


def _phrase_done(observer: RoomObserver, turn: int, phrase: int) -> bool:
    """The helper answered ``phrase`` of ``turn`` (or ended the turn: a phrase failed)."""
    return (turn, phrase) in observer.phrases or turn in observer.captures


def _speech(data: dict[str, Any]) -> AgentSpeech:
    return AgentSpeech(
        text=str(data.get("text") or ""),
        cause=str(data.get("cause") or "other"),
        agent=data.get("agent"),
        turn_index=data.get("turn_index"),
        started_at_s=data.get("started_at_s"),
        latency_s=data.get("latency_s"),
    )


def _tool_expectations(turn: Turn) -> list[str]:
    """The turn's expectations on tool calls, by name."""
    expect = turn.expect
    found = [
        name
        for name, value in (
            ("tool_calls_include", expect.tool_calls_include),
            ("tool_calls_exclude", expect.tool_calls_exclude),
            ("tool_calls_args", expect.tool_calls_args),
            ("tool_calls_outcome", expect.tool_calls_outcome),
        )
        if value
    ]
    found += [
        type(e).__name__
        for e in expect.evaluators
        if type(e).__name__.startswith("ToolCall") or type(e).__name__ == "ToolOutcomeEvaluator"
    ]
    return found


def _agent_expectations(turn: Turn) -> list[str]:
    """The turn's expectations on agents and handoffs, by name."""
    expect = turn.expect
    found = [
        name
        for name, value in (
            ("agent_is", expect.agent_is),
            ("handoff_to", expect.handoff_to),
            ("handoff_from", expect.handoff_from),
        )
        if value
    ]
    found += [
        type(e).__name__
        for e in expect.evaluators
        if type(e).__name__ in ("ActiveAgentEvaluator", "HandoffEvaluator")
    ]
    return found
