"""Replaying a recorded OpenAI realtime session from a loopback websocket server.

The server does not play a tape: it answers what the client sends. A recorded connection is cut
into groups of server events, each with the trigger that preceded it in the recording: the
connection opening, the client's ``k``-th event (input audio appends aside), or, for the
server's own turn detection (``input_audio_buffer.speech_started`` / ``speech_stopped``), the
input audio position at which the server decided (the position the event names plus the
recorded session's padding or silence window). A group is sent once its trigger happened live and every
group before it was sent, so the server's events keep their recorded order while their timing
follows the live client, at any streaming speed.

Keyed by event order and audio position, never by audio bytes: LiveKit's resampler gives other
bytes for the same fixture on every run, and commits cut the audio elsewhere at another speed.

Each live client event is compared with the recorded one at its place, ids aside (the client
makes new ones every run: they are mapped, recorded to live, and the server's answers carry the
live ones). The first that differs, or one past the end of the recording, is a divergence: the
server stops answering and reports it, and the run is an ERROR naming it.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ._cassette import Connection
from ._record import APPEND, appended_ms

__all__ = ["ConnectionReplay", "ReplayServer", "first_difference"]

_log = logging.getLogger(__name__)

ID_KEYS = frozenset(
    {"id", "item_id", "previous_item_id", "event_id", "client_event_id", "response_id", "call_id"}
)
"""Fields holding ids the client or server makes per run: never compared, mapped instead."""

_UNCOMPARED = ID_KEYS | {"audio"}
"""Client fields that differ between faithful runs: ids and audio payloads."""

TRUNCATE = "conversation.item.truncate"

TRUNCATE_WINDOW_MS = 500.0
"""How far a truncation's ``audio_end_ms`` (what played of an interrupted reply) may move from
the recorded one. The reply stops when the caller's speech is heard, keyed on the same audio
position in a replay, then wall-clock scheduling decides the last few tens of ms (a word, at
most, between two live runs); an interruption more than this away is another barge-in."""

_VAD_EVENTS = {
    "input_audio_buffer.speech_started": "audio_start_ms",
    "input_audio_buffer.speech_stopped": "audio_end_ms",
}

_DEFAULT_PREFIX_MS = 300
_DEFAULT_SILENCE_MS = 500
"""The realtime API's server_vad defaults, for a recording whose session set none."""

_TURN_EVENTS = ("response.create", "input_audio_buffer.commit")
"""Recorded client events that, left unreplayed at the end of a run, mean a turn went missing."""


@dataclass(slots=True)
class _Group:
    kind: str
    """"open", "client" or "audio"."""
    client_index: int = -1
    at_ms: float = 0.0
    events: list[dict[str, Any]] = field(default_factory=list)


def _normalized(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _normalized(v) for k, v in value.items() if k not in _UNCOMPARED}
    if isinstance(value, list):
        return [_normalized(v) for v in value]
    return value


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def first_difference(live: Any, recorded: Any, path: str = "") -> str | None:
    """Where ``live`` first differs from ``recorded`` (ids and audio aside), in words, or None."""
    live, recorded = _normalized(live), _normalized(recorded)
    return _diff(live, recorded, path)


def _diff(live: Any, recorded: Any, path: str) -> str | None:
    if isinstance(live, dict) and isinstance(recorded, dict):
        for key in [*recorded, *(k for k in live if k not in recorded)]:
            sub = f"{path}.{key}" if path else key
            if key not in live:
                return f"{sub}: the agent sent none, the recording has {_short(recorded[key])}"
            if key not in recorded:
                return f"{sub}: the agent sent {_short(live[key])}, the recording has none"
            found = _diff(live[key], recorded[key], sub)
            if found:
                return found
        return None
    if isinstance(live, list) and isinstance(recorded, list):
        if path.endswith("tools"):
            named = _tool_difference(live, recorded, path)
            if named:
                return named
        for index, (a, b) in enumerate(zip(live, recorded, strict=False)):
            found = _diff(a, b, f"{path}[{index}]")
            if found:
                return found
        if len(live) != len(recorded):
            return f"{path}: the agent sent {len(live)} entries, the recording has {len(recorded)}"
        return None
    if live != recorded:
        return f"{path}: the agent sent {_short(live)}, the recording has {_short(recorded)}"
    return None


def _tool_difference(live: list[Any], recorded: list[Any], path: str) -> str | None:
    def names(tools: list[Any]) -> list[str]:
        return [str(t.get("name")) for t in tools if isinstance(t, dict)]

    new = [n for n in names(live) if n not in names(recorded)]
    gone = [n for n in names(recorded) if n not in names(live)]
    parts = []
    if new:
        parts.append(f"tool(s) the recording never saw: {', '.join(new)}")
    if gone:
        parts.append(f"recorded tool(s) the agent no longer has: {', '.join(gone)}")
    return f"{path}: {'; '.join(parts)}" if parts else None


def _learn_ids(live: Any, recorded: Any, ids: dict[str, str]) -> None:
    if isinstance(live, dict) and isinstance(recorded, dict):
        for key, value in recorded.items():
            if key not in live:
                continue
            if key in ID_KEYS and isinstance(value, str) and isinstance(live[key], str):
                ids[value] = live[key]
            else:
                _learn_ids(live[key], value, ids)
    elif isinstance(live, list) and isinstance(recorded, list):
        for a, b in zip(live, recorded, strict=False):
            _learn_ids(a, b, ids)


def _rewrite(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            k: ids.get(v, v) if k in ID_KEYS and isinstance(v, str) else _rewrite(v, ids)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_rewrite(v, ids) for v in value]
    return value


def _describe(event: dict[str, Any]) -> str:
    kind = str(event.get("type"))
    item = event.get("item")
    if kind == "conversation.item.create" and isinstance(item, dict):
        text = next(
            (
                c.get("text") or c.get("transcript")
                for c in item.get("content") or []
                if isinstance(c, dict) and (c.get("text") or c.get("transcript"))
            ),
            None,
        )
        if item.get("type") == "function_call_output":
            return f"{kind} (the output of a tool call: {_short(item.get('output'))})"
        if text:
            return f"{kind} ({item.get('role')} message {_short(text)})"
    return kind


def _turn_detection(event: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """The server turn detection a client ``session.update`` sets (``current`` if it sets none)."""
    if event.get("type") != "session.update":
        return current
    audio_in = ((event.get("session") or {}).get("audio") or {}).get("input") or {}
    if "turn_detection" not in audio_in:
        return current
    value = audio_in["turn_detection"]
    return dict(value) if isinstance(value, dict) else {}


def _decided_at(event: dict[str, Any], received_ms: float, detection: dict[str, Any]) -> float:
    """The input audio position at which the server made a turn-detection decision.

    The event names where speech started or ended; the server decides later, once it heard
    ``prefix_padding_ms`` of speech or ``silence_duration_ms`` of silence (the recorded
    session's settings, else the API's defaults). Never later than the audio the client had
    sent when the recording received it.
    """
    kind = str(event["type"])
    named = event.get(_VAD_EVENTS[kind])
    if not isinstance(named, int | float):
        return received_ms
    if kind.endswith("speech_started"):
        wait = detection.get("prefix_padding_ms", _DEFAULT_PREFIX_MS)
    else:
        wait = detection.get("silence_duration_ms", _DEFAULT_SILENCE_MS)
    decided = float(named) + (float(wait) if isinstance(wait, int | float) else 0.0)
    return min(decided, received_ms) if received_ms > 0 else decided


def _wind_down(event: dict[str, Any]) -> list[dict[str, Any]]:
    """After a divergence nothing recorded fits: acknowledge the client's chat-context edits
    and refuse its responses (an ``error`` naming the request), so the session's waits end now
    rather than at their timeouts, and the run ends with the divergence as its error."""
    kind = event.get("type")
    if kind == "conversation.item.create" and isinstance(event.get("item"), dict):
        previous = event.get("previous_item_id")
        return [
            {
                "type": "conversation.item.added",
                "previous_item_id": None if previous == "root" else previous,
                "item": event["item"],
            }
        ]
    if kind == "conversation.item.delete":
        return [{"type": "conversation.item.deleted", "item_id": event.get("item_id")}]
    if kind == "response.create":
        return [
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "code": "replay_diverged",
                    "message": "the replayed recording does not fit this request",
                    "event_id": event.get("event_id"),
                },
            }
        ]
    return []


class ConnectionReplay:
    """Answers one live connection from one recorded `Connection` (no I/O: events in, out)."""

    def __init__(self, recorded: Connection, *, label: str) -> None:
        self.label = label
        self.client: list[dict[str, Any]] = []
        self.groups: list[_Group] = [_Group("open")]
        detection: dict[str, Any] = {}
        for entry in recorded.entries:
            event = entry.event
            if entry.direction == "note":  # the recorder's own remarks (a reconnection)
                continue
            if entry.direction == "client":
                self.groups.append(_Group("client", client_index=len(self.client)))
                self.client.append(event)
                detection = _turn_detection(event, detection)
            elif event.get("type") in _VAD_EVENTS:
                at_ms = _decided_at(event, entry.audio_ms, detection)
                self.groups.append(_Group("audio", at_ms=at_ms, events=[event]))
            else:
                self.groups[-1].events.append(event)
        self.ids: dict[str, str] = {}
        self.truncated: dict[str, Any] = {}
        """Live item id -> the ``audio_end_ms`` the live client truncated it at."""
        self.audio_ms = 0.0
        self.matched = 0
        self._fired = 0
        self.divergence: str | None = None

    def opened(self) -> list[dict[str, Any]]:
        """What the server sends as the connection opens."""
        return self._ready()

    def receive(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        """What the server sends after the live client's ``event``; once diverged, only what
        lets the client wind down at once (`_wind_down`)."""
        if self.divergence is not None:
            return _wind_down(event)
        if event.get("type") == APPEND:
            self.audio_ms += appended_ms(event)
            return self._ready()
        answer = self._match(event)
        return _wind_down(event) if self.divergence is not None else answer

    def _match(self, event: dict[str, Any]) -> list[dict[str, Any]]:
        index = self.matched
        if index >= len(self.client):
            self.divergence = (
                f"{self.label}, client event #{index + 1}: the agent sent {_describe(event)}, "
                f"but the recording ends after {len(self.client)} client events (more turns, or "
                "more requests, than when it was recorded)"
            )
            return []
        recorded = self.client[index]
        if event.get("type") != recorded.get("type"):
            self.divergence = (
                f"{self.label}, client event #{index + 1}: the agent sent {_describe(event)}, "
                f"the recording has {_describe(recorded)}"
            )
            return []
        if event.get("type") == TRUNCATE:
            found = self._truncation_difference(event, recorded)
        else:
            found = first_difference(event, recorded)
        if found is not None:
            self.divergence = (
                f"{self.label}, client event #{index + 1} ({event.get('type')}): {found}"
            )
            return []
        _learn_ids(event, recorded, self.ids)
        self.matched += 1
        return self._ready()

    def _truncation_difference(self, live: dict[str, Any], recorded: dict[str, Any]) -> str | None:
        """A truncation fits when it cuts the same content within `TRUNCATE_WINDOW_MS` of the
        recorded position; the server's answers then carry the live position."""
        live_ms, recorded_ms = live.get("audio_end_ms"), recorded.get("audio_end_ms")
        rest = first_difference(
            {k: v for k, v in live.items() if k != "audio_end_ms"},
            {k: v for k, v in recorded.items() if k != "audio_end_ms"},
        )
        if rest is not None:
            return rest
        if not isinstance(live_ms, int | float) or not isinstance(recorded_ms, int | float):
            return first_difference(live, recorded)
        if abs(float(live_ms) - float(recorded_ms)) > TRUNCATE_WINDOW_MS:
            return (
                f"audio_end_ms: the agent cut the interrupted reply at {live_ms} ms of its "
                f"audio, the recording at {recorded_ms} ms (more than {TRUNCATE_WINDOW_MS:g} ms "
                "apart: the interruption came at another point of the reply)"
            )
        item = live.get("item_id")
        if isinstance(item, str):
            self.truncated[item] = live_ms
        return None

    def _answer(self, event: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = _rewrite(copy.deepcopy(event), self.ids)
        if out.get("type") == "conversation.item.truncated":
            live_ms = self.truncated.get(str(out.get("item_id")))
            if live_ms is not None:
                out["audio_end_ms"] = live_ms
        return out

    def _ready(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while self._fired < len(self.groups):
            group = self.groups[self._fired]
            if group.kind == "client" and self.matched <= group.client_index:
                break
            if group.kind == "audio" and self.audio_ms + 1e-6 < group.at_ms:
                break
            out.extend(self._answer(e) for e in group.events)
            self._fired += 1
        return out

    def leftover(self) -> str | None:
        """A recorded turn the live run never asked for, in words, or None."""
        for index in range(self.matched, len(self.client)):
            event = self.client[index]
            if event.get("type") in _TURN_EVENTS:
                return (
                    f"{self.label}: the run ended before client event #{index + 1} "
                    f"({_describe(event)}); the recording has more turns than this run made"
                )
        return None


class ReplayServer:
    """A loopback websocket server answering one run's connections from its recording.

    The ``k``-th connection the run opens is answered from the ``k``-th recorded one. A
    divergence (or a connection the recording lacks) is kept in `divergence`, `diverged` is
    set, and ``on_divergence`` is called once.
    """

    def __init__(
        self,
        recorded: list[Connection],
        *,
        on_divergence: Callable[[str], None] | None = None,
        sessions_made: Callable[[], int] | None = None,
    ) -> None:
        self.recorded = recorded
        self._sessions_made = sessions_made
        self.replays: list[ConnectionReplay] = []
        self.divergence: str | None = None
        self.diverged = asyncio.Event()
        self._on_divergence = on_divergence
        self._runner: Any = None
        self._sockets: set[Any] = set()
        self.base_url = ""

    async def start(self) -> str:
        """Listen on 127.0.0.1 (a free port); returns the ``base_url`` the plugin takes."""
        from aiohttp import web

        app = web.Application()
        app.router.add_route("GET", "/{tail:.*}", self._handle)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = self._runner.addresses[0][1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self.base_url

    def _diverge(self, problem: str) -> None:
        if self.divergence is not None:
            return
        self.divergence = problem
        self.diverged.set()
        if self._on_divergence is not None:
            self._on_divergence(problem)

    async def _handle(self, request: Any) -> Any:
        from aiohttp import WSMsgType, web

        ws = web.WebSocketResponse(max_msg_size=0)
        await ws.prepare(request)
        self._sockets.add(ws)
        index = len(self.replays)
        try:
            made = self._sessions_made() if self._sessions_made is not None else None
            if made is not None and index >= made:
                # More websockets than plugin sessions: one of them connected again. Kept
                # open, winding down: closed, it would make the client retry for seconds.
                replay = ConnectionReplay(Connection(model=""), label=f"connection #{index + 1}")
                replay.divergence = (
                    f"the run's realtime session reconnected (connection #{index + 1} for "
                    f"{made} session(s)): the provider's connection is never dropped in a "
                    "replay, so the model's max_session_duration passed or the session failed; "
                    "the replay of a reconnection is not covered"
                )
                self._diverge(replay.divergence)
            elif index >= len(self.recorded):
                self._diverge(
                    f"the run opened realtime connection #{index + 1}, the recording has "
                    f"{len(self.recorded)} (a realtime session the recording never saw)"
                )
                await ws.close()
                return ws
            else:
                replay = ConnectionReplay(self.recorded[index], label=f"connection #{index + 1}")
                self.replays.append(replay)
            for event in replay.opened():
                await ws.send_str(json.dumps(event))
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                try:
                    event = json.loads(message.data)
                except ValueError:
                    continue
                out = replay.receive(event)
                if replay.divergence is not None:
                    self._diverge(replay.divergence)
                for reply in out:
                    await ws.send_str(json.dumps(reply))
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._sockets.discard(ws)
        return ws

    def leftover(self) -> str | None:
        """What of the recording this run never replayed, when a turn of it went missing."""
        if len(self.replays) < len(self.recorded):
            return (
                f"the run opened {len(self.replays)} realtime connection(s), the recording "
                f"has {len(self.recorded)}"
            )
        for replay in self.replays:
            found = replay.leftover()
            if found:
                return found
        return None

    async def aclose(self) -> None:
        for ws in list(self._sockets):
            try:
                await ws.close()
            except Exception:  # a socket already gone
                _log.debug("closing a replay socket failed", exc_info=True)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
