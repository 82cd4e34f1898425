"""Room mode over SIP: the caller is a real phone that dials the user's LiveKit SIP service.

`LiveKitRoomAdapter(sip="sip:+15550199@127.0.0.1:5060")` places each run's call with a PJSIP
user agent in a process of its own (`_phone`), finds the room the service's dispatch rule put
the call in (the SIP participant whose ``sip.callIDFull`` is the call's SIP Call-ID), joins it
as the test's listener and dispatches the agent there, as room mode does into its own room.
Each turn's audio (after its audio conditions) goes into the call as G.711 RTP in real time;
its keys as RFC 4733 events; `KeyLog` reads the keys on the line from the room
(``sip_dtmf_received``: the caller's as the agent got them, and the agent's own).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import re
import sys
import tempfile
import wave
from pathlib import Path
from typing import Any

from livekit import api, rtc

from ....errors import AdapterError, ConfigError, MissingExtraError, install_command
from ..._closing import close_after_failure
from ._microphone import SpokenSpan
from ._observer import AUDIO_RATE

__all__ = ["CODECS", "KeyLog", "Phone", "check_sip", "find_call_room"]

CODECS = ("PCMU", "PCMA")
"""G.711 mu-law and A-law: what the phone offers (PJSIP's wheel has no Opus)."""

_URI = re.compile(r"^sip:(?P<number>[^@\s]+)@(?P<host>[^\s;]+)$")
_POLL_S = 0.1
"""How often the server is asked for the call's room: it sends no event for it."""


def check_sip(uri: str, codec: str) -> str:
    """``uri`` checked: ``sip:NUMBER@HOST[:PORT]``; pjsua2 installed.

    Raises:
        ConfigError: The URI or codec is malformed.
        MissingExtraError: pjsua2 is missing (naming the ``sip`` extra).
    """
    if not isinstance(uri, str) or not _URI.match(uri.strip()):
        raise ConfigError(
            f"LiveKitRoomAdapter(sip={uri!r}): expected the SIP URI to dial, the number your "
            "inbound trunk answers at your LiveKit SIP service's address: "
            'sip="sip:+15550199@sip.example.com:5060"'
        )
    if codec not in CODECS:
        raise ConfigError(
            f"LiveKitRoomAdapter(sip_codec={codec!r}): the phone speaks G.711 only; use one of "
            f"{', '.join(CODECS)}"
        )
    if importlib.util.find_spec("pjsua2") is None:
        raise MissingExtraError(
            "LiveKitRoomAdapter(sip=...) calls with PJSIP's Python binding (pjsua2), which is "
            f"not installed: {install_command('sip')}"
        )
    return uri.strip()


class Phone:
    """The phone process (`_phone`), driven over its stdin and stdout."""

    def __init__(self, process: asyncio.subprocess.Process, folder: Path) -> None:
        self._process = process
        self._folder = folder
        self._events: list[dict[str, Any]] = []
        self._changed = asyncio.Event()
        self._ids = iter(range(1, 1 << 30))
        self._turn: asyncio.Future[SpokenSpan] | None = None
        self._reader = asyncio.create_task(self._read(), name="agent-eval-phone")
        self.call_id = ""

    @classmethod
    async def dial(cls, uri: str, caller: str, codec: str) -> Phone:
        """Start the phone and dial ``uri`` as ``caller``; returns once the INVITE is out."""
        folder = Path(tempfile.mkdtemp(prefix="agent-eval-phone-"))
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "pytest_agent_eval.adapters.livekit.room._phone",
            uri,
            caller,
            f"{codec}/8000",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        phone = cls(process, folder)
        try:
            dialling = await phone._until("dialling", f"the phone to dial {uri}")
        except BaseException as exc:
            await close_after_failure(phone.aclose(), exc)
            raise
        phone.call_id = str(dialling["call_id"])
        return phone

    async def _read(self) -> None:
        assert self._process.stdout is not None
        while line := await self._process.stdout.readline():
            with contextlib.suppress(ValueError):
                self._events.append(json.loads(line))
            self._changed.set()
        self._events.append({"event": "exited", "code": await self._process.wait()})
        self._changed.set()

    async def _until(self, event: str, what: str, **match: Any) -> dict[str, Any]:
        while True:
            for found in self._events:
                if found.get("event") == event and all(found.get(k) == v for k, v in match.items()):
                    return found
            for found in self._events:
                if found.get("event") in ("error", "ended", "exited"):
                    raise AdapterError(
                        f"the phone call failed while waiting for {what}: {found} "
                        f"(the phone's events: {self._events})"
                    )
            self._changed.clear()
            await self._changed.wait()

    def _send(self, **command: Any) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write((json.dumps(command) + "\n").encode())

    async def confirmed(self) -> None:
        """Return once the SIP service answered the call (200 OK, ACK)."""
        await self._until("confirmed", "the SIP service to answer the call")

    def say(self, frames: tuple[rtc.AudioFrame, ...]) -> asyncio.Future[SpokenSpan]:
        """Say ``frames`` into the call after what is queued; the future gets when they began
        and ended (as `Microphone.say`)."""
        before = self._turn
        self._turn = asyncio.ensure_future(self._say(frames, before))
        return self._turn

    async def _say(
        self, frames: tuple[rtc.AudioFrame, ...], before: asyncio.Future[SpokenSpan] | None
    ) -> SpokenSpan:
        if before is not None:
            await before
        said_id = next(self._ids)
        if not frames:
            now = asyncio.get_running_loop().time()
            return SpokenSpan(now, now)
        path = self._folder / f"say-{said_id}.wav"
        with wave.open(str(path), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(frames[0].sample_rate or AUDIO_RATE)
            out.writeframes(b"".join(bytes(frame.data) for frame in frames))
        self._send(op="say", id=said_id, wav=str(path))
        said = await self._until("said", f"the phone to say {len(frames)} frames", id=said_id)
        path.unlink(missing_ok=True)
        return SpokenSpan(float(said["start"]), float(said["end"]))

    async def press(self, digits: str) -> None:
        """Press ``digits`` as RFC 4733 events (PJSIP sends them one after another)."""
        press_id = next(self._ids)
        self._send(op="keys", id=press_id, digits=digits)
        await self._until("pressed", f"the phone to press {digits!r}", id=press_id)

    async def aclose(self) -> None:
        """Hang up (if the call still runs) and stop the phone process."""
        with contextlib.suppress(Exception):
            self._send(op="hang_up")
            assert self._process.stdin is not None
            self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 10.0)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        self._reader.cancel()
        with contextlib.suppress(BaseException):
            await self._reader
        if self._turn is not None:
            self._turn.cancel()
        for leftover in self._folder.glob("*"):
            leftover.unlink(missing_ok=True)
        with contextlib.suppress(OSError):
            self._folder.rmdir()


async def find_call_room(
    lkapi: api.LiveKitAPI, call_id: str, *, agent_name: str
) -> tuple[str, str]:
    """The room and identity of the SIP participant of the call ``call_id`` (its SIP Call-ID),
    once LiveKit's SIP service has put it in a room.

    Raises:
        AdapterError: The dispatch rule dispatched agents into that room itself: the adapter
            dispatches the agent (after joining as the test's listener, so its eval helper
            records the run), so the rule must dispatch none.
    """
    while True:
        rooms = await lkapi.room.list_rooms(api.ListRoomsRequest())
        for room in rooms.rooms:
            people = await lkapi.room.list_participants(api.ListParticipantsRequest(room=room.name))
            for person in people.participants:
                if person.attributes.get("sip.callIDFull") != call_id:
                    continue
                # (A dispatch without a name goes to workers registered without one.)
                dispatches = await lkapi.agent_dispatch.list_dispatch(room.name)
                if names := sorted({d.agent_name for d in dispatches if d.agent_name}):
                    raise AdapterError(
                        f"the call's room {room.name!r} already has agents dispatched by your "
                        f"SIP dispatch rule ({', '.join(repr(n) for n in names)}): for tests "
                        f"over SIP, give the rule no agents (no room_config agents), and "
                        f"LiveKitRoomAdapter dispatches {agent_name!r} itself once it listens"
                    )
                return room.name, person.identity
        await asyncio.sleep(_POLL_S)  # polling the server's API: it has no event for this


class KeyLog:
    """Keys on the line as the room carries them (``sip_dtmf_received``), by who sent them."""

    def __init__(self, room: rtc.Room, changed: Any) -> None:
        self.keys: list[tuple[str, str]] = []
        """(sender identity, key), oldest first."""
        self._changed = changed
        room.on("sip_dtmf_received", self._on_key)

    def _on_key(self, dtmf: rtc.SipDTMF) -> None:
        sender = dtmf.participant.identity if dtmf.participant is not None else ""
        self.keys.append((sender, str(dtmf.digit).upper()))
        self._changed()

    def of(self, identity: str, since: int = 0) -> str:
        """The keys ``identity`` sent, from the ``since``-th key on the line."""
        return "".join(key for who, key in self.keys[since:] if who == identity)
