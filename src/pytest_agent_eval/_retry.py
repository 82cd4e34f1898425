"""Which API failures are worth another attempt, how long to wait before it, and how to say why.

`attempt_with_budget` is the one retry loop of the judges and the simulated caller (their
budget rules are one rule). The judge and the OpenAI TTS backend retry alike: the same transient-error classification,
exponential backoff with jitter, and a provider's ``Retry-After``. Errors from pydantic-ai, the
OpenAI SDK and httpx are recognised by their classes without importing those packages here: a
class is matched by its top-level module and name along the MRO, so this module stays
import-light and works whichever of them is installed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from ._text import clip

__all__ = [
    "ERROR_TEXT_MAX_CHARS",
    "Attempts",
    "Budget",
    "attempt_with_budget",
    "backoff_delay",
    "describe_error",
    "http_status",
    "is_rate_limit",
    "is_transient",
    "rejects_temperature",
    "retry_after_s",
    "wrong_api_hint",
]

T = TypeVar("T")

ERROR_TEXT_MAX_CHARS = 300
"""Provider error bodies can be pages long; a failure reason keeps the first few lines' worth."""

_TRANSIENT_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})

# (module prefix, class name) pairs of errors that another attempt may cure.
_TRANSIENT_CLASSES = frozenset(
    {
        # pydantic-ai (newer releases categorise provider errors)
        ("pydantic_ai", "ModelRateLimitError"),
        ("pydantic_ai", "ModelUnavailableError"),
        ("pydantic_ai", "ModelServerError"),
        ("pydantic_ai", "ModelConnectionError"),
        ("pydantic_ai", "ModelRequestTimeout"),
        # A verdict the model could not put in the required shape: a new sample may.
        ("pydantic_ai", "UnexpectedModelBehavior"),
        # OpenAI SDK
        ("openai", "APITimeoutError"),
        ("openai", "APIConnectionError"),
        ("openai", "RateLimitError"),
        ("openai", "InternalServerError"),
        # httpx / httpx2 transports
        ("httpx", "TimeoutException"),
        ("httpx", "TransportError"),
        ("httpx2", "TimeoutException"),
        ("httpx2", "TransportError"),
    }
)

# Errors that look transient by class or status but are not: a content filter or an exhausted
# quota won't change on retry.
_PERMANENT_CLASSES = frozenset(
    {("pydantic_ai", "ContentFilterError"), ("pydantic_ai", "ModelQuotaExceededError")}
)


def _class_ids(exc: BaseException) -> set[tuple[str, str]]:
    return {(cls.__module__.split(".")[0], cls.__name__) for cls in type(exc).__mro__}


def http_status(exc: BaseException) -> int | None:
    """The HTTP status an SDK error carries (``status_code``), or None."""
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """True for failures another attempt may cure: timeouts, 429, 5xx, dropped connections."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return True
    ids = _class_ids(exc)
    if ids & _PERMANENT_CLASSES:
        return False
    status = http_status(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return bool(ids & _TRANSIENT_CLASSES)


def retry_after_s(exc: BaseException) -> float | None:
    """Seconds the provider asked us to wait, or None.

    pydantic-ai puts it on the error (``retry_after``, newer releases); the OpenAI SDK keeps the
    response, whose ``Retry-After`` header is read when it is a number of seconds (an HTTP date
    is ignored). Older pydantic-ai releases wrap the SDK error, so its cause is read too.
    """
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _own_retry_after(current)
        if found is not None:
            return found
        current = current.__cause__
    return None


def _own_retry_after(exc: BaseException) -> float | None:
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return max(0.0, float(value))
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    header = headers.get("retry-after") if headers is not None else None
    if header is None:
        return None
    try:
        return max(0.0, float(header))
    except ValueError:
        return None


def backoff_delay(
    attempt: int,
    *,
    base_s: float,
    cap_s: float,
    retry_after_s: float | None = None,
    rand: Callable[[], float] = random.random,
) -> float:
    """Seconds to wait before retry number ``attempt`` (1 for the first retry).

    Exponential (``base_s * 2**(attempt-1)``, capped at ``cap_s``) with "equal jitter": half
    the delay is fixed and half random, so parallel runs that failed together do not retry
    together. A provider's ``Retry-After`` wins when it is longer, still capped.
    """
    exp = min(cap_s, base_s * (2 ** max(0, attempt - 1)))
    delay = exp / 2 + rand() * exp / 2
    if retry_after_s is not None and retry_after_s > delay:
        delay = min(cap_s, retry_after_s)
    return float(max(0.0, delay))


def _message(exc: BaseException) -> str:
    body = getattr(exc, "body", None)
    if isinstance(body, Mapping) and isinstance(body.get("message"), str):
        return str(body["message"])  # the API's own words, without the SDK's prefix
    message = getattr(exc, "message", None)
    return message if isinstance(message, str) and message else str(exc)


def describe_error(exc: BaseException, *, with_class: bool = True) -> str:
    """One line saying what failed: ``HTTP 429 RateLimitError: <the API's message>``.

    Args:
        exc: The failure.
        with_class: Name the exception class; callers whose message already names the API
            (``OpenAI speech refused the request: HTTP 400: ...``) leave it out for HTTP errors.

    Returns:
        ``timed out`` for a bare timeout, else ``[HTTP <status> ]<Class>: <message>`` with the
        message on one line and cut to `ERROR_TEXT_MAX_CHARS`.
    """
    if isinstance(exc, TimeoutError | asyncio.TimeoutError) and not str(exc):
        return "timed out"
    text = clip(_message(exc), ERROR_TEXT_MAX_CHARS)
    name = type(exc).__name__
    status = http_status(exc)
    if status is not None:
        head = f"HTTP {status} {name}" if with_class else f"HTTP {status}"
    else:
        head = name
    return f"{head}: {text}" if text else head


def wrong_api_hint(model_id: str, exc: BaseException) -> str:
    """What to use instead when an ``openai:`` model met a server without OpenAI's Responses
    API, or "" for any other failure.

    pydantic-ai's ``openai:`` ids speak the Responses API (``POST /v1/responses``); most
    self-hosted servers (vLLM, Ollama, llama.cpp, LiteLLM) speak only Chat Completions. Such a
    server answers 404, or a chat completion the client cannot read, which surfaces as
    ``TypeError: 'NoneType' object is not iterable``: neither says what to change.
    """
    if not model_id.startswith("openai:"):
        return ""
    text = str(exc)
    name = model_id.removeprefix("openai:")
    instead = f"use 'openai-chat:{name}' (pydantic-ai's OpenAIChatModel)"
    if isinstance(exc, TypeError) and "NoneType" in text and "iterable" in text:
        return (
            ". An 'openai:' model speaks OpenAI's Responses API (POST /v1/responses), and this "
            "server answered it with something else: for a server that speaks only Chat "
            f"Completions (vLLM, Ollama, llama.cpp, LiteLLM, most self-hosted ones) {instead}"
        )
    if http_status(exc) in (404, 405):
        return (
            ". An 'openai:' model speaks OpenAI's Responses API (POST /v1/responses): if this "
            f"server speaks only Chat Completions (most self-hosted ones do), {instead}"
        )
    return ""


# --------------------------------------------------------------------------------------------
# The attempt budget: one loop for every model call a check or a simulated caller makes
# --------------------------------------------------------------------------------------------


@dataclass(slots=True, kw_only=True)
class Budget:
    """How many attempts a model call gets, how long each may take, and how to wait between.

    ``retries = 2`` means at most 3 requests. A request that the model refused because of its
    ``temperature`` is asked again without it and does not use up a retry (`omit_temperature`
    then stays set, so later calls of the same caller leave it out from the start).
    """

    retries: int
    """Extra attempts after a retryable failure."""
    timeout_s: float
    """Seconds one attempt may take."""
    backoff_s: float = 1.0
    """Base delay before the first retry; doubled for each later one."""
    max_backoff_s: float = 20.0
    """Upper bound of one backoff delay, also for a provider's ``Retry-After``."""
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep
    """How to wait between attempts (tests inject a no-op)."""
    omit_temperature: bool = False
    """True once the model refused a ``temperature``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Attempts(Generic[T]):
    """What `attempt_with_budget` got: the value, or why every attempt failed."""

    value: T | None = None
    failure: str | None = None
    """One line: what failed, the model and the number of attempts; None on success."""
    attempts: int = 0
    """Requests made (a temperature refusal included)."""


async def attempt_with_budget(
    attempt: Callable[[BaseException | None, bool], Awaitable[T]],
    budget: Budget,
    *,
    model_id: str,
    what: str,
    retryable: Callable[[BaseException], bool] = is_transient,
    uses_temperature: bool = True,
) -> Attempts[T]:
    """Call ``attempt`` until it returns, within ``budget``; never raises what it raised.

    Args:
        attempt: ``attempt(previous_failure, omit_temperature)``, one request; the previous
            failure lets an attempt say what was wrong with the last answer.
        budget: Retries, timeout per attempt, backoff; its ``omit_temperature`` is updated.
        model_id: Named in the failure.
        what: What an attempt returns, for a timeout's words (``verdict``: "no verdict
            within timeout=30s").
        retryable: Failures another attempt may cure (default: `is_transient`). A provider's
            ``Retry-After`` longer than the timeout ends the attempts at once.
        uses_temperature: Whether attempts send a temperature (the refusal rule applies).
    """
    failures = 0
    made = 0
    previous: BaseException | None = None
    while True:
        made += 1
        try:
            value = await asyncio.wait_for(
                attempt(previous, budget.omit_temperature), timeout=budget.timeout_s
            )
        except Exception as exc:  # classified below; never escapes
            if uses_temperature and not budget.omit_temperature and rejects_temperature(exc):
                budget.omit_temperature = True
                continue
            failures += 1
            previous = exc
            wait_s = retry_after_s(exc)
            too_long = wait_s is not None and wait_s > budget.timeout_s
            if failures > budget.retries or not retryable(exc) or too_long:
                why = describe_error(exc)
                if isinstance(exc, TimeoutError):
                    why = f"no {what} within timeout={budget.timeout_s:g}s"
                elif is_rate_limit(exc):
                    asked = f", asked to wait {wait_s:g}s" if wait_s is not None else ""
                    longer = f" (more than timeout={budget.timeout_s:g}s)" if too_long else ""
                    why = f"rate limited{asked}{longer}: {why}"
                tries = f"{failures} attempt{'s' if failures != 1 else ''}"
                hint = wrong_api_hint(model_id, exc)
                return Attempts(failure=f"{why} (model {model_id!r}, {tries}){hint}", attempts=made)
            delay = backoff_delay(failures, base_s=budget.backoff_s, cap_s=budget.max_backoff_s)
            if wait_s is not None:  # the provider's own word, honoured up to the timeout
                delay = max(delay, wait_s)
            await budget.sleep(delay)
            continue
        return Attempts(value=value, attempts=made)


def is_rate_limit(exc: BaseException) -> bool:
    """A 429, or a provider error class that says rate limit."""
    if http_status(exc) == 429:
        return True
    return any("RateLimit" in cls.__name__ for cls in type(exc).__mro__)


def rejects_temperature(exc: BaseException) -> bool:
    """True when the provider refused the request because of the ``temperature`` setting.

    Reasoning models (for example OpenAI's o-series) answer 400 "Unsupported parameter:
    'temperature'"; the call is then made again without it.
    """
    status = http_status(exc)
    if status is not None and status not in (400, 422):
        return False
    text = f"{exc} {getattr(exc, 'body', '') or ''}".lower()
    return "temperature" in text and any(
        word in text for word in ("unsupported", "not support", "invalid", "does not", "only")
    )
