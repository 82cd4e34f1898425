"""The far side of the SIP tests, run inside the lab's namespace by `SipLab.call`.

``python sip_calls.py FUNCTION JSON_KWARGS RESULT_PATH`` runs ``FUNCTION(**kwargs)`` (a coroutine
function is run with asyncio) and pickles ``{"value": ..., "error": ...}`` to RESULT_PATH.

`route_calls` makes the lab's inbound trunk and dispatch rule with livekit-api. `place_call`
is a phone: a PJSIP user agent (pjsua2) that dials the SIP service, waits for the agent's
greeting, says a WAV fixture as G.711 RTP in real time, records what comes back, presses keys
as RFC 4733 events, and hangs up.
"""

from __future__ import annotations

import array
import gc
import resource
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "room"))

from call_result import run_from_argv

LOOPBACK = "127.0.0.1"
SPEECH_POWER = 300.0**2
"""Mean square of a 20 ms frame above which the far end is speaking (16-bit samples; G.711's
silence is a few units)."""


async def route_calls(*, agent_name: str, trunk_number: str) -> dict[str, str]:
    """An inbound trunk for ``trunk_number`` and a dispatch rule: a room per call, with
    ``agent_name`` dispatched into it (none when it is empty: the room adapter dispatches)."""
    from livekit import api

    async with api.LiveKitAPI() as lkapi:
        trunk = await lkapi.sip.create_inbound_trunk(
            api.CreateSIPInboundTrunkRequest(
                trunk=api.SIPInboundTrunkInfo(name="lab trunk", numbers=[trunk_number])
            )
        )
        rule = await lkapi.sip.create_dispatch_rule(
            api.CreateSIPDispatchRuleRequest(
                rule=api.SIPDispatchRule(
                    dispatch_rule_individual=api.SIPDispatchRuleIndividual(room_prefix="call-")
                ),
                trunk_ids=[trunk.sip_trunk_id],
                name=f"lab rule {trunk_number}",
                room_config=api.RoomConfiguration(
                    agents=[api.RoomAgentDispatch(agent_name=agent_name)] if agent_name else []
                ),
            )
        )
    return {"trunk_id": trunk.sip_trunk_id, "rule_id": rule.sip_dispatch_rule_id}


async def dial_out(
    *, agent_name: str, room: str, number: str, trunk_number: str, phone_port: int
) -> dict[str, Any]:
    """What an outbound agent's backend does: an outbound trunk to the phone at
    ``phone_port``, the agent dispatched into ``room``, and ``create_sip_participant`` dialling
    ``number`` from it, until the phone answers."""
    from livekit import api

    trunk_id = await outbound_trunk(phone_port=phone_port, trunk_number=trunk_number)
    async with api.LiveKitAPI() as lkapi:
        await lkapi.agent_dispatch.create_dispatch(
            api.CreateAgentDispatchRequest(agent_name=agent_name, room=room)
        )
        started = time.perf_counter()
        participant = await lkapi.sip.create_sip_participant(
            api.CreateSIPParticipantRequest(
                sip_trunk_id=trunk_id,
                sip_call_to=number,
                room_name=room,
                participant_identity=f"sip_{number}",
                wait_until_answered=True,
            )
        )
    return {
        "identity": participant.participant_identity,
        "answered_s": time.perf_counter() - started,
    }


async def outbound_trunk(*, phone_port: int, trunk_number: str) -> str:
    """An outbound trunk to the phone at ``phone_port``, calling from ``trunk_number``."""
    from livekit import api

    async with api.LiveKitAPI() as lkapi:
        trunk = await lkapi.sip.create_outbound_trunk(
            api.CreateSIPOutboundTrunkRequest(
                trunk=api.SIPOutboundTrunkInfo(
                    name="lab phone",
                    address=f"{LOOPBACK}:{phone_port}",
                    numbers=[trunk_number],
                )
            )
        )
    return str(trunk.sip_trunk_id)


async def dispatch(*, agent_name: str, room: str) -> None:
    """Dispatch ``agent_name`` into ``room`` (the agent places its call itself)."""
    from livekit import api

    async with api.LiveKitAPI() as lkapi:
        await lkapi.agent_dispatch.create_dispatch(
            api.CreateAgentDispatchRequest(agent_name=agent_name, room=room)
        )


async def dial_unanswered(
    *, room: str, number: str, trunk_number: str, phone_port: int, ringing_timeout_s: float
) -> dict[str, Any]:
    """An outbound agent's dial that is not answered: ``create_sip_participant`` with
    ``wait_until_answered`` to the phone at ``phone_port`` (which refuses the call, or lets it
    ring past ``ringing_timeout_s``). Returns what LiveKit raised: its class, ``code``,
    ``message``, ``status`` and ``metadata``."""
    from google.protobuf.duration_pb2 import Duration
    from livekit import api

    trunk_id = await outbound_trunk(phone_port=phone_port, trunk_number=trunk_number)
    async with api.LiveKitAPI() as lkapi:
        timeout = Duration()
        timeout.FromMilliseconds(int(ringing_timeout_s * 1000))
        try:
            await lkapi.sip.create_sip_participant(
                api.CreateSIPParticipantRequest(
                    sip_trunk_id=trunk_id,
                    sip_call_to=number,
                    room_name=room,
                    participant_identity=f"sip_{number}",
                    wait_until_answered=True,
                    ringing_timeout=timeout,
                )
            )
        except api.ServerError as exc:
            return {
                "class": f"{type(exc).__module__}.{type(exc).__qualname__}",
                "code": exc.code,
                "message": exc.message,
                "status": exc.status,
                "metadata": dict(exc.metadata),
                "str": str(exc),
            }
    raise AssertionError(f"the call to {number} was answered")


def _endpoint(port: int, codec: str | None = None) -> Any:
    """A started PJSIP endpoint on loopback UDP ``port`` (0: any), with no sound device and,
    given ``codec``, that codec alone offered. No threads of its own: every callback runs in
    ``libHandleEvents``, on the calling thread."""
    import pjsua2 as pj

    ep = pj.Endpoint()
    ep.libCreate()
    config = pj.EpConfig()
    config.uaConfig.threadCnt = 0
    config.uaConfig.mainThreadOnly = True
    config.logConfig.level = 2
    config.logConfig.consoleLevel = 2
    config.medConfig.noVad = True  # silence is sent as silence
    ep.libInit(config)
    transport = pj.TransportConfig()
    transport.port = port
    transport.boundAddress = LOOPBACK
    transport.publicAddress = LOOPBACK
    ep.transportCreate(pj.PJSIP_TRANSPORT_UDP, transport)
    ep.libStart()
    ep.audDevManager().setNullDev()
    if codec is not None:
        for info in ep.codecEnum2():
            ep.codecSetPriority(info.codecId, 255 if info.codecId.startswith(codec) else 0)
    return ep


def refuse_call(
    *, number: str, listen_port: int, status: int, timeout_s: float = 60.0
) -> dict[str, Any]:
    """A phone with ``number`` on ``listen_port`` that does not answer the first call: it
    answers ``status`` (486 Busy Here, 480 Temporarily Unavailable), or with 180 rings until
    the caller gives up. Returns the call's SIP states and its last status code."""
    import pjsua2 as pj

    ep = _endpoint(listen_port)
    state: dict[str, Any] = {"states": [], "done": False}

    class Phone(pj.Call):  # type: ignore[misc]
        def onCallState(self, prm: Any) -> None:
            info = self.getInfo()
            state["states"].append(info.stateText)
            state["last_status"] = info.lastStatusCode
            if info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
                state["done"] = True

    class Line(pj.Account):  # type: ignore[misc]
        def onIncomingCall(self, prm: Any) -> None:
            incoming = Phone(self, prm.callId)
            state["phone"] = incoming
            answer = pj.CallOpParam()
            answer.statusCode = status
            incoming.answer(answer)

    account_config = pj.AccountConfig()
    account_config.idUri = f"sip:{number}@{LOOPBACK}"
    account = Line()
    account.create(account_config)
    deadline = time.perf_counter() + timeout_s
    try:
        while not state["done"]:
            if time.perf_counter() > deadline:
                raise TimeoutError(
                    f"the call did not end within {timeout_s:g} s: {state['states']}"
                )
            ep.libHandleEvents(10)
    finally:
        state.pop("phone", None)
        account.shutdown()
        account = None
        gc.collect()
        ep.libDestroy()
    return {"states": state["states"], "last_status": state.get("last_status")}


def answer_call(
    *, number: str, listen_port: int, say: str, record: str, timeout_s: float = 120.0
) -> dict[str, Any]:
    """The far end of the agent's outbound call: a phone with ``number`` on ``listen_port``
    that answers the first call, waits for the agent to speak, says ``say``, and hangs up
    after the agent's answer. Returns what `place_call` returns, and the caller's SIP URI."""
    return place_call(
        caller_number=number,
        dial="",
        sip_port=0,
        say=say,
        record=record,
        answer_on_port=listen_port,
        timeout_s=timeout_s,
    )


def place_call(
    *,
    caller_number: str,
    dial: str,
    sip_port: int,
    say: str,
    record: str,
    keys: str = "",
    codec: str = "PCMU/8000",
    answer_on_port: int = 0,
    timeout_s: float = 120.0,
) -> dict[str, Any]:
    """Call ``dial`` at the SIP service as ``caller_number``; see the module docstring.
    With ``answer_on_port``, wait on that port for a call and answer it instead.

    Returns the call's SIP states, its set-up time (INVITE to the call confirmed), the codec
    the call used, the keys the far end sent back as RFC 4733 events, and this process's CPU
    seconds for the call.
    """
    import pjsua2 as pj

    rusage_before = resource.getrusage(resource.RUSAGE_SELF)
    ep = _endpoint(answer_on_port, codec)

    state: dict[str, Any] = {"states": [], "keys_heard": "", "media": None, "done": False}

    class Phone(pj.Call):  # type: ignore[misc]
        def onCallState(self, prm: Any) -> None:
            info = self.getInfo()
            state["states"].append(info.stateText)
            state["last_status"] = info.lastStatusCode
            if info.state == pj.PJSIP_INV_STATE_CONFIRMED:
                state.setdefault("confirmed_at", time.perf_counter())
            if info.state == pj.PJSIP_INV_STATE_DISCONNECTED:
                state["done"] = True

        def onCallMediaState(self, prm: Any) -> None:
            info = self.getInfo()
            for index, media in enumerate(info.media):
                if (
                    media.type == pj.PJMEDIA_TYPE_AUDIO
                    and media.status == pj.PJSUA_CALL_MEDIA_ACTIVE
                ):
                    state["media"] = self.getAudioMedia(index)

        def onDtmfDigit(self, prm: Any) -> None:
            state["keys_heard"] += prm.digit

    class Fixture(pj.AudioMediaPlayer):  # type: ignore[misc]
        def onEof2(self) -> None:
            state["said"] = True

    class Ear(pj.AudioMediaPort):  # type: ignore[misc]
        """Hears the call's audio, frame by frame (20 ms of 16-bit PCM at 8 kHz)."""

        loud = False

        def onFrameReceived(self, frame: Any) -> None:
            if frame.type != pj.PJMEDIA_FRAME_TYPE_AUDIO or frame.size == 0:
                self.loud = False
                return
            samples = array.array("h", bytes(frame.buf))
            power = sum(sample * sample for sample in samples) / max(len(samples), 1)
            self.loud = power > SPEECH_POWER

    account_config = pj.AccountConfig()
    account_config.idUri = f"sip:{caller_number}@{LOOPBACK}"

    class Line(pj.Account):  # type: ignore[misc]
        def onIncomingCall(self, prm: Any) -> None:
            incoming = Phone(self, prm.callId)
            state["phone"] = incoming
            answer = pj.CallOpParam()
            answer.statusCode = 200
            incoming.answer(answer)

    account = Line()
    account.create(account_config)
    phone = None if answer_on_port else Phone(account)
    deadline = time.perf_counter() + timeout_s

    def pump(until: Any, what: str) -> None:
        print(f"sip_calls: waiting for {what}", file=sys.stderr, flush=True)
        while not until():
            if state["done"] and what != "hang-up":
                raise RuntimeError(
                    f"the call ended ({state.get('last_status')}) while waiting for {what}: "
                    f"{state['states']}"
                )
            if time.perf_counter() > deadline:
                raise TimeoutError(f"no {what} within {timeout_s:g} s: {state['states']}")
            ep.libHandleEvents(10)

    ear = Ear()
    ear_format = pj.MediaFormatAudio()
    ear_format.init(pj.PJMEDIA_FORMAT_PCM, 8000, 1, 20000, 16)
    ear.createPort("ear", ear_format)

    def loud() -> bool:
        return bool(ear.loud)

    def quiet_for(seconds: float) -> Any:
        since = [time.perf_counter()]

        def check() -> bool:
            if ear.loud:
                since[0] = time.perf_counter()
            return time.perf_counter() - since[0] >= seconds

        return check

    call_media = fixture = recorder = None
    try:
        dialled_at = time.perf_counter()
        if phone is not None:
            phone.makeCall(f"sip:{dial}@{LOOPBACK}:{sip_port}", pj.CallOpParam(True))
        else:
            pump(lambda: "phone" in state, "a call to answer")
            dialled_at = time.perf_counter()
            phone = state["phone"]
        pump(lambda: "confirmed_at" in state and state["media"] is not None, "answer")
        call_media = state["media"]
        recorder = pj.AudioMediaRecorder()
        recorder.createRecorder(record)
        call_media.startTransmit(recorder)
        call_media.startTransmit(ear)
        # The agent greets the caller: wait for its voice, then for it to finish.
        pump(loud, "greeting")
        greeted_at = time.perf_counter()
        pump(quiet_for(1.0), "the end of the greeting")
        fixture = Fixture()
        fixture.createPlayer(say, pj.PJMEDIA_FILE_NO_LOOP)
        fixture.startTransmit(call_media)
        pump(lambda: state.get("said", False), "the end of the fixture")
        fixture.stopTransmit(call_media)
        pump(loud, "the agent's reply")
        pump(quiet_for(1.5), "the end of the agent's reply")
        for key in keys:
            phone.dialDtmf(key)
            pump(quiet_for(0.3), "the key's event to be sent")
        if keys:
            # The agent echoes keys back (sip_worker.py): wait for them as RFC 4733 events,
            # and for their tones in band to end.
            pump(lambda: state["keys_heard"] == keys, f"the keys {keys!r} echoed back")
            pump(quiet_for(1.0), "the end of the keys' tones")
        call_info = phone.getInfo()
        stream = phone.getStreamInfo(0)
        used_codec = f"{stream.codecName}/{stream.codecClockRate}"
        call_id = call_info.callIdString
        remote_uri = call_info.remoteUri
        call_media.stopTransmit(recorder)
        call_media.stopTransmit(ear)
        phone.hangup(pj.CallOpParam(True))
        pump(lambda: state["done"], "hang-up")
    finally:
        # pjsua2's objects must be destroyed while the library still runs: their destructors
        # call into it (a Call's asserts on its call id once the library is gone).
        state["media"] = call_media = None
        fixture = recorder = ear = phone = None
        state.pop("phone", None)
        account.shutdown()
        account = None
        gc.collect()
        ep.libDestroy()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "states": state["states"],
        "setup_s": state["confirmed_at"] - dialled_at,
        "greeting_after_s": greeted_at - dialled_at,
        "codec": used_codec,
        "call_id": call_id,
        "remote_uri": remote_uri,
        "keys_heard": state["keys_heard"],
        "cpu_s": (usage.ru_utime + usage.ru_stime)
        - (rusage_before.ru_utime + rusage_before.ru_stime),
    }


async def run_records(**kwargs: Any) -> Any:
    """tests/room/room_calls.py's `run_records`: a transcript file run by the runner with
    ``LiveKitRoomAdapter(**kwargs)`` (here with ``sip=``: over a phone line); its result."""
    from room_calls import run_records as run

    return await run(**kwargs)


def main() -> None:
    run_from_argv(globals())


if __name__ == "__main__":
    main()
