"""Which judge failures are worth another attempt, and how long to wait before it.

Errors from pydantic-ai, the OpenAI SDK and httpx are recognised by their classes without
importing those packages here: a class is matched by its module and name along the MRO, so
this module stays import-light and works whichever of them is installed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable

__all__ = ["backoff_delay", "describe_error", "is_transient", "rejects_temperature"]

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


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    return status if isinstance(status, int) else None


def is_transient(exc: BaseException) -> bool:
    """True for failures another attempt may cure: timeouts, 429, 5xx, dropped connections."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError | ConnectionError):
        return True
    ids = _class_ids(exc)
    if ids & _PERMANENT_CLASSES:
        return False
    status = _status(exc)
    if status is not None:
        return status in _TRANSIENT_STATUS or status >= 500
    return bool(ids & _TRANSIENT_CLASSES)


def rejects_temperature(exc: BaseException) -> bool:
    """True when the provider refused the request because of the ``temperature`` setting.

    Reasoning models (for example OpenAI's o-series) answer 400 "Unsupported parameter:
    'temperature'"; the judge then retries without it.
    """
    status = _status(exc)
    if status is not None and status not in (400, 422):
        return False
    text = f"{exc} {getattr(exc, 'body', '') or ''}".lower()
    return "temperature" in text and any(
        word in text for word in ("unsupported", "not support", "invalid", "does not", "only")
    )


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
    return max(0.0, delay)


def describe_error(exc: BaseException) -> str:
    """A one-line description of a judge failure for the errored verdict."""
    if isinstance(exc, TimeoutError | asyncio.TimeoutError) and not str(exc):
        return "timed out"
    text = " ".join(str(exc).split())
    if len(text) > 300:
        text = text[:299] + "…"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
