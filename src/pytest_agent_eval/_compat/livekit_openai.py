"""What the record and replay of OpenAI realtime sessions need of livekit-plugins-openai.

The plugin's ``RealtimeModel`` builds one ``RealtimeSession`` per agent activity through its
public ``session()`` method; the session copies the model's private ``_opts`` (a dataclass with
``base_url`` and ``api_key``) when it is made, and emits every raw event it sends and receives
through two public hooks, ``openai_client_event_queued`` and ``openai_server_event_received``.
Replay points a session at a loopback server by handing it, for the one synchronous call that
makes it, a copy of the model's options with another ``base_url``. `drift_problems` names what
of this no longer holds on the installed versions (tests/unit/test_compat.py runs it).

The protocol engine lives in livekit-agents (``livekit.agents.llm._realtime.openai``); the
plugin re-exports it, so both versions are part of what a cassette was recorded with.
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import sys
import weakref
from collections.abc import Callable, Iterator
from importlib import metadata
from typing import Any

__all__ = [
    "CLIENT_HOOK",
    "PLUGIN_RANGE",
    "SERVER_HOOK",
    "ProviderClose",
    "close_owned_http_session",
    "drift_problems",
    "installed_versions",
    "is_openai_realtime_model",
    "openai_realtime_model_class",
    "pointed_at",
    "provider_close",
    "session_model",
    "session_options",
    "watch_provider_closes",
    "wrap_session_factory",
]

PLUGIN_RANGE = ">=1.8,<2"
"""The livekit-plugins-openai releases this module was checked against (pyproject's range)."""

CLIENT_HOOK = "openai_client_event_queued"
SERVER_HOOK = "openai_server_event_received"

_SESSION_ATTRIBUTE = "session"
_OPTIONS_FIELDS = ("base_url", "api_key", "model", "turn_detection", "is_azure", "api_version")


def installed_versions() -> dict[str, str]:
    """The versions a cassette records and a replay checks: the plugin and the agents package
    that holds its protocol engine ("" for one not installed)."""
    versions: dict[str, str] = {}
    for name in ("livekit-plugins-openai", "livekit-agents"):
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = ""
    return versions


def openai_realtime_model_class() -> type[Any] | None:
    """``livekit.plugins.openai.realtime.RealtimeModel``, or None without the plugin."""
    try:
        from livekit.plugins.openai import realtime
    except ImportError:
        return None
    cls: type[Any] = realtime.RealtimeModel
    return cls


def is_openai_realtime_model(model: Any) -> bool:
    """True for the plugin's realtime model (or a subclass of it)."""
    cls = openai_realtime_model_class()
    return cls is not None and isinstance(model, cls)


_ORIGINAL_SESSION: Callable[..., Any] | None = None


def wrap_session_factory(hook: Callable[[Any, Callable[[], Any]], Any]) -> None:
    """Route every ``RealtimeModel.session()`` call through ``hook(model, make)`` (``make()``
    builds the session as the plugin would). Installed once per process; the hook decides, per
    call, whether to do anything (outside a recording or replaying run it just calls ``make``).

    Raises:
        RuntimeError: The plugin is not installed or its class has no ``session`` method.
    """
    global _ORIGINAL_SESSION
    cls = openai_realtime_model_class()
    if cls is None:
        raise RuntimeError("livekit-plugins-openai is not installed")
    if _ORIGINAL_SESSION is not None:
        return
    original = getattr(cls, _SESSION_ATTRIBUTE, None)
    if not callable(original):
        raise RuntimeError(f"{cls.__qualname__} has no session() method")
    _ORIGINAL_SESSION = original

    def session(self: Any, *, turn_detection_disabled: bool = False) -> Any:
        return hook(self, lambda: original(self, turn_detection_disabled=turn_detection_disabled))

    session.__doc__ = original.__doc__
    session.__wrapped__ = original  # type: ignore[attr-defined]
    setattr(cls, _SESSION_ATTRIBUTE, session)


@contextlib.contextmanager
def pointed_at(model: Any, base_url: str) -> Iterator[None]:
    """While the block runs (synchronously: the session copies the options when made), the
    model's options carry ``base_url``; a missing key gets a placeholder, since the loopback
    server never checks it."""
    saved = model._opts
    model._opts = dataclasses.replace(
        saved, base_url=base_url, api_key=saved.api_key or "replay-needs-no-key"
    )
    try:
        yield
    finally:
        model._opts = saved


def session_options(session: Any) -> Any:
    """A plugin session's options (the copy it made of its model's)."""
    return session._opts


def session_model(session: Any) -> Any:
    """The `RealtimeModel` a plugin session was made by (None if it keeps none)."""
    return getattr(session, "_realtime_model", None)


async def close_owned_http_session(session: Any) -> None:
    """Close the aiohttp session the plugin session's model opened for itself, if it did.

    Outside a LiveKit job there is no shared HTTP session, so the model opens its own
    (``_http_session_owned``) and closes it only in ``RealtimeModel.aclose()``, which nothing
    calls at the end of an AgentSession: aiohttp then prints "Unclosed client session". The
    model is forgotten as the owner, so a model used again opens a new one.
    """
    model = session_model(session)
    if model is None or not getattr(model, "_http_session_owned", False):
        return
    http = getattr(model, "_http_session", None)
    model._http_session = None
    model._http_session_owned = False
    if http is not None and not http.closed:
        await http.close()


_ENGINE = "livekit.agents.llm._realtime.openai"
_WATCHED = "_pytest_agent_eval_watches_closes"
_CLOSES: weakref.WeakKeyDictionary[Any, ProviderClose] = weakref.WeakKeyDictionary()
"""Per realtime model: the last end of a connection its provider made, not yet read. The
plugin's own error says only "connection closed unexpectedly"."""


@dataclasses.dataclass(frozen=True, slots=True)
class ProviderClose:
    """How a provider ended a plugin session's websocket."""

    code: int | None
    """The close code it sent (1011: its internal error); None when the connection broke."""
    reason: str
    generating: bool
    """A response was under way: the plugin drops it when it reconnects."""


def watch_provider_closes() -> None:
    """Note the close frame (code and reason) a provider ends a plugin session's websocket
    with, from now on, for `provider_close`. Installed once per process, and only once the
    plugin's engine is imported (an agent on OpenAI's realtime model imported it): each new
    connection's ``receive`` is wrapped, nothing it returns is changed.
    """
    engine = sys.modules.get(_ENGINE)
    cls = getattr(engine, "RealtimeSession", None) if engine is not None else None
    original = getattr(cls, "_create_ws_conn", None)
    if cls is None or original is None or getattr(original, _WATCHED, False):
        return

    async def _create_ws_conn(self: Any) -> Any:
        ws = await original(self)
        model = getattr(self, "_realtime_model", None)
        receive = ws.receive

        async def watched(*args: Any, **kwargs: Any) -> Any:
            msg = await receive(*args, **kwargs)
            kind = getattr(msg.type, "name", "")
            if kind in ("CLOSE", "CLOSED", "CLOSING", "ERROR") and model is not None:
                code = msg.data if kind == "CLOSE" and isinstance(msg.data, int) else None
                reason = str(msg.extra or "") if kind == "CLOSE" else ""
                generation = getattr(self, "_current_generation", None)
                done = getattr(generation, "_done_fut", None)
                _CLOSES[model] = ProviderClose(
                    code if code is not None else ws.close_code,
                    reason,
                    generating=done is not None and not done.done(),
                )
            return msg

        ws.receive = watched
        return ws

    setattr(_create_ws_conn, _WATCHED, True)
    _create_ws_conn.__wrapped__ = original  # type: ignore[attr-defined]
    cls._create_ws_conn = _create_ws_conn


def provider_close(model: Any) -> ProviderClose | None:
    """How ``model``'s provider last ended a connection, once: read it when the plugin
    reports the connection lost. None when closes are not watched."""
    try:
        return _CLOSES.pop(model, None)
    except TypeError:  # a model that cannot be weakly referenced is never watched
        return None


def drift_problems() -> list[str]:
    """What no longer holds of the assumptions above, each naming the installed versions."""
    cls = openai_realtime_model_class()
    if cls is None:
        return []
    versions = installed_versions()
    where = ", ".join(f"{name} {version}" for name, version in versions.items())
    problems: list[str] = []
    original = _ORIGINAL_SESSION or getattr(cls, _SESSION_ATTRIBUTE, None)
    if not callable(original):
        return [f"{where}: RealtimeModel has no session() method"]
    params = inspect.signature(original).parameters
    if "turn_detection_disabled" not in params:
        problems.append(f"{where}: RealtimeModel.session() takes no turn_detection_disabled")
    from livekit.agents.llm._realtime import openai as engine

    options_cls = getattr(engine, "_RealtimeOptions", None)
    if options_cls is None or not dataclasses.is_dataclass(options_cls):
        problems.append(f"{where}: the engine has no _RealtimeOptions dataclass")
    else:
        names = {f.name for f in dataclasses.fields(options_cls)}
        missing = [f for f in _OPTIONS_FIELDS if f not in names]
        if missing:
            problems.append(f"{where}: _RealtimeOptions lacks fields {missing}")
    model_source = inspect.getsource(engine.RealtimeModel._ensure_http_session)
    if "_http_session_owned" not in model_source:
        problems.append(f"{where}: RealtimeModel no longer marks the HTTP session it owns")
    init_source = inspect.getsource(engine.RealtimeSession.__init__)
    if "self._realtime_model" not in init_source:
        problems.append(f"{where}: RealtimeSession no longer keeps its model as _realtime_model")
    if "realtime_model._opts" not in init_source:
        problems.append(f"{where}: RealtimeSession no longer copies its model's _opts")
    if not callable(getattr(engine.RealtimeSession, "_create_ws_conn", None)):
        problems.append(f"{where}: RealtimeSession has no _create_ws_conn (provider closes)")
    run_source = inspect.getsource(engine.RealtimeSession._run_ws)
    for hook in (CLIENT_HOOK, SERVER_HOOK):
        if hook not in run_source:
            problems.append(f"{where}: RealtimeSession no longer emits {hook!r}")
    return problems
