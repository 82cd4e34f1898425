"""Recording a live OpenAI realtime session through the plugin's own hooks.

The plugin emits every client event as it sends it (``openai_client_event_queued``) and every
server event as it receives it (``openai_server_event_received``); listening to both gives the
exchange in the order the client saw it, with nothing patched into the connection. Input audio
is reduced to its length (the position it reached: what a replay keys server turn detection
on); everything else is kept as sent.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import copy
from typing import Any

from ...._compat.livekit_openai import CLIENT_HOOK, SERVER_HOOK
from ._cassette import Connection, Entry

__all__ = ["APPEND", "RECONNECTED", "ConnectionRecorder", "appended_ms", "reconnect_problem"]

APPEND = "input_audio_buffer.append"

RECONNECTED = "session_reconnected"
"""The session's event after it opened a new websocket in place of a lost one (the provider
dropped it, or ``max_session_duration`` passed): kept in the cassette as a "note" entry, since
a replay cannot answer the exchange around it (see `reconnect_problem`)."""

_INPUT_RATE = 24000
"""The plugin sends PCM16 mono at 24 kHz (it resamples other input)."""


def appended_ms(event: dict[str, Any]) -> float:
    """Milliseconds of audio an ``input_audio_buffer.append`` carries (0 for a bad payload)."""
    audio = event.get("audio")
    if not isinstance(audio, str):
        return 0.0
    try:
        size = len(base64.b64decode(audio, validate=False))
    except (binascii.Error, ValueError):
        return 0.0
    return size / 2 / _INPUT_RATE * 1000.0


class ConnectionRecorder:
    """Listens to one plugin ``RealtimeSession`` and keeps its exchange as a `Connection`."""

    def __init__(self, session: Any, model: str) -> None:
        self.connection = Connection(model=model)
        self._audio_ms = 0.0
        self._session = session
        session.on(CLIENT_HOOK, self._on_client)
        session.on(SERVER_HOOK, self._on_server)
        session.on(RECONNECTED, self._on_reconnected)

    def _on_client(self, event: dict[str, Any]) -> None:
        if event.get("type") == APPEND:
            self._audio_ms += appended_ms(event)
            return
        self.connection.entries.append(Entry("client", copy.deepcopy(event), self._audio_ms))

    def _on_server(self, event: dict[str, Any]) -> None:
        self.connection.entries.append(Entry("server", copy.deepcopy(event), self._audio_ms))

    def _on_reconnected(self, _event: Any) -> None:
        self.connection.entries.append(Entry("note", {"type": RECONNECTED}, self._audio_ms))

    def detach(self) -> None:
        """Stop listening (the session may outlive the run's recording)."""
        for hook, listener in (
            (CLIENT_HOOK, self._on_client),
            (SERVER_HOOK, self._on_server),
            (RECONNECTED, self._on_reconnected),
        ):
            with contextlib.suppress(KeyError, ValueError):
                self._session.off(hook, listener)


def reconnect_problem(connections: list[Connection], run_index: int) -> str | None:
    """Why recorded run ``run_index`` cannot be replayed because its session reconnected
    mid-run, in words, or None.

    A reconnection opens a new websocket that the client fills again (options, tools, the
    whole chat context) while the server starts afresh; what the lost connection had and had
    not answered is a matter of timing, so a replay would be a guess. Refused instead.
    """
    for number, connection in enumerate(connections, start=1):
        sent = 0
        for entry in connection.entries:
            if entry.direction == "client":
                sent += 1
            elif entry.direction == "note" and entry.event.get("type") == RECONNECTED:
                return (
                    f"recorded run {run_index + 1}, connection #{number}: the session "
                    f"reconnected after client event #{sent} (the provider dropped the "
                    "connection, or the model's max_session_duration passed), and the "
                    "replay of a reconnection is not covered; record it again in a run that "
                    "keeps its connection"
                )
    return None
