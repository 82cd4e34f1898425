"""livekit-rtc's log while our rooms close: the expected end of a connection is not an error.

When a room goes away with the caller in it (the agent's session deletes it when it closes, an
operator does), the server closes the caller's peer connection and livekit-rtc logs
``publisher data channel '_reliable' closed unexpectedly`` at ERROR level, three times, through
the ``livekit`` logger, and now and then ``failed to negotiate the publisher: ... Called in
wrong state: closed`` (a renegotiation the closing cut short). For the run's own room that is
its expected end, and the lines land in the captured log of every failing test.
`quiet_room_shutdown` holds a filter on that logger while one of the adapter's conversations is
open: it demotes those records, and only those, to DEBUG. The filter is there only while a
conversation holds it, and for `LATE_LOGS_S` after the last one out: livekit-ffi sends its log
records to Python in batches, at least once a second, so a line logged as the room closed can
arrive after the disconnect has returned.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterator

__all__ = ["LATE_LOGS_S", "RoomShutdownLogs", "quiet_room_shutdown"]

LATE_LOGS_S = 2.0
"""How long the filter outlives the last conversation: twice livekit-ffi's log flush interval
(1 s), the longest a record logged before the disconnect returned can take to reach Python."""

_RTC_LOGGER = "livekit"
_EXPECTED = re.compile(
    r"\bdata channel\b.*\bclosed\b"
    r"|\bfailed to negotiate the (?:publisher|subscriber)\b.*\bwrong state: closed\b"
)


class RoomShutdownLogs(logging.Filter):
    """The filter on ``livekit`` while conversations hold it (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(name="pytest_agent_eval.livekit.room")
        self._lock = threading.Lock()
        self._holders = 0
        self._linger: threading.Timer | None = None
        self.removed = threading.Event()
        """Set once the filter has left the logger (for good: a later hold installs another)."""

    @classmethod
    def installed(cls) -> RoomShutdownLogs | None:
        for existing in logging.getLogger(_RTC_LOGGER).filters:
            if isinstance(existing, cls):
                return existing
        return None

    def _acquire(self) -> bool:
        with self._lock:
            if self.removed.is_set():
                return False
            self._holders += 1
            if self._linger is not None:
                self._linger.cancel()
                self._linger = None
            return True

    def _release(self, linger_s: float) -> None:
        with self._lock:
            self._holders -= 1
            if self._holders:
                return
            if linger_s <= 0:
                self._detach()
                return
            # A daemon timer, not the loop: the conversation's event loop may end first.
            self._linger = threading.Timer(linger_s, self._detach_if_unheld)
            self._linger.daemon = True
            self._linger.start()

    def _detach_if_unheld(self) -> None:
        with self._lock:
            if not self._holders and not self.removed.is_set():
                self._detach()

    def _detach(self) -> None:
        """Leave the logger (the caller holds the lock)."""
        self._linger = None
        logging.getLogger(_RTC_LOGGER).removeFilter(self)
        self.removed.set()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not _EXPECTED.search(record.getMessage()):
            return True
        record.levelno, record.levelname = logging.DEBUG, "DEBUG"
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


@contextlib.contextmanager
def quiet_room_shutdown(linger_s: float = LATE_LOGS_S) -> Iterator[None]:
    """Hold the filter for one conversation (installed on first hold); it stays ``linger_s``
    after the last hold ends, for the records livekit-ffi has yet to send."""
    while True:
        scope = RoomShutdownLogs.installed()
        if scope is None:
            scope = RoomShutdownLogs()
            logging.getLogger(_RTC_LOGGER).addFilter(scope)
        if scope._acquire():
            break
    try:
        yield
    finally:
        scope._release(linger_s)
