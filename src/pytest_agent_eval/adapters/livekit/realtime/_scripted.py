"""A scriptable realtime (speech-to-speech) model: rules instead of a provider, offline.

`ScriptedRealtimeModel` is a LiveKit ``llm.RealtimeModel`` an ``AgentSession`` takes as it takes
OpenAI's or Gemini's. It answers from the same `Rule` lists as `ScriptedLLM` (it asks a
`ScriptedLLM` what the rules say), speaks the answer with the fixture synthesizer's offline
voice, calls tools and goes on after their results, and hears the caller through an STT of
ours: `FixtureTextSTT` (the fixture's provenance) or `WhisperSTT`. With server-side turn
detection it runs a VAD of its own over the audio the session pushes, the way a provider's
server does; with the session's turn detection it waits for ``commit_audio``.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import re
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from livekit import rtc
from livekit.agents import llm, utils
from livekit.agents import vad as lk_vad
from livekit.agents.types import NOT_GIVEN, NotGivenOr

from ....errors import AdapterError, AudioFixtureError
from .._compat import realtime_session_owner
from ..offline._scripted import Rule, ScriptedLLM
from ..offline._stt import FixtureTextSTT, SegmentSTT
from ..offline._tts import SynthesizerTTS

__all__ = ["RealtimeCall", "ScriptedRealtimeModel", "ScriptedRealtimeSession"]

_MIN_COMMIT_S = 0.1
"""A commit of this much audio or less is dropped, as OpenAI's plugin drops it."""

_AUDIO_CHUNK_MS = 100
"""Reply audio goes out in chunks this long, as a provider streams it."""


@dataclass(frozen=True, slots=True)
class RealtimeCall:
    """One call the session made on a `ScriptedRealtimeSession` (for assertions)."""

    name: str
    """``generate_reply``, ``interrupt``, ``truncate``, ``commit_audio``, ``clear_audio``,
    ``update_instructions``, ``update_chat_ctx``, ``update_tools``, ``update_options`` or
    ``aclose``."""
    args: dict[str, Any] = field(default_factory=dict)


_default_vad: lk_vad.VAD | None = None


def _shared_vad() -> lk_vad.VAD:
    """One Silero VAD (from its wheel) per process for the models given none."""
    global _default_vad
    if _default_vad is None:
        from livekit.plugins import silero

        _default_vad = silero.VAD.load()
    return _default_vad


class ScriptedRealtimeModel(llm.RealtimeModel):
    """A LiveKit realtime model that answers from rules: offline, free and repeatable.

    Give it to ``AgentSession(llm=...)`` where the agent has ``openai.realtime.RealtimeModel()``
    or Gemini Live. It behaves as a provider's session does:

    - it hears each user turn through ``hearing``, an STT of ours run on the turn's audio:
      `FixtureTextSTT` (the default) answers with the words the fixture's provenance proves,
      `WhisperSTT` recognizes them; the transcript is the user's message, reported as the
      model's own (``user_input_transcribed``);
    - it answers with the first `Rule` matching what it heard, as `ScriptedLLM` does: text,
      spoken with ``voice`` (the synthesizer's offline voice) unless ``audio=False``, and tool
      calls; after the session has run a tool and sent its result, the next reply is the
      rule's ``reply``; ``instructions`` rules and ``greeting`` answer
      ``generate_reply(instructions=...)`` (an ``on_enter`` greeting);
    - ``turn_detection="server"`` (the default) runs the model's own VAD over the audio the
      session pushes: speech start (the session takes it as a barge-in), speech end, the
      transcript, then the reply, with no request from the session; next to a session given
      ``vad=`` it answers once that VAD has ended the turn too, as a provider's reply comes
      after the network and its own silence window. The session can switch
      that off (``can_disable_turn_detection``, as OpenAI's can) when it is given
      ``turn_handling={"turn_detection": "vad"}``; ``can_disable_turn_detection=False`` keeps
      it on whatever the session says, as Gemini Live does. ``turn_detection="client"`` has
      none: the session's VAD ends the turn, then calls ``commit_audio`` and
      ``generate_reply``;
    - ``interrupt`` stops the reply being generated (nothing else: the session calls it after
      every tool and at every speech start), ``truncate`` cuts the assistant message to what
      was played, ``clear_audio`` drops the uncommitted audio.

    Every call the session makes is kept in ``calls`` (per session, oldest first).

    Args:
        rules: The rules, tried in order against what the user said (see `Rule`).
        default_reply: Said when no rule matches; may use ``{user}``.
        greeting: Said for an instructed reply no ``instructions`` rule matches, and before
            the user has spoken.
        instructions: Rules tried against the instructions of ``generate_reply``.
        hearing: The STT the model hears with: ``"provenance"`` (the default) is a new
            `FixtureTextSTT`, else a `WhisperSTT` or another `SegmentSTT` of ours, one per
            model (it is a queue); None hears nothing (audio turns then fail, naming the fix).
        turn_detection: ``"server"`` (the model's own VAD) or ``"client"`` (the session's).
        can_disable_turn_detection: Whether a session given
            ``turn_handling={"turn_detection": "vad"}`` turns the server's detection off (True,
            as OpenAI's) or not (False, as Gemini Live).
        vad: The server-side VAD; None uses one Silero VAD per process (from its wheel).
        audio: Speak the replies (with ``voice``); False answers in text only, and the session
            speaks them with the agent's TTS (a "half-cascade" agent).
        voice: The synthesizer voice; None is `SynthesizerTTS()` (hibari, offline).
        auto_tool_reply: Whether the model answers tool results by itself (LiveKit's
            ``RealtimeCapabilities.auto_tool_reply_generation``, as Gemini Live does): the
            session then only hands it the results (``update_chat_ctx``) and waits for a
            reply of the model's own, instead of calling ``interrupt`` and
            ``generate_reply``. False (the default) is OpenAI's behaviour.

    Example:
        ```python
        session = AgentSession(llm=ScriptedRealtimeModel([
            Rule(r"weather in (?P<city>\\w+)", tool="get_weather", args={"city": "{city}"},
                 reply="{output}"),
        ], greeting="Hello! How can I help?"))
        ```
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default_reply: str = "Sorry, I can't help with that.",
        greeting: str | None = None,
        instructions: Sequence[Rule] = (),
        hearing: SegmentSTT | Literal["provenance"] | None = "provenance",
        turn_detection: Literal["server", "client"] = "server",
        can_disable_turn_detection: bool = True,
        vad: lk_vad.VAD | None = None,
        audio: bool = True,
        voice: SynthesizerTTS | None = None,
        auto_tool_reply: bool = False,
    ) -> None:
        if turn_detection not in ("server", "client"):
            raise ValueError(
                "ScriptedRealtimeModel(turn_detection=...) must be 'server' or 'client', got "
                f"{turn_detection!r}"
            )
        server = turn_detection == "server"
        super().__init__(
            capabilities=llm.RealtimeCapabilities(
                message_truncation=True,
                turn_detection=server,
                user_transcription=True,
                auto_tool_reply_generation=auto_tool_reply,
                audio_output=audio,
                manual_function_calls=True,
                can_disable_turn_detection=server and can_disable_turn_detection,
                mutable_chat_context=True,
                mutable_instructions=True,
                mutable_tools=True,
            )
        )
        self.script = ScriptedLLM(
            rules, default_reply=default_reply, greeting=greeting, instructions=instructions
        )
        """The rules, as the `ScriptedLLM` that answers for this model."""
        self.script.speaks_for = type(self).__name__
        self.hearing: SegmentSTT | None = FixtureTextSTT() if hearing == "provenance" else hearing
        """The STT the model hears with (None: it cannot hear)."""
        self.server_turn_detection = server
        self.auto_tool_reply = auto_tool_reply
        """The model answers tool results on its own (no ``generate_reply`` from the session)."""
        self._vad = vad
        self.audio = audio
        self._voice = voice
        self.sessions: list[ScriptedRealtimeSession] = []
        """Every session made, oldest first (one per agent unless agents share it)."""
        self._label = "pytest_agent_eval.ScriptedRealtimeModel"

    @property
    def model(self) -> str:
        return "scripted-realtime"

    @property
    def provider(self) -> str:
        return "pytest-agent-eval"

    @property
    def vad(self) -> lk_vad.VAD:
        """The VAD of the model's server-side turn detection."""
        if self._vad is None:
            self._vad = _shared_vad()
        return self._vad

    @property
    def voice(self) -> SynthesizerTTS:
        """The voice the replies are spoken with."""
        if self._voice is None:
            self._voice = SynthesizerTTS()
        return self._voice

    def session(self, *, turn_detection_disabled: bool = False) -> ScriptedRealtimeSession:
        server = self.server_turn_detection and not (
            turn_detection_disabled and self.capabilities.can_disable_turn_detection
        )
        made = ScriptedRealtimeSession(self, server_turn_detection=server)
        self.sessions.append(made)
        return made

    def reset_turn_detection(self) -> None:
        """Start the server-side VAD of every open session afresh (from the audio pushed next).

        `LiveKitAdapter` calls it before each audio turn, once the session has taken every
        frame before it: a provider's VAD starts each turn from silence, and a fresh start
        makes where it cuts the fixture a property of the fixture, whatever streamed before.
        """
        for made in self.sessions:
            made.reset_turn_detection()

    async def aclose(self) -> None:
        for made in list(self.sessions):
            await made.aclose()


class ScriptedRealtimeSession(llm.RealtimeSession):  # type: ignore[type-arg]  # bare: no run-time subscript of a livekit base
    """One session of a `ScriptedRealtimeModel` (what the session's agent talks to)."""

    def __init__(self, model: ScriptedRealtimeModel, *, server_turn_detection: bool) -> None:
        super().__init__(model)
        self._model = model
        self.server_turn_detection = server_turn_detection
        """True when the model's own VAD takes the turns in this session."""
        self.calls: list[RealtimeCall] = []
        self.heard: list[str] = []
        """What the model heard, one transcript per user turn, oldest first."""
        self.truncated: list[dict[str, Any]] = []
        """Each ``truncate`` call's message id, played milliseconds and transcript."""
        self._chat_ctx = llm.ChatContext.empty()
        self._tools = llm.ToolContext.empty()
        self._instructions = ""
        self._own_calls: set[str] = set()
        """Call ids of the tool calls this session's replies made."""
        self._ids = itertools.count(1)
        self._buffer: list[rtc.AudioFrame] = []
        self._hearing: list[asyncio.Task[None]] = []
        """Transcriptions under way, in order: a reply waits for them."""
        self._generation: _Generation | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._closed = False
        self._vad_stream: lk_vad.VADStream | None = None
        self._vad_task: asyncio.Task[None] | None = None
        if server_turn_detection:
            self._open_vad()

    # -- the RealtimeSession interface ---------------------------------------------------

    @property
    def chat_ctx(self) -> llm.ChatContext:
        return self._chat_ctx.copy()

    @property
    def tools(self) -> llm.ToolContext:
        return self._tools.copy()

    async def update_instructions(self, instructions: str) -> None:
        self._call("update_instructions", instructions=instructions)
        self._instructions = instructions

    async def update_chat_ctx(self, chat_ctx: llm.ChatContext) -> None:
        self._call("update_chat_ctx", items=len(chat_ctx.items))
        known = {i.call_id for i in self._chat_ctx.items if i.type == "function_call_output"}
        self._chat_ctx = chat_ctx.copy()
        if self._model.auto_tool_reply and any(
            item.type == "function_call_output"
            and item.call_id in self._own_calls
            and item.call_id not in known
            and item.reply_required
            for item in chat_ctx.items
        ):
            # A model that answers tool results itself: a response of its own, once it has
            # them (as a provider's server starts one after a tool response arrives).
            self._spawn(self._answer_tools())

    async def update_tools(self, tools: list[llm.Tool]) -> None:
        self._call("update_tools", names=sorted(_tool_names(tools)))
        self._tools = llm.ToolContext(tools)

    def update_options(self, *, tool_choice: NotGivenOr[llm.ToolChoice | None] = NOT_GIVEN) -> None:
        self._call("update_options", tool_choice=tool_choice if tool_choice else None)

    def push_audio(self, frame: rtc.AudioFrame) -> None:
        if self._closed:
            return
        self._buffer.append(frame)
        if self._vad_stream is not None:
            self._vad_stream.push_frame(frame)

    def push_video(self, frame: rtc.VideoFrame) -> None:
        pass

    def generate_reply(
        self,
        *,
        instructions: NotGivenOr[str] = NOT_GIVEN,
        tool_choice: NotGivenOr[llm.ToolChoice] = NOT_GIVEN,
        tools: NotGivenOr[list[llm.Tool]] = NOT_GIVEN,
    ) -> asyncio.Future[llm.GenerationCreatedEvent]:
        given = instructions if isinstance(instructions, str) else None
        self._call("generate_reply", instructions=given)
        future: asyncio.Future[llm.GenerationCreatedEvent] = (
            asyncio.get_running_loop().create_future()
        )
        self._spawn(self._reply(future, instructions=given))
        return future

    def commit_audio(self) -> None:
        frames, self._buffer = self._buffer, []
        seconds = sum(f.duration for f in frames)
        self._call("commit_audio", seconds=round(seconds, 3))
        if seconds <= _MIN_COMMIT_S:
            return
        self._hear(frames)

    def clear_audio(self) -> None:
        self._call("clear_audio")
        self._buffer = []

    def interrupt(self) -> None:
        self._call("interrupt")
        if self._generation is not None:
            self._generation.stop()

    def truncate(
        self,
        *,
        message_id: str,
        modalities: list[Literal["text", "audio"]],
        audio_end_ms: int,
        audio_transcript: NotGivenOr[str] = NOT_GIVEN,
    ) -> None:
        transcript = audio_transcript if isinstance(audio_transcript, str) else None
        self._call("truncate", message_id=message_id, audio_end_ms=audio_end_ms)
        self.truncated.append(
            {"message_id": message_id, "audio_end_ms": audio_end_ms, "transcript": transcript}
        )
        item = self._chat_ctx.get_by_id(message_id)
        if isinstance(item, llm.ChatMessage) and transcript is not None:
            item.content = [transcript]

    async def aclose(self) -> None:
        if self._closed:
            return
        self._call("aclose")
        self._closed = True
        if self._generation is not None:
            self._generation.stop()
        if self._vad_stream is not None:
            await self._vad_stream.aclose()
        for task in list(self._tasks) + ([self._vad_task] if self._vad_task else []):
            task.cancel()
        for task in list(self._tasks) + ([self._vad_task] if self._vad_task else []):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    # -- server-side turn detection ------------------------------------------------------

    def _open_vad(self) -> None:
        self._vad_stream = self._model.vad.stream()
        self._vad_task = asyncio.ensure_future(self._follow_vad(self._vad_stream))

    def reset_turn_detection(self) -> None:
        """Start the server-side VAD afresh from the next frame (see the model's)."""
        if self._vad_stream is not None and not self._closed:
            self._vad_stream.flush()

    async def _follow_vad(self, stream: lk_vad.VADStream) -> None:
        async for ev in stream:
            if ev.type == lk_vad.VADEventType.START_OF_SPEECH:
                self._buffer = []
                self.emit("input_speech_started", llm.InputSpeechStartedEvent())
            elif ev.type == lk_vad.VADEventType.END_OF_SPEECH:
                self._buffer = []
                self.emit(
                    "input_speech_stopped",
                    llm.InputSpeechStoppedEvent(user_transcription_enabled=True),
                )
                heard = self._hear(list(ev.frames))
                # The server answers its own turn, as a provider does: after the transcript.
                self._spawn(self._answer_turn(heard))

    async def _answer_turn(self, heard: asyncio.Task[None]) -> None:
        await heard
        await self._after_the_sessions_vad()
        if self._closed:
            return
        self._start_generation(user_initiated=False, instructions=None)

    async def _after_the_sessions_vad(self) -> None:
        """Wait, if the session's own VAD still hears the user, until it ends the turn too.

        A provider's reply comes over the network after its server's silence window, so by
        then a session given ``vad=`` has ended the same turn (both VADs hear the same
        audio). Answering within milliseconds instead lets that later end of turn land on the
        reply: LiveKit takes it as the user's turn ending mid-reply, so the reply text comes
        before the end of the user's speech, or the tool's reply is never generated. Ordered
        on the session's event (``user_state_changed``), never on a timer.
        """
        owner = realtime_session_owner(self)
        if owner is None or owner.user_state != "speaking":
            return
        ended = asyncio.Event()

        def on_state(ev: Any) -> None:
            if ev.new_state != "speaking":
                ended.set()

        owner.on("user_state_changed", on_state)
        try:
            if owner.user_state == "speaking":
                await ended.wait()
        finally:
            owner.off("user_state_changed", on_state)

    async def _answer_tools(self) -> None:
        await asyncio.sleep(0)
        if not self._closed:
            self._start_generation(user_initiated=False, instructions=None)

    # -- hearing -------------------------------------------------------------------------

    def _hear(self, frames: list[rtc.AudioFrame]) -> asyncio.Task[None]:
        """Transcribe ``frames`` (one user turn) and report it; the replies wait for it."""
        item_id = f"scripted_rt_user_{next(self._ids)}"
        earlier = list(self._hearing)
        task = self._spawn(self._transcribe(frames, item_id, earlier))
        self._hearing.append(task)
        task.add_done_callback(lambda t: self._hearing.remove(t) if t in self._hearing else None)
        return task

    async def _transcribe(
        self, frames: list[rtc.AudioFrame], item_id: str, earlier: list[asyncio.Task[None]]
    ) -> None:
        for task in earlier:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
        hearing = self._model.hearing
        if hearing is None:
            self._fail(
                AdapterError(
                    "ScriptedRealtimeModel(hearing=None) cannot hear the caller: give it "
                    "hearing=FixtureTextSTT() (the fixture's text, from its provenance) or "
                    "hearing=WhisperSTT() (real recognition)"
                )
            )
            return
        try:
            event = await hearing.recognize(frames)
        except AudioFixtureError as exc:
            self._fail(
                AudioFixtureError(
                    f"ScriptedRealtimeModel could not hear the caller: {exc}. Inside "
                    "LiveKitAdapter, FixtureTextSTT hears a fixture whose provenance proves "
                    "its text; anywhere else give the model hearing=WhisperSTT()"
                )
            )
            return
        except Exception as exc:
            self._fail(exc)
            return
        text = event.alternatives[0].text if event.alternatives else ""
        self.heard.append(text)
        self.emit(
            "input_audio_transcription_completed",
            llm.InputTranscriptionCompleted(
                item_id=item_id, transcript=text, is_final=True, confidence=1.0
            ),
        )
        if text:
            self._chat_ctx.add_message(role="user", content=[text], id=item_id)

    def _fail(self, error: Exception) -> None:
        import time

        self.emit(
            "error",
            llm.RealtimeModelError(
                timestamp=time.time(), label=self._model.label, error=error, recoverable=False
            ),
        )

    # -- replies -------------------------------------------------------------------------

    async def _reply(
        self, future: asyncio.Future[llm.GenerationCreatedEvent], *, instructions: str | None
    ) -> None:
        for task in list(self._hearing):
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await task
        if future.done():  # the session gave up on it (an interruption)
            return
        generation = self._start_generation(user_initiated=True, instructions=instructions)
        if not future.done():
            future.set_result(generation.event)

    def _start_generation(self, *, user_initiated: bool, instructions: str | None) -> _Generation:
        if self._generation is not None:
            self._generation.stop()
        ctx = self._chat_ctx.copy()
        if instructions is not None:
            # How ScriptedLLM tells an instructed reply: a system message of no lk. id.
            ctx.add_message(
                role="system", content=[instructions], id=f"scripted_rt_instr_{next(self._ids)}"
            )
        tools = list(self._tools.flatten())
        self._model.script.requests.append(ctx.copy())
        try:
            text, calls = self._model.script._respond(ctx, tools)
        except Exception as exc:
            # A rule calls a tool the session does not offer now (no real model could: the run
            # errors), our code failed (an AdapterError too), or a rule's callback raised (the
            # agent's crash, at the callback): an unrecoverable model error, and this
            # response says nothing.
            self._fail(exc)
            text, calls = "", []
        response_id = f"scripted_rt_resp_{next(self._ids)}"
        message_id = f"scripted_rt_item_{next(self._ids)}"
        generation = _Generation(self, message_id=message_id, response_id=response_id)
        generation.event = llm.GenerationCreatedEvent(
            message_stream=generation.messages,
            function_stream=generation.functions,
            user_initiated=user_initiated,
            response_id=response_id,
        )
        self._generation = generation
        if not user_initiated:
            self.emit("generation_created", generation.event)
        generation.task = self._spawn(generation.run(text, calls))
        return generation

    def _spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def _call(self, name: str, **args: Any) -> None:
        self.calls.append(RealtimeCall(name, args))

    def _remember(self, item: llm.ChatItem) -> None:
        """What the model itself said goes in its own conversation, as a server keeps it."""
        self._chat_ctx.items.append(item)


class _Generation:
    """One response: a message (text and audio) and the tool calls, then both streams end."""

    def __init__(self, owner: ScriptedRealtimeSession, *, message_id: str, response_id: str):
        self.owner = owner
        self.message_id = message_id
        self.response_id = response_id
        self.messages: utils.aio.Chan[llm.MessageGeneration] = utils.aio.Chan()
        self.functions: utils.aio.Chan[llm.FunctionCall] = utils.aio.Chan()
        self.text: utils.aio.Chan[str] = utils.aio.Chan()
        self.audio: utils.aio.Chan[rtc.AudioFrame] = utils.aio.Chan()
        self.event: llm.GenerationCreatedEvent
        self.task: asyncio.Task[None] | None = None
        self.stopped = False

    def stop(self) -> None:
        """End the response now (an interruption): whatever was sent stays sent."""
        self.stopped = True
        self._close()

    def _close(self) -> None:
        for chan in (self.text, self.audio, self.messages, self.functions):
            if not chan.closed:
                chan.close()
        if self.owner._generation is self:
            self.owner._generation = None

    async def run(self, text: str, calls: Sequence[llm.FunctionToolCall]) -> None:
        model = self.owner._model
        modalities: asyncio.Future[list[Literal["text", "audio"]]] = (
            asyncio.get_running_loop().create_future()
        )
        modalities.set_result(["audio", "text"] if model.audio else ["text"])
        try:
            if text:
                self.messages.send_nowait(
                    llm.MessageGeneration(
                        message_id=self.message_id,
                        text_stream=self.text,
                        audio_stream=self.audio,
                        modalities=modalities,
                    )
                )
                pcm = await self._speak(text) if model.audio else None
                if self.stopped:
                    return
                for word in re.findall(r"\S+\s*", text):
                    if self.stopped:
                        return
                    self.text.send_nowait(word)
                    await asyncio.sleep(0)
                if pcm is not None:
                    for chunk in pcm:
                        if self.stopped:
                            return
                        self.audio.send_nowait(chunk)
                        await asyncio.sleep(0)
                self.owner._remember(
                    llm.ChatMessage(role="assistant", content=[text], id=self.message_id)
                )
            self.text.close()
            self.audio.close()
            self.messages.close()
            for call in calls:
                if self.stopped:
                    return
                item = llm.FunctionCall(
                    id=f"{self.message_id}_{call.call_id}",
                    call_id=call.call_id,
                    name=call.name,
                    arguments=call.arguments,
                )
                self.owner._remember(item)
                self.owner._own_calls.add(call.call_id)
                self.functions.send_nowait(item)
        finally:
            self._close()

    async def _speak(self, text: str) -> list[rtc.AudioFrame]:
        voice = self.owner._model.voice
        frame = await voice.synthesize(text).collect()
        samples = frame.sample_rate * _AUDIO_CHUNK_MS // 1000
        data = bytes(frame.data)
        step = samples * 2 * frame.num_channels
        chunks = []
        for start in range(0, len(data), step):
            piece = data[start : start + step]
            chunks.append(
                rtc.AudioFrame(
                    data=piece,
                    sample_rate=frame.sample_rate,
                    num_channels=frame.num_channels,
                    samples_per_channel=len(piece) // (2 * frame.num_channels),
                )
            )
        return chunks


def _tool_names(tools: Sequence[Any]) -> list[str]:
    names = []
    for tool in tools:
        info = getattr(tool, "info", None)
        name = getattr(info, "name", None) or getattr(tool, "name", None)
        if isinstance(name, str):
            names.append(name)
    return names
