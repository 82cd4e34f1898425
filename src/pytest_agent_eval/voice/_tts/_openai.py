"""OpenAI's speech endpoint (``/v1/audio/speech``) through the official SDK, raw PCM at 24 kHz.

The speech models are announced for retirement in favour of the Realtime API; this backend only
depends on "text in, 24 kHz PCM out", so a Realtime backend can replace it behind the same
protocol (`asynthesize` is what a run awaits).

Transient failures (429, 5xx, timeouts, dropped connections) are retried with exponential
backoff, honouring ``Retry-After``; other errors (bad key, bad voice) fail at once. The key and
endpoint come from the SDK's usual environment variables (``OPENAI_API_KEY``,
``OPENAI_BASE_URL``).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ..._retry import backoff_delay, describe_error, is_transient, retry_after_s
from ...errors import (
    AudioFixtureError,
    ConfigError,
    MissingExtraError,
    install_command,
    require_extra,
)
from ...models import VoiceSettings
from .._fixtures import AudioClip, clip_from_pcm16
from ._registry import Execution, package_version

__all__ = ["OPENAI_MODELS", "OPENAI_VOICES", "OpenAIBackend", "SpeechAPIError"]

OPENAI_VOICES = frozenset(
    {"alloy", "ash", "ballad", "cedar", "coral", "echo", "fable", "marin", "nova", "onyx"}
    | {"sage", "shimmer", "verse"}
)
"""OpenAI's speech voices: the command line recognizes them (the earlier pytest-agent-eval
took ``--voice alloy``) and says to add ``--backend openai``."""
OPENAI_MODELS = frozenset(
    {"tts-1", "tts-1-hd", "gpt-4o-mini-tts", "gpt-4o-realtime-preview"}
    | {"gpt-4o-mini-realtime-preview", "gpt-realtime"}
)
"""OpenAI speech (and the earlier package's Realtime) model names, recognized the same way."""

_EXTRA = "openai"
PCM_SAMPLE_RATE = 24000
"""The speech endpoint's ``pcm`` format is 16-bit mono at 24 kHz, always."""
_MAX_BACKOFF_S = 30.0
"""Cap of one wait between attempts, a provider's ``Retry-After`` included."""


class SpeechAPIError(AudioFixtureError):
    """The speech endpoint refused a request, or kept failing after every retry."""


class OpenAIBackend:
    """The ``openai`` backend: model ``gpt-4o-mini-tts``, voice ``alloy``, speed 0.25-4.0."""

    name = "openai"
    execution: Execution = "async"
    default_model = "gpt-4o-mini-tts"
    default_voice = "alloy"
    api_version = "speech-v1"
    """Stands in for an engine version in the fixture key: the audio depends on the model name
    (already in the key) and the endpoint, not on the SDK's version."""

    def __init__(
        self,
        *,
        retries: int = 4,
        backoff_s: float = 0.5,
        timeout_s: float = 60.0,
        client: Any = None,
    ) -> None:
        self.retries = retries
        self.backoff_s = backoff_s
        self.timeout_s = timeout_s
        self._client = client
        self._owns_client = client is None

    def version(self) -> str:
        package_version("openai", install=install_command(_EXTRA))
        return self.api_version

    def resolve(self, settings: VoiceSettings) -> VoiceSettings:
        self.version()
        speed = 1.0 if settings.speed is None else float(settings.speed)
        if not 0.25 <= speed <= 4.0:
            raise ConfigError(f"openai speed must be between 0.25 and 4.0, got {speed}")
        return VoiceSettings(
            backend=self.name,
            voice=settings.voice or self.default_voice,
            model=settings.model or self.default_model,
            speed=speed,
            sample_rate=settings.sample_rate,
            seed=None,
            language=settings.language,
        )

    def _async_client(self) -> Any:
        if self._client is None:
            require_extra("openai", extra="openai", feature="The openai TTS backend")
            import openai

            try:
                # Retries are ours (below), so the SDK's own are off.
                self._client = openai.AsyncOpenAI(max_retries=0, timeout=self.timeout_s)
            except openai.OpenAIError as exc:
                raise MissingExtraError(
                    f"the openai TTS backend needs an API key: set OPENAI_API_KEY ({exc})"
                ) from exc
        return self._client

    async def asynthesize(self, text: str, settings: VoiceSettings) -> AudioClip:
        """Speak ``text``; retried on transient errors."""
        import openai

        client = self._async_client()
        for attempt in range(self.retries + 1):
            try:
                response = await client.audio.speech.create(
                    model=settings.model or self.default_model,
                    voice=settings.voice or self.default_voice,
                    input=text,
                    response_format="pcm",
                    speed=settings.speed or 1.0,
                )
                return clip_from_pcm16(response.content, PCM_SAMPLE_RATE)
            except Exception as exc:  # classified below; anything else propagates as is
                if not is_transient(exc):
                    if isinstance(exc, openai.APIStatusError):
                        raise SpeechAPIError(
                            f"OpenAI speech refused the request: {_describe(exc)}"
                        ) from exc
                    raise
                if attempt == self.retries:
                    raise SpeechAPIError(
                        f"OpenAI speech failed after {attempt + 1} attempts: {_describe(exc)}"
                    ) from exc
                await asyncio.sleep(
                    backoff_delay(
                        attempt + 1,
                        base_s=self.backoff_s,
                        cap_s=_MAX_BACKOFF_S,
                        retry_after_s=retry_after_s(exc),
                    )
                )
        raise AssertionError("unreachable")  # pragma: no cover

    def synthesize(self, text: str, settings: VoiceSettings) -> AudioClip:
        """Blocking `asynthesize`, for callers without an event loop."""

        async def once() -> AudioClip:
            try:
                return await self.asynthesize(text, settings)
            finally:
                await self.aclose()  # the client is bound to this event loop

        return asyncio.run(once())

    async def aclose(self) -> None:
        """Close the HTTP client this backend opened (not one it was given)."""
        if self._owns_client and self._client is not None:
            client, self._client = self._client, None
            await client.close()


def _describe(exc: Exception) -> str:
    # The message already names the API, so an HTTP error reads "HTTP 429: <its words>".
    return describe_error(exc, with_class=False)
