"""SynthesizerTTS: the fixture synthesizer's voices as a LiveKit TTS, offline by default."""

from __future__ import annotations

import asyncio
import uuid

from livekit.agents import APIError, tts
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS, APIConnectOptions

from ....models import VoiceSettings

__all__ = ["SynthesizerTTS"]


class SynthesizerTTS(tts.TTS):  # type: ignore[type-arg]  # bare: no run-time subscript of a livekit base
    """A LiveKit ``tts.TTS`` that speaks with a backend of the fixture synthesizer.

    The default is the ``hibari`` backend and its bundled voice: offline, no key, the same
    voice the synthesizer gives fixtures. It lets an agent under test speak in CI: give it to
    an ``AgentSession`` (in-process with `LiveKitAdapter`, or in a worker tested through a
    room with `LiveKitRoomAdapter`), and the session's reply audio, first-audio latency and
    interruptions become observable.

    The TTS is not streaming: LiveKit wraps it in its sentence-by-sentence adapter, so a long
    reply starts playing after its first sentence is spoken. Each call runs the engine in a
    thread; synthesis in one process is serialized.

    Args:
        backend: A synthesizer backend name (``hibari``, ``piper``, ``espeak`` or one
            registered by a plugin). The offline ones need their extra installed.
        voice: The backend's voice; None for its default.
        speed: Speaking rate (1.0 is normal); None for the backend's default.
        sample_rate: Rate of the audio handed to LiveKit (the engine's output is resampled).

    Raises:
        ConfigError: Unknown backend, voice or speed (checked here, before any session).
        MissingExtraError: The backend's engine or voice is not installed.

    Example:
        ```python
        session = AgentSession(stt=FixtureTextSTT(), vad=VAD, llm=ScriptedLLM(RULES),
                               tts=SynthesizerTTS(), **eval_session_kwargs())
        ```
    """

    def __init__(
        self,
        *,
        backend: str = "hibari",
        voice: str | None = None,
        speed: float | None = None,
        sample_rate: int = 24000,
    ) -> None:
        from ....voice._tts._registry import get_backend

        if sample_rate <= 0:
            raise ValueError(f"SynthesizerTTS: sample_rate must be > 0, got {sample_rate}")
        super().__init__(
            capabilities=tts.TTSCapabilities(streaming=False),
            sample_rate=sample_rate,
            num_channels=1,
        )
        self._backend = get_backend(backend)
        self._settings = self._backend.resolve(
            VoiceSettings(backend=backend, voice=voice, speed=speed)
        )

    @property
    def model(self) -> str:
        """The backend and voice, e.g. ``hibari/heart``."""
        return f"{self._backend.name}/{self._settings.voice or 'default'}"

    @property
    def provider(self) -> str:
        return "pytest-agent-eval"

    @property
    def settings(self) -> VoiceSettings:
        """The resolved voice settings (backend defaults filled in)."""
        return self._settings

    def warm_up(self) -> None:
        """Load the engine now (about a second for hibari) instead of on the first reply.

        Blocking: call it where that is fine, such as a worker's prewarm function.
        """
        self._speak("Ready.")

    def synthesize(
        self, text: str, *, conn_options: APIConnectOptions = DEFAULT_API_CONNECT_OPTIONS
    ) -> tts.ChunkedStream:
        return _SynthesizerStream(tts=self, input_text=text, conn_options=conn_options)

    def _speak(self, text: str) -> bytes:
        """``text`` as 16-bit mono PCM at this TTS's rate (runs in a worker thread; a sentence
        said before in this process comes from memory, the same bytes)."""
        from ....voice._reply_voice import speak_reply

        return speak_reply(self._backend, self._settings, self.sample_rate, text).pcm


class _SynthesizerStream(tts.ChunkedStream):
    async def _run(self, output_emitter: tts.AudioEmitter) -> None:
        owner = self._tts
        assert isinstance(owner, SynthesizerTTS)
        try:
            pcm = await asyncio.to_thread(owner._speak, self.input_text)
        except Exception as exc:
            # An APIError is what the session reports as a TTS error event (and gives up on,
            # since retrying an offline engine would fail the same way).
            raise APIError(
                f"{owner.model} could not speak {self.input_text[:80]!r}: "
                f"{type(exc).__name__}: {exc}",
                retryable=False,
            ) from exc
        output_emitter.initialize(
            request_id=uuid.uuid4().hex,
            sample_rate=owner.sample_rate,
            num_channels=1,
            mime_type="audio/pcm",
        )
        output_emitter.push(pcm)
        output_emitter.flush()
