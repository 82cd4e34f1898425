"""What is the agent's crash.

`agent_crashed`: the error a text adapter raises when the user's agent raised: a crash of the
agent (the run is CRASHED, `models.Verdict`), not a failure of ours (an ERROR). One exception:
a provider that refused the agent's credentials, or a key that is missing, means the agent was
never evaluated as configured, so that run is an ERROR naming the fix.

`agent_packages`: the installed packages the user's agent came from. `Crash.from_agent_code`
takes a frame in an installed package for a framework's, not the agent's (a framework logs
exceptions of its own, such as a provider connection it reconnects); an agent installed as a
package (``pip install .`` of the user's project, in site-packages) is the user's code all the
same, so the adapters pass its packages as ``own=``.
"""

from __future__ import annotations

import inspect
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

from .._retry import http_status
from ..errors import AdapterError, AgentCrashError, AgentEvalError
from ..models import Crash

__all__ = ["agent_crashed", "agent_packages", "crash_through", "script_failure"]

_FRAMEWORKS = frozenset(
    {
        "builtins",
        "langchain",
        "langchain_core",
        "langgraph",
        "livekit",
        "openai",
        "pipecat",
        "pipecat_flows",
        "pydantic_ai",
        "pytest_agent_eval",
        "smolagents",
    }
)
"""Top-level packages that are the frameworks (or ours), never the user's agent, though an
agent's class derives from theirs or is theirs (``Agent(instructions=...)``)."""

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


def crash_through(
    error: object, message: str, *, elsewhere: str, own: Iterable[str] = ()
) -> AgentCrashError:
    """``message: Type: text`` as an `AgentCrashError` carrying ``error``'s type and message,
    its place the innermost frame of the user's code ``error`` came through (`Crash.
    from_agent_code`: a scripted model's rule callback that raised, though our model called
    it), else ``elsewhere`` (the part of the framework that reported it)."""
    exc = error if isinstance(error, BaseException) else None
    crash = Crash.from_agent_code(exc, own=own) if exc is not None else None
    return AgentCrashError(
        f"{message}: {type(error).__name__}: {error}",
        kind=type(error).__name__,
        detail=str(error),
        where=(crash.where if crash is not None else None) or elsewhere,
    )


def script_failure(exc: Exception, callbacks: Iterable[object], model: str) -> Exception:
    """What a scripted model raises when answering from its rules raised ``exc``: ``exc``
    itself when it came through the user's code (a rule's callback among ``callbacks``, the
    rules' functions, installed or not: the agent's crash), else an `AdapterError` naming
    ``model`` (our code failing: an ERROR, no crash of the agent)."""
    if isinstance(exc, AgentEvalError):
        return exc
    if Crash.from_agent_code(exc, own=agent_packages(*callbacks)) is not None:
        return exc
    return AdapterError(f"{model} failed answering from its rules: {type(exc).__name__}: {exc}")


def agent_packages(*objects: object) -> tuple[str, ...]:
    """The folders (or single-module files) of the installed packages ``objects`` came from:
    each object's class and its bases, or the function or class itself, by the module that
    defines it. Only packages in an installed location (site-packages, dist-packages) are
    listed, since the rest is the user's code already; the standard library and the
    frameworks (`_FRAMEWORKS`) never are. None among ``objects`` is skipped."""
    modules: list[str] = []
    for obj in objects:
        if obj is None:
            continue
        if inspect.isfunction(obj) or inspect.ismethod(obj):
            modules.append(getattr(obj, "__module__", "") or "")
            continue
        cls = obj if isinstance(obj, type) else type(obj)
        modules.extend(getattr(c, "__module__", "") or "" for c in cls.__mro__)
    roots: list[str] = []
    for name in dict.fromkeys(modules):
        root = _package_root(name)
        if root is not None and root not in roots:
            roots.append(root)
    return tuple(roots)


def _package_root(module_name: str) -> str | None:
    """The folder of the outermost regular package of ``module_name`` (a namespace package's
    parts belong to many distributions: the first part with a file of its own is the
    package), or the module's file for a top-level module; None when it is not installed
    code of a user (not loaded, the standard library, a framework, outside site-packages)."""
    parts = module_name.split(".")
    if not parts[0] or parts[0] in _FRAMEWORKS or parts[0] in sys.stdlib_module_names:
        return None
    for depth in range(1, len(parts) + 1):
        module = sys.modules.get(".".join(parts[:depth]))
        filename = getattr(module, "__file__", None)
        if not filename:
            continue  # a namespace package: look one level deeper
        path = Path(filename).resolve()
        root = str(path.parent if path.name == "__init__.py" else path)
        installed = "site-packages" in path.parts or "dist-packages" in path.parts
        stdlib = str(Path(sysconfig.get_paths()["stdlib"]).resolve())
        return root if installed and not root.startswith(stdlib) else None
    return None
