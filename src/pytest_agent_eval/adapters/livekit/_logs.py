"""LiveKit's loggers while conversations are open: quieter, and tool exceptions routed home.

LiveKit logs through process-wide loggers, so whatever a conversation changes there is shared
with every other conversation running at the same time. The state therefore lives with the
shared resource itself: one `LiveKitLogScope` filter installed on the ``livekit.agents``
logger while at least one conversation holds it, counting its holders, remembering the levels
it replaced and restoring them when the last holder leaves. Nothing is kept in module globals.

An exception LiveKit logs from the agent's own code (``Error in _traceable_on_enter``: a hook
that raised, in a task of the session) reaches no caller, so it would be invisible but for
this log. The scope hands it to the conversation whose tasks logged it: the one that set
`crash_sink` (a context variable, so each run's session tasks, which inherit the context of
the run that started them, find their own conversation, whatever else runs beside them).
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections.abc import Iterator
from typing import Protocol

from ._compat import LiveKitInternalsError, running_tool_call, tool_exception_record

__all__ = [
    "CrashSink",
    "LiveKitLogScope",
    "ToolErrorSink",
    "crash_sink",
    "hold_livekit_logs",
    "resolve_level",
]

_AGENTS_LOGGER = "livekit.agents"
_LEVELLED_LOGGERS = ("livekit", "livekit.agents", "livekit.plugins")


class ToolErrorSink(Protocol):
    """A conversation that wants the exceptions its tools raise."""

    def owns_speech(self, speech_id: str) -> bool:
        """True when the speech handle ``speech_id`` belongs to this conversation."""
        ...

    def on_tool_exception(
        self, *, call_id: str | None, function: str | None, speech_id: str | None, text: str
    ) -> None:
        """A tool of this conversation raised; ``text`` is the exception's type and message."""
        ...


class CrashSink(Protocol):
    """A conversation that wants the exceptions LiveKit logs from its session's tasks."""

    def on_agent_exception(self, exc: BaseException, logged: str) -> None:
        """``exc`` escaped the agent's code in a task of this session; ``logged`` is LiveKit's
        log message (``Error in _traceable_on_enter``)."""
        ...


crash_sink: contextvars.ContextVar[CrashSink | None] = contextvars.ContextVar(
    "pytest_agent_eval_livekit_crash_sink", default=None
)
"""The conversation whose session runs in the current context (see the module doc); set it
before starting the session, so the session's tasks inherit it."""


class LiveKitLogScope(logging.Filter):
    """The one filter on ``livekit.agents`` while conversations are open (see the module doc).

    Each holder asks for a level (None: leave levels alone) and says whether tool tracebacks
    should be demoted to DEBUG. The loggers get the lowest level any holder asked for; a
    traceback is demoted when the conversation it belongs to asked for quiet.
    """

    def __init__(self) -> None:
        super().__init__(name="pytest_agent_eval.livekit")
        self._lock = threading.Lock()
        self._holders: dict[int, tuple[ToolErrorSink, int | None]] = {}
        self._saved: dict[str, int] = {}
        self._effective: dict[str, int] = {}
        self._detached = False

    # -- holding ---------------------------------------------------------------------------

    @classmethod
    def installed(cls) -> LiveKitLogScope | None:
        """The scope currently installed on ``livekit.agents``, if any."""
        for existing in logging.getLogger(_AGENTS_LOGGER).filters:
            if isinstance(existing, cls):
                return existing
        return None

    def _acquire(self, holder: ToolErrorSink, level: int | None) -> bool:
        """Add ``holder``; False when this scope was just taken off the logger (make another)."""
        with self._lock:
            if self._detached:
                return False
            if not self._holders:
                for name in _LEVELLED_LOGGERS:
                    logger = logging.getLogger(name)
                    self._saved[name] = logger.level
                    self._effective[name] = logger.getEffectiveLevel()
            self._holders[id(holder)] = (holder, level)
            self._apply()
            return True

    def _release(self, holder: ToolErrorSink) -> None:
        """Forget ``holder``; the last one out restores the levels and removes the scope."""
        with self._lock:
            self._holders.pop(id(holder), None)
            if self._holders:
                self._apply()
                return
            for name, level in self._saved.items():
                logging.getLogger(name).setLevel(level)
            self._saved.clear()
            self._effective.clear()
            self._detached = True
            logging.getLogger(_AGENTS_LOGGER).removeFilter(self)

    def _apply(self) -> None:
        levels = [level for _, level in self._holders.values() if level is not None]
        for name, saved in self._saved.items():
            logger = logging.getLogger(name)
            if levels and self._effective[name] < min(levels):
                logger.setLevel(min(levels))
            else:
                logger.setLevel(saved)

    # -- the filter ------------------------------------------------------------------------

    def filter(self, record: logging.LogRecord) -> bool:
        tool = tool_exception_record(record)
        if tool is None:
            exc = record.exc_info[1] if record.exc_info else None
            sink = crash_sink.get()
            if exc is not None and sink is not None and record.levelno >= logging.ERROR:
                sink.on_agent_exception(exc, record.getMessage())
            return True
        speech_id = tool.speech_id
        with self._lock:
            holders = list(self._holders.values())
        owner = next(
            ((h, lvl) for h, lvl in holders if speech_id is not None and h.owns_speech(speech_id)),
            None,
        )
        if owner is None and len(holders) == 1 and speech_id is None:
            owner = holders[0]
        if owner is None:
            return True
        holder, level = owner
        exc = record.exc_info[1] if record.exc_info else None
        if exc is not None:
            try:
                call = running_tool_call()
            except LiveKitInternalsError:  # a filter must not raise; the function name matches
                call = None
            holder.on_tool_exception(
                call_id=tool.call_id or getattr(call, "call_id", None),
                function=tool.function,
                speech_id=speech_id,
                text=f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
            )
        if level is None:
            return True
        # Captured on the ToolCall: the traceback is only for those who asked for DEBUG.
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


def resolve_level(level: int | str | None) -> int | None:
    """``"WARNING"``/``"warning"``/``30`` -> 30; None stays None.

    Raises:
        ValueError: For a name ``logging`` does not know.
    """
    if level is None or isinstance(level, int):
        return level
    numeric = logging.getLevelName(level.upper())
    if not isinstance(numeric, int):
        raise ValueError(
            f"LiveKitAdapter: unknown log_level {level!r}; use a logging level such as "
            "'WARNING' or 'DEBUG', or None to leave logging alone"
        )
    return numeric


@contextlib.contextmanager
def hold_livekit_logs(holder: ToolErrorSink, level: int | str | None) -> Iterator[None]:
    """Hold the LiveKit log scope for one conversation (installed on first hold).

    Args:
        holder: Receives the exceptions its tools raise.
        level: Raise LiveKit's loggers to this level while held and demote tool tracebacks
            to DEBUG; None leaves levels and records alone (exceptions are still captured).
    """
    numeric = resolve_level(level)
    while True:
        scope = LiveKitLogScope.installed()
        if scope is None:
            scope = LiveKitLogScope()
            logging.getLogger(_AGENTS_LOGGER).addFilter(scope)
        if scope._acquire(holder, numeric):
            break
    try:
        yield
    finally:
        scope._release(holder)
