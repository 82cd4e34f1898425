"""Shared parts of the LiveKit tests: the example's agent, Silero VAD, and TTS-made fixtures.

The example's ``booking_agent`` module is imported here, at collection, on the main thread:
LiveKit plugins refuse to register from any other thread. (No ``__init__.py`` in this folder:
a package called ``livekit`` would shadow the real one.)
"""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import wave
from collections.abc import Coroutine
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

import pytest
from livekit.agents import tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.models import AgentReply, Greeting, Transcript, Turn

T = TypeVar("T")

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"

BOOK_TEXT = "Hi, I am Alice and I would like a table for two at seven pm."
NAME_TEXT = "What name is the booking under?"
HELLO_TEXT = "Hello there!"
TWO_PHRASES_TEXT = "Hi, my name is Alice. Book a table for two at seven pm."


def _import_example_agent() -> ModuleType:
    name = "voice_livekit_booking_agent"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE_DIR / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


booking = _import_example_agent()


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine to completion in a fresh event loop (no pytest-asyncio here)."""
    return asyncio.run(coro)


@dataclass(frozen=True)
class Fixtures:
    """WAV fixtures made by the project's synthesizer (hibari, offline), plus broken ones."""

    folder: Path
    book: Path
    """BOOK_TEXT, 16 kHz mono."""
    name: Path
    """NAME_TEXT, 16 kHz mono."""
    hello_44k: Path
    """HELLO_TEXT at 44.1 kHz."""
    two_phrases: Path
    """TWO_PHRASES_TEXT: two sentences with a pause the VAD cuts at."""
    book_stereo: Path
    """``book`` as a two-channel 22.05 kHz file (same speech on both channels)."""
    empty: Path
    """A valid WAV header with no samples."""
    silent: Path
    """One second of digital silence."""
    tone: Path
    """One second of a 220 Hz tone: loud, but not speech."""
    missing: Path
    """A path where no file exists."""


FIXTURES_YAML = f"""
id: livekit_test_fixtures
turns:
  - user: "{BOOK_TEXT}"
    audio: book.wav
  - user: "{NAME_TEXT}"
    audio: name.wav
  - user: "{HELLO_TEXT}"
    audio: hello_44k.wav
    voice: {{sample_rate: 44100}}
  - user: "{TWO_PHRASES_TEXT}"
    audio: two_phrases.wav
"""


def make_fixtures(tmp_path_factory: pytest.TempPathFactory) -> Fixtures:
    """Synthesize the fixtures the way users do (the project's synthesizer, offline)."""
    import numpy as np
    import soundfile

    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("voice")
    yaml_path = folder / "fixtures.yaml"
    yaml_path.write_text(FIXTURES_YAML)
    ensure_fixtures([load_transcript_file(yaml_path)], jobs=1).raise_for_failures()

    mono, _rate = soundfile.read(str(folder / "book.wav"), dtype="float32")
    import soxr

    at_22k = soxr.resample(mono, 16000, 22050)
    stereo = np.stack([at_22k, at_22k], axis=1)
    soundfile.write(str(folder / "book_stereo.wav"), stereo, 22050, subtype="PCM_16")
    _record_derivation(folder / "book_stereo.wav", folder / "book.wav", sample_rate=22050)

    with wave.open(str(folder / "empty.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
    with wave.open(str(folder / "silent.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(b"\0\0" * 16000)
    seconds = np.arange(16000) / 16000
    tone = (0.5 * np.sin(2 * np.pi * 220 * seconds)).astype(np.float32)
    soundfile.write(str(folder / "tone.wav"), tone, 16000, subtype="PCM_16")
    return Fixtures(
        folder=folder,
        book=folder / "book.wav",
        name=folder / "name.wav",
        hello_44k=folder / "hello_44k.wav",
        two_phrases=folder / "two_phrases.wav",
        book_stereo=folder / "book_stereo.wav",
        empty=folder / "empty.wav",
        silent=folder / "silent.wav",
        tone=folder / "tone.wav",
        missing=folder / "missing.wav",
    )


def _record_derivation(derived: Path, source: Path, *, sample_rate: int) -> None:
    """Give a WAV derived from a synthesized one (resampled, channels added) a sidecar saying
    so: the text it speaks, the source's inputs, its own bytes. FixtureTextSTT answers only for
    fixtures whose provenance proves their text; a bare derived file would be a recording."""
    import hashlib

    from pytest_agent_eval.voice._fixtures import Sidecar, read_sidecar, write_sidecar

    made = read_sidecar(source)
    assert made is not None
    inputs = {**made.inputs, "sample_rate": sample_rate, "derived_from": source.name}
    data = derived.read_bytes()
    write_sidecar(
        derived,
        Sidecar(
            text=made.text,
            inputs=inputs,
            wav_bytes=len(data),
            wav_sha256=hashlib.sha256(data).hexdigest(),
            duration_s=made.duration_s,
            phrases=made.phrases,
            words=made.words,  # resampling moves no word
            word_alignment=made.word_alignment,
        ),
    )


def booking_adapter(vad: Any, make_stt: Any = None, **options: Any) -> Any:
    """A `LiveKitAdapter` over the example's restaurant agent, with ``vad`` and an STT from
    ``make_stt`` (default: `FixtureTextSTT`)."""
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import (
        FixtureTextSTT,
        LiveKitAdapter,
        ScriptedLLM,
        eval_session_kwargs,
    )

    make = make_stt or FixtureTextSTT

    def factory() -> tuple[AgentSession, Any]:
        session = AgentSession(
            stt=make(), vad=vad, llm=ScriptedLLM(booking.RULES), **eval_session_kwargs()
        )
        return session, booking.RestaurantAgent()

    return LiveKitAdapter(factory, **options)


def book_then_name(fixtures: Fixtures) -> Transcript:
    """Two audio turns: the booking, then the question about its name."""
    return transcript(
        Turn(user=BOOK_TEXT, audio=fixtures.book), Turn(user=NAME_TEXT, audio=fixtures.name)
    )


def transcript(*turns: Turn, id: str = "t") -> Transcript:
    """A transcript of ``turns`` (audio paths already absolute)."""
    return Transcript(id=id, turns=list(turns))


async def converse(adapter: Any, script: Transcript, run_index: int = 0) -> list[AgentReply]:
    """The runner's protocol by hand: prepare, start, every turn, and always close."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    try:
        return [
            await conversation.respond(turn_input(script, i, run_index))
            for i in range(len(script.turns))
        ]
    finally:
        await conversation.aclose()


async def converse_greeted(
    adapter: Any, script: Transcript, run_index: int = 0
) -> tuple[Greeting, list[AgentReply]]:
    """`converse`, also returning what the agent said before turn 1 (``greeting()``)."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    try:
        greeting = conversation.greeting()
        replies = [
            await conversation.respond(turn_input(script, i, run_index))
            for i in range(len(script.turns))
        ]
        return greeting, replies
    finally:
        await conversation.aclose()


def turn_input(script: Transcript, index: int, run_index: int = 0) -> TurnInput:
    """The `TurnInput` the runner builds for turn ``index`` (with the turn that interrupts
    its reply, if any)."""
    return TurnInput.of(
        script,
        index,
        run_index,
        interrupted_by=TurnInput.interrupting(script, index, run_index),
    )


class ProjectVoiceTTS(tts.TTS):
    """A LiveKit TTS speaking with the project's offline default voice (hibari, 24 kHz)."""

    def __init__(self) -> None:
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False), sample_rate=24000, num_channels=1
        )

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _ProjectVoiceStream(tts=self, input_text=text, conn_options=conn_options)


class _ProjectVoiceStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        from pytest_agent_eval.models import VoiceSettings
        from pytest_agent_eval.voice._fixtures import resample, to_pcm16_bytes
        from pytest_agent_eval.voice._tts._registry import get_backend

        backend = get_backend("hibari")
        settings = backend.resolve(VoiceSettings())
        clip = await asyncio.to_thread(backend.synthesize, self.input_text, settings)
        output_emitter.initialize(
            request_id="project-voice", sample_rate=24000, num_channels=1, mime_type="audio/pcm"
        )
        output_emitter.push(to_pcm16_bytes(resample(clip, 24000)))
        output_emitter.flush()
