"""The caller's phone in room mode over SIP: a PJSIP user agent (pjsua2) in a process of its own.

``python -m pytest_agent_eval.adapters.livekit.room._phone URI CALLER CODEC`` dials ``URI`` as
``CALLER`` with ``CODEC`` (``PCMU/8000`` or ``PCMA/8000``) offered alone, then reads commands
from stdin and writes events to stdout, one JSON object a line (`_sip.Phone` is the other end).

Commands: ``{"op": "say", "id": n, "wav": path}`` streams the WAV into the call through
PJSIP's conference bridge, whose clock (the null sound device) paces it in real time; silence
is sent whenever nothing is said. ``{"op": "keys", "id": n, "digits": "12#"}`` presses the keys
as RFC 4733 events. ``{"op": "hang_up"}`` ends the call. Closing stdin hangs up too.

Events: ``dialling`` (with the SIP ``call_id``), ``confirmed`` (the call answered: 200 OK and
ACK), ``said`` (``id``, and ``start``/``end``: when the WAV began and ended, on the
``time.perf_counter`` clock, which is the machine's monotonic clock, shared by processes),
``pressed`` (``id``), ``ended`` (the SIP status and reason), ``error`` (``message``).

pjsua2 runs in its own process because it owns a thread and signal-free event loop of its own,
and its objects must be destroyed in order while the library runs; a test process must never
host it.
"""

from __future__ import annotations

import gc
import json
import os
import select
import sys
import time
from typing import Any

__all__ = ["main"]

_LOOPBACK = ("127.", "localhost", "[::1]", "::1")


def _emit(event: str, **fields: Any) -> None:
    sys.stdout.write(json.dumps({"event": event, **fields}) + "\n")
    sys.stdout.flush()


_pending = bytearray()


def _commands() -> list[dict[str, Any]]:
    """Whatever commands wait on stdin (never blocks); ``{"op": "hang_up"}`` once it closed."""
    found: list[dict[str, Any]] = []
    fd = sys.stdin.fileno()
    while select.select([fd], [], [], 0)[0]:
        chunk = os.read(fd, 65536)
        if not chunk:
            found.append({"op": "hang_up"})
            break
        _pending.extend(chunk)
    while (end := _pending.find(b"\n")) >= 0:
        line = bytes(_pending[:end])
        del _pending[: end + 1]
        if line.strip():
            found.append(json.loads(line))
    return found


def main(argv: list[str]) -> int:
    uri, caller, codec = argv
    try:
        import pjsua2 as pj  # type: ignore[import-untyped]
    except ImportError:
        _emit("error", message="pjsua2 is not installed (the sip extra)")
        return 2
    host = uri.split("@", 1)[-1]
    ep = pj.Endpoint()
    ep.libCreate()
    config = pj.EpConfig()
    # No threads of its own: every callback runs in libHandleEvents, on this thread.
    config.uaConfig.threadCnt = 0
    config.uaConfig.mainThreadOnly = True
    config.logConfig.level = 1
    config.logConfig.consoleLevel = 1
    config.medConfig.noVad = True  # silence is sent as silence: the agent's VAD hears a pause
    ep.libInit(config)
    transport = pj.TransportConfig()
    if host.startswith(_LOOPBACK):
        transport.boundAddress = "127.0.0.1"
        transport.publicAddress = "127.0.0.1"
    ep.transportCreate(pj.PJSIP_TRANSPORT_UDP, transport)
    ep.libStart()
    ep.audDevManager().setNullDev()
    for info in ep.codecEnum2():
        ep.codecSetPriority(info.codecId, 255 if info.codecId.startswith(codec) else 0)

    state: dict[str, Any] = {"media": None, "ended": None, "eof": False}

    class Line(pj.Call):  # type: ignore[misc]
        def onCallState(self, prm: Any) -> None:
            info = self.getInfo()
            if info.state == pj.PJSIP_INV_STATE_CONFIRMED:
                _emit("confirmed")
            if info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
                state["ended"] = (info.lastStatusCode, info.lastReason)

        def onCallMediaState(self, prm: Any) -> None:
            info = self.getInfo()  # kept: its media vector lives only as long as it does
            for index, media in enumerate(info.media):
                if (
                    media.type == pj.PJMEDIA_TYPE_AUDIO
                    and media.status == pj.PJSUA_CALL_MEDIA_ACTIVE
                ):
                    state["media"] = self.getAudioMedia(index)

    class Player(pj.AudioMediaPlayer):  # type: ignore[misc]
        def onEof2(self) -> None:
            state["eof"] = True

    account_config = pj.AccountConfig()
    account_config.idUri = f"sip:{caller}@{'127.0.0.1' if host.startswith(_LOOPBACK) else host}"
    account = pj.Account()
    account.create(account_config)
    call: Any = Line(account)
    player: Any = None
    saying: tuple[int, float] | None = None
    code = 0
    try:
        call.makeCall(uri, pj.CallOpParam(True))
        _emit("dialling", call_id=call.getInfo().callIdString)
        hanging_up = False
        while state["ended"] is None:
            ep.libHandleEvents(10)
            if saying is not None and state["eof"]:
                if state["media"] is not None:
                    player.stopTransmit(state["media"])
                _emit("said", id=saying[0], start=saying[1], end=time.perf_counter())
                saying, player, state["eof"] = None, None, False
            for command in _commands():
                op = command.get("op")
                if op == "say" and state["media"] is not None:
                    player = Player()
                    player.createPlayer(command["wav"], pj.PJMEDIA_FILE_NO_LOOP)
                    player.startTransmit(state["media"])
                    saying = (int(command["id"]), time.perf_counter())
                elif op == "keys":
                    call.dialDtmf(str(command["digits"]))
                    _emit("pressed", id=int(command["id"]))
                elif op == "hang_up":
                    if not hanging_up:
                        hanging_up = True
                        call.hangup(pj.CallOpParam(True))
                else:
                    _emit("error", message=f"cannot {op!r} now (media: {state['media']})")
        status, reason = state["ended"]
        _emit("ended", status=status, reason=reason)
    except Exception as exc:  # the test names what broke, not a traceback on stderr
        _emit("error", message=f"{type(exc).__name__}: {exc}")
        code = 1
    finally:
        # pjsua2's objects must be destroyed while the library still runs.
        state["media"] = player = call = None
        account.shutdown()
        account = None
        gc.collect()
        ep.libDestroy()
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
