"""One room run: the caller joins a fresh room, dispatches the agent, says each turn (audio on
its microphone, or text on the chat topic), and reads the reply; the room is deleted at the
end. `LiveKitRoomAdapter` documents what a run does and shows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from livekit import api, rtc

from ....errors import AdapterError, AgentCrashError, AgentEvalError, AgentTimeoutError
from ....models import (
    AgentReply,
    AgentSpeech,
    AudioCondition,
    DtmfInput,
    Greeting,
    PhoneCall,
    ToolCall,
    describe_conditions,
)
from ....models._keypad import PRESSED_KEY, SIP_CALLER_KEY
from ....voice._segments import SpeechSegment
from ...base import ConversationInfo, TurnInput
from .._audio import FixtureAudio
from .._logs import hold_livekit_logs
from .._segments import frames_for_phrase
from ._dispatch import RPC_S, server_call, watch_agent, watch_dispatch, why_no_agent
from ._logs import quiet_room_shutdown
from ._microphone import Microphone
from ._needs_helper import HELPER_FIX, refuse_undecidable
from ._observer import AUDIO_RATE, RoomObserver, RoomTurnLog, joined
from ._protocol import EVAL_EVENTS_VERSION, EVAL_LISTENER_ATTRIBUTE, EVAL_RPC_METHOD
from ._replies import TurnReplies, crash_error, raise_crash, speech
from ._scan import fixture_speech, realtime_speech, refuse_unheard_conditions
from ._sip import KeyLog, Phone, find_call_room

__all__ = ["LiveKitRoomConversation", "RoomSettings", "slug"]

TOPIC_CHAT = "lk.chat"
"""The text-stream topic an agent's RoomIO reads typed user input from."""

_GONE_S = 2.0  # after a failed request, how long the room may take to say the agent left


class RoomSettings(Protocol):
    """What a run reads of its `LiveKitRoomAdapter` (which documents each setting)."""

    agent_name: str
    url: str
    api_key: str
    api_secret: str
    dispatch_metadata: str
    join_timeout_s: float
    dispatch_timeout_s: float
    timeout_s: float
    wait_for_greeting: bool
    capture_audio: bool
    audio_out_dir: Path | None
    audio_in_dir: Path | None
    room_prefix: str
    caller_identity: str
    log_level: int | str | None
    sip: str | None
    sip_codec: str

    def turn_audio(
        self,
        path: Path,
        conditions: Sequence[AudioCondition] = (),
        seed: int = 0,
        *,
        tail_s: float = 0.0,
    ) -> FixtureAudio: ...


def slug(text: str) -> str:
    """``text`` as a piece of a room name."""
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

    def __init__(self, adapter: RoomSettings, info: ConversationInfo) -> None:
        self.adapter = adapter
        self.info = info
        transcript = slug(info.transcript.id) or "run"
        self.room_name = (
            f"{adapter.room_prefix}-{transcript}-r{info.run_index + 1}-{uuid.uuid4().hex[:8]}"
        )
        """The room of this run (deleted when the run ends)."""
        self._greeting: Greeting | None = None
        self._api: api.LiveKitAPI | None = None
        self._room: rtc.Room | None = None
        self._observer: RoomObserver | None = None
        self._mic: Microphone | Phone | None = None
        """What the caller says turns with: its microphone, or the phone (over SIP)."""
        self._keys: KeyLog | None = None
        self._sip_identity: str | None = None
        self._fixture_end_s: float | None = None
        self._helper: dict[str, Any] | None = None
        """The agent-side helper's hello (None: the agent does not publish eval events)."""
        self._room_created = False
        self._dispatch_id: str | None = None
        self._watchers: list[asyncio.Task[None]] = []
        self._stage = _Stage()
        self._closed = False
        self._quiet = contextlib.ExitStack()
        self._replies = TurnReplies(
            info,
            self.room_name,
            capture_audio=adapter.capture_audio,
            audio_out_dir=adapter.audio_out_dir,
            audio_in_dir=adapter.audio_in_dir,
        )

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
            self._api = api.LiveKitAPI(adapter.url, adapter.api_key, adapter.api_secret)
            if adapter.sip is not None:
                await self._call_in(adapter.sip)
            else:
                self._stage.text = f"the LiveKit server at {adapter.url} to create the room"
                await server_call(
                    self._api.room.create_room(
                        api.CreateRoomRequest(name=self.room_name, empty_timeout=60)
                    ),
                    url=adapter.url,
                    api_key=adapter.api_key,
                )
            self._room_created = True

            self._stage.text = "the caller to join the room"
            room = self._room = rtc.Room()
            observer = self._observer = RoomObserver(
                room,
                caller_identity=self._sip_identity or adapter.caller_identity,
                capture_audio=adapter.capture_audio,
            )
            if self._sip_identity is not None:
                self._keys = KeyLog(room, observer.notify)
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
            if needs_audio and self._mic is None:
                source = rtc.AudioSource(AUDIO_RATE, 1)
                track = rtc.LocalAudioTrack.create_audio_track("caller-microphone", source)
                await room.local_participant.publish_track(
                    track, rtc.TrackPublishOptions(source=rtc.TrackSource.SOURCE_MICROPHONE)
                )
                self._mic = Microphone(source)

            self._stage.text = f"the server to accept the dispatch of agent {adapter.agent_name!r}"
            dispatch = await server_call(
                self._api.agent_dispatch.create_dispatch(
                    api.CreateAgentDispatchRequest(
                        agent_name=adapter.agent_name,
                        room=self.room_name,
                        metadata=adapter.dispatch_metadata,
                    )
                ),
                url=adapter.url,
                api_key=adapter.api_key,
            )
            self._dispatch_id = dispatch.id

            self._stage.text = f"agent {adapter.agent_name!r} to join room {self.room_name!r}"
            observer.find_agent()
            placed = asyncio.create_task(
                watch_dispatch(
                    self._api,
                    observer,
                    self.room_name,
                    dispatch.id,
                    agent_name=adapter.agent_name,
                    url=adapter.url,
                    timeout_s=adapter.dispatch_timeout_s,
                ),
                name="agent-eval-dispatch",
            )
            self._watchers.append(placed)
            await observer.until(lambda: observer.agent is not None)
            placed.cancel()
            self._watchers.append(
                asyncio.create_task(watch_agent(room, observer), name="agent-eval-ping")
            )
            self._stage.text = (
                f"the agent ({observer.agent_identity}) to start its session and listen "
                "(lk.agent.state)"
            )
            await observer.until(lambda: observer.agent_state is not None)
            if isinstance(self._mic, Phone):
                self._stage.text = "LiveKit's SIP service to answer the phone call"
                await self._mic.confirmed()
            elif needs_audio:
                self._stage.text = (
                    f"the agent ({observer.agent_identity}) to subscribe to the caller's microphone"
                )
                await observer.until(lambda: observer.mic_subscribed)
            self._stage.text = f"the agent ({observer.agent_identity}) to answer the eval helper"
            self._helper = await self._hello()
            refuse_unheard_conditions(self.info, self._realtime_agent())
            await self._greet()

    async def _call_in(self, uri: str) -> None:
        """Dial ``uri`` from the phone and find the room the SIP service put the call in."""
        assert self._api is not None
        phone_call = self.info.transcript.phone
        caller = (phone_call or PhoneCall()).caller_number
        self._stage.text = f"the phone to dial {uri} as {caller}"
        self._mic = await Phone.dial(uri, caller, self.adapter.sip_codec)
        self._stage.text = f"LiveKit's SIP service to put the call to {uri} in a room"
        self.room_name, self._sip_identity = await find_call_room(
            self._api, self._mic.call_id, agent_name=self.adapter.agent_name
        )
        self._replies.room_name = self.room_name

    async def _greet(self) -> None:
        """Wait for the agent's greeting as far as it can be observed (see `greeting`)."""
        observer = self.observer
        if self._helper is not None:
            self._stage.text = "the agent to finish starting and greeting (publish_eval_events)"
            await self._request("settle", turn=None)
            await observer.until(lambda: None in observer.captures, session_errors=False)
            capture = observer.captures[None]
            raise_crash(capture, "before turn 1")
            if capture.get("error"):
                raise AdapterError(f"the agent failed while starting: {capture['error']}")
            await observer.until(observer.quiet)
            self._greeting = Greeting(
                [speech(s) for s in capture.get("agent_speech") or []],
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
                f"does not show when the agent has finished greeting: {HELPER_FIX}, or pass "
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
        """One request to the agent's helper (see `_protocol`)."""
        assert self._room is not None
        observer = self.observer
        agent = observer.agent_identity
        assert agent is not None
        try:
            text = await self._room.local_participant.perform_rpc(
                destination_identity=agent,
                method=EVAL_RPC_METHOD,
                payload=json.dumps({"op": op, **fields}),
                response_timeout=RPC_S,
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
            keys = turn.turn.dtmf if self._keys is not None else None
            keys_from = len(self._keys.keys) if self._keys is not None else 0
            log = RoomTurnLog(began_at=time.perf_counter())
            observer.turn = log
            audio: FixtureAudio | None = None
            audio_in: Path | None = None
            if turn.audio is not None:
                audio = await self._load_audio(turn)
                audio_in = await asyncio.to_thread(self._replies.save_streamed_audio, turn, audio)
            realtime = self._realtime_agent() if audio is not None else None
            segments: tuple[SpeechSegment, ...] = ()
            if self._helper is not None:
                fields: dict[str, Any] = {}
                fixture: dict[str, Any] | None
                if realtime is not None:
                    self._stage.text = (
                        f"the phrases of {turn.audio} (the VAD that takes the realtime agent's "
                        "turns)"
                    )
                    fixture, segments, transcripts = await realtime_speech(
                        self.adapter.turn_audio, turn, realtime
                    )
                    fields["realtime"] = {"transcripts": transcripts, "phrases": len(segments)}
                elif turn.audio is not None:
                    self._stage.text = (
                        f"the speech segments of {turn.audio} (the agent's VAD settings)"
                    )
                    fixture = await fixture_speech(
                        self.adapter.turn_audio, turn, self._helper["vad"]
                    )
                else:
                    fixture = None
                if fixture is not None:
                    self._fixture_end_s = round(fixture["last_end_s"], 3)
                self._stage.text = f"the agent ({observer.agent_identity}) to take the turn"
                sent = time.perf_counter()
                await self._request(
                    "begin",
                    turn=turn.index,
                    input="audio" if turn.audio is not None else "text",
                    fixture=fixture,
                    **fields,
                )
                # The helper's timeline of the turn starts as it takes the request.
                half = (time.perf_counter() - sent) / 2
                log.agent_zero, log.agent_zero_error_s = sent + half, half
            if isinstance(keys, DtmfInput) and keys.at == "before":
                await self._press(keys.keys, keys_from)
            if audio is not None and realtime is not None:
                extra = await self._say_phrases(turn, audio, segments, log)
            elif audio is not None:
                extra = await self._say_audio(turn, audio, log)
            else:
                extra = await self._say_text(turn, log)
            if isinstance(keys, DtmfInput) and keys.at == "after":
                # As in process: the keys once the agent answered the speech, the turn kept
                # open, then the agent settles again; its record is of the whole turn.
                self._stage.text = f"the agent ({observer.agent_identity}) to answer the speech"
                await self._request("settle", turn=turn.index, hold=True)
                await observer.until(partial(_phrase_done, observer, turn.index, 0))
                await self._press(keys.keys, keys_from)
            if self._helper is not None:
                capture = await self._settled(turn, log, phrases=len(segments) or None)
            else:
                capture = None
                await self._room_settled(log)
            log.ended_at = time.perf_counter()
        if capture is not None:
            reply = self._replies.from_capture(
                observer,
                turn,
                log,
                capture,
                extra,
                started,
                audio_in,
                greeting=self._greeting,
                fixture_end_s=self._fixture_end_s,
            )
            if self._keys is not None:
                self._line_records(reply, turn, keys_from)
            return reply
        return self._replies.from_room(observer, turn, log, extra, started, greeting=self._greeting)

    async def _press(self, keys: str, since: int) -> None:
        """Press ``keys`` on the phone; return once the room carried them all to the agent."""
        assert isinstance(self._mic, Phone) and self._keys is not None
        key_log, caller = self._keys, self._sip_identity or ""
        self._stage.text = f"the caller to press {keys!r} (RFC 4733 over SIP)"
        await self._mic.press(keys)
        self._stage.text = f"LiveKit's SIP service to deliver the keys {keys!r} (sip_dtmf_received)"
        await self.observer.until(lambda: len(key_log.of(caller, since)) >= len(keys))

    def _line_records(self, reply: AgentReply, turn: TurnInput, since: int) -> None:
        """What the phone line showed in the turn: the keys pressed, as the agent received
        them, the keys the agent sent, and the caller's number (as `LiveKitAdapter` records
        them on its in-process line)."""
        assert self._keys is not None and self._room is not None
        caller = self._room.remote_participants.get(self._sip_identity or "")
        if caller is not None:
            reply.metadata[SIP_CALLER_KEY] = caller.attributes.get("sip.phoneNumber")
        reply.dtmf_sent = self._keys.of(self.observer.agent_identity or "", since)
        if isinstance(turn.turn.dtmf, DtmfInput):
            reply.metadata[PRESSED_KEY] = self._keys.of(self._sip_identity or "", since)

    def _realtime_agent(self) -> dict[str, Any] | None:
        """The helper's account of the agent's realtime model (None: the agent has an STT, or
        no helper)."""
        realtime = self._helper.get("realtime") if self._helper is not None else None
        return realtime if isinstance(realtime, dict) else None

    def _needs_helper(self, turn: TurnInput) -> None:
        """Refuse, before saying anything, a turn the room alone cannot decide."""
        refuse_undecidable(turn, self._helper, self._realtime_agent(), self._old_helper_note())

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
        await observer.until(lambda: turn.index in observer.captures, session_errors=False)
        capture = observer.captures[turn.index]
        raise_crash(capture, f"turn {turn.index + 1}")
        if capture.get("error"):
            # An error the session gave up on is why, not what followed it (it closing).
            observer.raise_session_errors()
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
                said = await self._mic.say(audio.frames[pushed:upto])
                log.stream = (log.stream[0] if log.stream else said.start, said.end)
                self._stage.text = (
                    f"the agent ({observer.agent_identity}) to answer phrase {k} of {n} of "
                    f"{path.name} (publish_eval_events)"
                )
                await self._request("settle", turn=turn.index, phrase=k, phrases=n)
                await observer.until(
                    partial(_phrase_done, observer, turn.index, k), session_errors=False
                )
                if turn.index in observer.captures:
                    break  # the phrase failed; the turn's record says why
                pushed = upto
                continue
            # The last phrase: latency counts from the end of its speech, then the tail.
            self._stage.text = f"the caller's microphone to finish saying {path.name}"
            end = min(len(audio.frames), max(pushed, int(segment.end_s / audio.frame_s) + 1))
            speech = self._mic.say(audio.frames[pushed:end])
            tail = self._mic.say(audio.frames[end:])
            said = await speech
            log.anchor = said.end
            log.stream = (log.stream[0] if log.stream else said.start, (await tail).end)
        return self._audio_extra(turn, audio)

    async def _say_audio(
        self, turn: TurnInput, audio: FixtureAudio, log: RoomTurnLog
    ) -> dict[str, Any]:
        assert turn.audio is not None and self._mic is not None
        path = Path(turn.audio)
        self._stage.text = f"the caller's microphone to finish saying {path.name}"
        said = await self._mic.say(audio.frames)
        log.anchor, log.stream = said.end, (said.start, said.end)
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

    # -- deadlines and close --------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _deadline(self, timeout_s: float, label: str) -> AsyncIterator[None]:
        """Bound what runs within to ``timeout_s``; what goes wrong says ``label``. A session
        that closed on the agent's crash reports the crash, not its consequence (as in
        process)."""
        try:
            async with self._bounded(timeout_s, label):
                yield
        except AgentCrashError:
            raise
        except Exception as exc:
            observer = self._observer
            crashed = crash_error(observer.crash if observer else None, label)
            if crashed is not None:
                raise crashed from exc
            raise

    @contextlib.asynccontextmanager
    async def _bounded(self, timeout_s: float, label: str) -> AsyncIterator[None]:
        try:
            async with asyncio.timeout(timeout_s):
                yield
        except TimeoutError as exc:
            observer = self._observer
            agent_missing = observer is None or observer.agent is None
            why = (
                await why_no_agent(
                    self._api,
                    self.room_name,
                    self._dispatch_id,
                    agent_name=self.adapter.agent_name,
                    url=self.adapter.url,
                )
                if agent_missing and self._dispatch_id
                else ""
            )
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


def _phrase_done(observer: RoomObserver, turn: int, phrase: int) -> bool:
    """The helper answered ``phrase`` of ``turn`` (or ended the turn: a phrase failed)."""
    return (turn, phrase) in observer.phrases or turn in observer.captures
