"""The error a text adapter raises when the user's agent raised: a crash of the agent (the
run is CRASHED, `models.Verdict`), not a failure of ours (an ERROR). One exception: a provider
that refused the agent's credentials, or a key that is missing, means the agent was never
evaluated as configured, so that run is an ERROR naming the fix."""

from __future__ import annotations

from .._retry import http_status
from ..errors import AdapterError, AgentCrashError, AgentEvalError
from ..models import Crash

__all__ = ["agent_crashed"]

_CREDENTIAL_CLASSES = ("AuthenticationError", "PermissionDeniedError")
_MISSING_KEY_WORDS = ("api_key", "api key", "API_KEY")


def _credentials_refused(exc: BaseException) -> bool:
    """Whether ``exc`` says the provider could not be used with the agent's credentials: an
    HTTP 401 or 403, an SDK's authentication error, or a key that is not set."""
    if http_status(exc) in (401, 403):
        return True
    if any(cls.__name__ in _CREDENTIAL_CLASSES for cls in type(exc).__mro__):
        return True
    text = str(exc)
    return any(word in text for word in _MISSING_KEY_WORDS) and (
        "not set" in text or "missing" in text.lower() or "must be set" in text
    )


def agent_crashed(message: str, exc: BaseException) -> AgentEvalError:
    """``message`` (what failed, on which turn) as an `AgentCrashError` carrying ``exc``'s
    type, message and the place in the agent's code it came from; as an `AdapterError` (an
    ERROR) when the provider refused the credentials or no key was set."""
    if _credentials_refused(exc):
        return AdapterError(
            f"{message}. The provider refused the agent's credentials or no API key is set, so "
            "the agent was not evaluated: set the key the provider needs (e.g. OPENAI_API_KEY) "
            "or point the client at a server that takes it"
        )
    crash = Crash.of(exc)
    return AgentCrashError(message, kind=crash.type, detail=crash.message, where=crash.where)
