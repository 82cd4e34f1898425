"""When a judge model refused the request because of its ``temperature`` setting.

Which failures are transient, the backoff and the error text are shared with the TTS backend
in `pytest_agent_eval._retry`; this is the one judge-only rule.
"""

from __future__ import annotations

from .._retry import http_status

__all__ = ["rejects_temperature"]


def rejects_temperature(exc: BaseException) -> bool:
    """True when the provider refused the request because of the ``temperature`` setting.

    Reasoning models (for example OpenAI's o-series) answer 400 "Unsupported parameter:
    'temperature'"; the judge then retries without it.
    """
    status = http_status(exc)
    if status is not None and status not in (400, 422):
        return False
    text = f"{exc} {getattr(exc, 'body', '') or ''}".lower()
    return "temperature" in text and any(
        word in text for word in ("unsupported", "not support", "invalid", "does not", "only")
    )
