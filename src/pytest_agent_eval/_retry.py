"""Which API failures are worth another attempt, how long to wait before it, and how to say why.

The judge and the OpenAI TTS backend retry alike: the same transient-error classification,
exponential backoff with jitter, and a provider's ``Retry-After``. Errors from pydantic-ai, the
OpenAI SDK and httpx are recognised by their classes without importing those packages here: a
class is matched by its top-level module and name along the MRO, so this module stays
import-light and works whichever of them is installed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Mapping

from ._text import clip

__all__ = [
    "ERROR_TEXT_MAX_CHARS",
    "backoff_delay",
    "describe_error",
    "http_status",
    "is_transient",
    "retry_after_s",
]

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
