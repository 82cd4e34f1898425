"""LiveKitRoomAdapter: each run is a call to a deployed agent, through a real LiveKit room."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
from livekit import api, rtc

from ...errors import AdapterError, AgentEvalError, ConfigError
from ...models import AgentReply, Handoff, Transcript, Turn, Usage
from ..base import ConversationInfo, TurnInput
from ._adapter import _check_fixtures
from ._audio import FixtureAudio, cached_fixture_audio
from ._logs import hold_livekit_logs
from ._room_events import EVAL_LISTENER_ATTRIBUTE
from ._room_observer import AUDIO_RATE, RoomObserver, TurnLog

__all__ = ["HELPER_HINT", "LiveKitRoomAdapter", "LiveKitRoomConversation"]

FRAME_MS = 20
"""Length of each microphone frame sent."""

TOPIC_CHAT = "lk.chat"
"""The text-stream topic an agent's RoomIO reads typed user input from."""

HELPER_HINT = (
    "a LiveKit room shows no tool calls: add publish_eval_events(session) (from "
    "pytest_agent_eval.adapters.livekit) to the agent's entrypoint so the test can see them"
)
"""Why a room run's tool calls are not observable, and the fix (``metadata``
``["tool_calls_unobserved_reason"]`` when the agent does not publish them)."""

_MIC_LEAD_S = 0.5
"""How far ahead of real time the microphone keeps its queue. The track sends silence when its
queue runs dry, so a caller process held up for longer than this (a busy CI machine) would cut
a gap into the speech, which the agent hears as the end of a phrase. Latencies are unaffected:
they count from when the last frame leaves the queue, not from when it was handed over."""


class LiveKitRoomAdapter:
    """Runs transcripts against a deployed LiveKit agent, one room per run, as a caller would.

    Per run it creates a uniquely named room (``livekit-api``), joins it as the caller with a
    token it mints, dispatches the agent named ``agent_name`` to it explicitly, and waits for
    the agent to join and listen. An audio turn publishes the turn's WAV fixture as the
    caller's microphone, in 20 ms frames at real-time pace, with silence before and after (the
    microphone never stops, so the agent's VAD can end the turn); a text turn is sent on the
    chat topic the agent's RoomIO reads (``lk.chat``). The room is deleted at the end of the
    run, also after a failure, so the agent's job ends at once.

    Per turn it returns the same `AgentReply` as `LiveKitAdapter`: the reply text (the agent's
    ``lk.transcription`` streams), what the agent transcribed of the caller (``heard``), the
    latencies a caller experiences (end of the caller's input to the first reply text and to
    the first audible reply audio), the reply audio (saved with ``audio_out_dir``) and, when
    the agent publishes them with `publish_eval_events`, its tool calls, handoffs and token
    usage. Without the helper, ``tool_calls_unobserved`` on each reply says why tool calls could
    not be seen (tool checks error with it), and a turn that has tool expectations fails,
    naming the helper.

    A turn ends on events, never on a timer: the agent has started a reply after the caller's
    input ended, every reply stream has closed, and the agent's state (``lk.agent.state``) is
    ``listening`` again (and, with the helper, the helper has reported the same, so every tool
    call of the turn has arrived). Every wait is bounded; a timeout says what was pending.

    Args:
        agent_name: The name the agent's worker registered (``rtc_session(agent_name=...)``).
        url: The server's URL (``ws://``, ``wss://``, ``http://`` or ``https://``); defaults
            to ``LIVEKIT_URL``.
        api_key: Defaults to ``LIVEKIT_API_KEY``.
        api_secret: Defaults to ``LIVEKIT_API_SECRET``.
        dispatch_metadata: Job metadata handed to the agent (``ctx.job.metadata``).
        join_timeout_s: Longest the start of a run may take: room, dispatch, the agent
            joining and listening.
        timeout_s: Longest a turn may take: waiting for the agent to be quiet, saying the
            input, and the whole reply.
        wait_for_greeting: The agent speaks first (``on_enter``): wait for its greeting before
            turn 1 (kept apart from turn 1's reply, like `LiveKitAdapter` does).
        capture_audio: Subscribe to the agent's audio for first-audio latency and reply audio.
        audio_out_dir: Save each turn's reply audio there as a WAV (``AgentReply.audio_out``).
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

    def __init__(
        self,
        agent_name: str,
        *,
        url: str | None = None,
        api_key: str | None = None,
        api_secret: str | None = None,
        dispatch_metadata: str = "",
        join_timeout_s: float = 30.0,
        timeout_s: float = 60.0,
        wait_for_greeting: bool = False,
        capture_audio: bool = True,
        audio_out_dir: str | os.PathLike[str] | None = None,
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
        if join_timeout_s <= 0 or timeout_s <= 0:
            raise ValueError("LiveKitRoomAdapter: join_timeout_s and timeout_s must be > 0")
        self.dispatch_metadata = dispatch_metadata
        self.join_timeout_s = join_timeout_s
        self.timeout_s = timeout_s
        self.wait_for_greeting = wait_for_greeting
        self.capture_audio = capture_audio
        self.audio_out_dir = Path(audio_out_dir) if audio_out_dir is not None else None
        self.room_prefix = _slug(room_prefix) or "agent-eval"
        self.caller_identity = caller_identity
        self.log_level = log_level

    def __repr__(self) -> str:
        return f"LiveKitRoomAdapter({self.agent_name!r}, url={self.url!r})"

    # -- the adapter protocol -------------------------------------------------------------

    async def prepare(self, transcript: Transcript) -> None:
        """Check every audio fixture of ``transcript`` before any room is created.

        Raises:
            AudioFixtureError: For the first fixture that is missing, unreadable, empty or
                silent; the message names the transcript, the turn and the fix.
        """
        await _check_fixtures(transcript, self.fixture_audio)

    async def start_conversation(self, info: ConversationInfo) -> LiveKitRoomConversation:
        """Create the run's room, join it, dispatch the agent and wait until it listens.

        Raises:
            AdapterError: The server is unreachable, rejected the credentials, no worker took
                the job, or the agent joined but did not start in time (the message says
                which, and what to check).
        """
        conversation = LiveKitRoomConversation(self, info)
        try:
            await conversation.start()
        except BaseException:
            await conversation.aclose(after_failure=True)
            raise
        return conversation

    def fixture_audio(self, path: Path) -> FixtureAudio:
        """``path`` as 20 ms frames at 48 kHz (validated; kept for the process while the file is
        unchanged, shared with other adapters)."""
        return cached_fixture_audio(path, sample_rate=AUDIO_RATE, frame_ms=FRAME_MS, tail_s=0.0)


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
        self.greeting = ""
        """What the agent said before turn 1, when it speaks first."""
        self._api: api.LiveKitAPI | None = None
        self._room: rtc.Room | None = None
        self._observer: RoomObserver | None = None
        self._mic: _Microphone | None = None
        self._room_created = False
        self._dispatch_id: str | None = None
        self._stage = _Stage()
        self._closed = False
        self._quiet = contextlib.ExitStack()

    @property
    def observer(self) -> RoomObserver:
        """What the caller has seen of the agent so far."""
        if self._observer is None:
            raise AdapterError("this LiveKit room conversation has not started")
        return self._observer

    # -- start ----------------------------------------------------------------------------

    async def start(self) -> None:
        adapter = self.adapter
        self._quiet.enter_context(hold_livekit_logs(_CallerSide(), adapter.log_level))
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
            await observer.until(lambda: observer.agent is not None)
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
            if adapter.wait_for_greeting:
                self._stage.text = "the agent's greeting (wait_for_greeting=True)"
                await observer.until(
                    lambda: (
                        bool(observer.replies)
                        and not observer.open_replies()
                        and observer.agent_state == "listening"
                    )
                )
                self.greeting = _joined(r.text for r in observer.replies)

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
        name = adapter.agent_name
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
                f": no worker took the job. No worker is registered for agent_name {name!r} on "
                f"{adapter.url}, or every such worker reported itself full. Start the worker "
                f"(`python agent.py start`) with @server.rtc_session(agent_name={name!r}); on a "
                "small machine set its load_threshold explicitly, since a worker busy starting "
                "up is above the default 0.7 and is given no job"
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
                left, its session closed or reported an error it gave up on.
            AudioFixtureError: The fixture is missing, unreadable, empty or silent.
        """
        if self._closed or self._observer is None or self._room is None:
            raise AdapterError("this LiveKit room conversation is closed")
        observer = self._observer
        label = f"turn {turn.index + 1}"
        started = time.perf_counter()
        async with self._deadline(self.adapter.timeout_s, label):
            self._stage.text = "the agent to finish what it was saying before the turn"
            await observer.until(
                lambda: not observer.open_replies() and observer.agent_state == "listening"
            )
            if turn.index == 0 and not self.greeting and observer.replies:
                self.greeting = _joined(r.text for r in observer.replies)
            log = TurnLog(began_at=time.perf_counter())
            observer.turn = log
            tokens_before = observer.llm_tokens
            if turn.audio is not None:
                extra = await self._say_audio(turn, log)
            else:
                extra = await self._say_text(turn, log)
            assert log.anchor is not None
            self._stage.text = (
                f"the agent ({observer.agent_identity}) to reply after the end of the "
                "caller's input"
            )
            await observer.until(lambda: bool(observer.replies_since(log.anchor or 0.0)))
            self._stage.text = "the agent to finish its reply and listen again"
            await observer.until(lambda: self._turn_done(log))
            log.ended_at = time.perf_counter()
            if not observer.helper_seen and (expected := _tool_expectations(turn.turn)):
                # The room shows no tool calls: checking these against an empty list would
                # pass an exclusion for the wrong reason.
                raise AdapterError(
                    f"this turn has tool expectations ({', '.join(expected)}) but they cannot be "
                    f"checked: {HELPER_HINT} (reply was {_short(self._reply_text(log))!r})"
                )
        return self._reply(turn, log, tokens_before, extra, started)

    def _reply_text(self, log: TurnLog) -> str:
        return _joined(s.text for s in self.observer.replies_since(log.began_at))

    def _turn_done(self, log: TurnLog) -> bool:
        observer = self.observer
        anchor = log.anchor or log.began_at
        if observer.open_replies() or observer.agent_state != "listening":
            return False
        if observer.helper_seen:
            # The helper's events arrive in order, and say what the room cannot: whether the
            # agent still hears the caller, and whether its last reply was cut off by more of
            # the caller's speech (a fixture with a pause can be two user turns).
            return (
                observer.helper_idle_since(anchor)
                and observer.helper_user_state != "speaking"
                and observer.helper_answered_since(log.began_at)
            )
        # Without the helper: at least, no transcript of the caller came in after the last
        # reply started (that phrase is still to be answered).
        started = [r.opened_at for r in observer.replies_since(log.began_at)]
        return not started or not any(at >= max(started) for at in log.heard_at)

    async def _say_audio(self, turn: TurnInput, log: TurnLog) -> dict[str, Any]:
        assert turn.audio is not None
        if self._mic is None:
            raise AdapterError(
                "this conversation was started for a transcript without audio turns, so the "
                "caller has no microphone; start it with the transcript that has the audio"
            )
        path = Path(turn.audio)
        self._stage.text = f"the audio fixture {path} to load"
        audio = await asyncio.to_thread(self.adapter.fixture_audio, path)
        self._stage.text = f"the caller's microphone to finish saying {path.name}"
        log.anchor = await self._mic.say(audio.frames)
        return {
            "input": "audio",
            "audio_duration_s": audio.duration_s,
            "fixture_rate": audio.source_rate,
            "fixture_channels": audio.source_channels,
        }

    async def _say_text(self, turn: TurnInput, log: TurnLog) -> dict[str, Any]:
        assert self._room is not None
        self._stage.text = f"the text to be sent on {TOPIC_CHAT!r}"
        agent = self.observer.agent_identity
        log.anchor = time.perf_counter()
        await self._room.local_participant.send_text(
            turn.text, topic=TOPIC_CHAT, destination_identities=[agent] if agent else None
        )
        return {"input": "text"}

    def _reply(
        self,
        turn: TurnInput,
        log: TurnLog,
        tokens_before: tuple[int, int] | None,
        extra: dict[str, Any],
        started: float,
    ) -> AgentReply:
        observer = self.observer
        anchor = log.anchor or log.began_at
        end = log.ended_at or time.perf_counter()
        streams = observer.replies_since(log.began_at)
        # Latency counts to the reply to the end of the input (a fixture the agent takes as
        # two user turns also has an earlier reply, to its first part).
        first_text = min(
            (s.first_chunk_at for s in streams if s.first_chunk_at and s.opened_at >= anchor),
            default=None,
        )
        first_audio = observer.audible_since(anchor)
        heard: str | None = None
        if turn.audio is not None:
            heard = _joined(log.heard) or _joined(log.helper_heard)
        usage = None
        if observer.llm_tokens is not None:
            before = tokens_before or (0, 0)
            spent = (observer.llm_tokens[0] - before[0], observer.llm_tokens[1] - before[1])
            if spent != (0, 0):
                usage = Usage(input_tokens=spent[0], output_tokens=spent[1])
        pcm = observer.reply_audio(log.began_at, end)
        meta: dict[str, Any] = {
            **extra,
            "mode": "room",
            "room": self.room_name,
            "agent_identity": observer.agent_identity,
            "agent_states": list(log.states),
            "events": list(log.events),
            "turn_wall_s": end - started,
            "tool_calls_observed": observer.helper_seen,
        }
        if self.adapter.capture_audio:
            meta["reply_audio_s"] = len(pcm) / 2 / AUDIO_RATE
        if log.handoffs:
            meta["handoffs"] = list(log.handoffs)
        if log.errors:
            meta["errors"] = list(log.errors)
        if turn.index == 0 and self.greeting:
            meta["greeting"] = self.greeting
        metadata: dict[str, Any] = {"livekit": meta, "tool_calls_observed": observer.helper_seen}
        if not observer.helper_seen:
            metadata["tool_calls_unobserved_reason"] = HELPER_HINT
        return AgentReply(
            self._reply_text(log),
            list(log.tool_calls),
            heard=heard,
            latency_s=first_text - anchor if first_text is not None else None,
            first_audio_latency_s=first_audio - anchor if first_audio is not None else None,
            usage=usage,
            audio_out=self._save_audio(turn, pcm),
            metadata=metadata,
            tool_calls_unobserved=None if observer.helper_seen else HELPER_HINT,
            # Only the helper sees agents; without it these stay unknown (None), never "none".
            active_agent=observer.active_agent if observer.helper_seen else None,
            handoffs=[
                Handoff(h.get("from_agent"), str(h["to_agent"]))
                for h in log.handoffs
                # The session's start is a handoff from no agent: not one of the turn's.
                if h.get("to_agent") and h.get("old_agent") is not None
            ]
            if observer.helper_seen
            else None,
        )

    def _save_audio(self, turn: TurnInput, pcm: bytes) -> Path | None:
        folder = self.adapter.audio_out_dir
        if folder is None or not pcm:
            return None
        from ...audio_fixtures import clip_from_pcm16, write_wav_atomic

        path = folder / (
            f"{self.info.transcript.id}-run{self.info.run_index + 1}-turn{turn.index + 1}.wav"
        )
        write_wav_atomic(path, clip_from_pcm16(pcm, AUDIO_RATE))
        return path

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
            raise AdapterError(
                f"{label}: nothing within {knob}={timeout_s:g} s; still waiting for "
                f"{self._stage.text}{seen}{why}. If the agent is only slow, raise "
                f"LiveKitRoomAdapter({knob}=...)"
            ) from exc
        except AgentEvalError as exc:
            if str(exc).startswith(f"{label}:"):
                raise
            raise type(exc)(f"{label}: {exc}") from exc

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
            if self._mic is not None:
                await self._mic.aclose()
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
            if self._observer is not None:
                await self._observer.aclose()
            if self._room is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self._room.disconnect(), 5.0)
        finally:
            if self._api is not None:
                with contextlib.suppress(Exception):
                    await self._api.aclose()
            self._quiet.close()
        if problem is not None and not after_failure:
            raise AdapterError(f"could not delete room {self.room_name!r}: {problem}")


def _tool_expectations(turn: Turn) -> list[str]:
    """The turn's expectations on tool calls, by name."""
    expect = turn.expect
    found = [
        name
        for name, value in (
            ("tool_calls_include", expect.tool_calls_include),
            ("tool_calls_exclude", expect.tool_calls_exclude),
            ("tool_calls_args", expect.tool_calls_args),
        )
        if value
    ]
    found += [
        type(e).__name__ for e in expect.evaluators if type(e).__name__.startswith("ToolCall")
    ]
    return found


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _joined(texts: Any) -> str:
    return " ".join(t.strip() for t in texts if t and t.strip())
