"""The phone line of an in-process LiveKit session: a job context with a room that carries
the caller's keys in and records the keys the agent sends.

A LiveKit agent on a phone call reads keys from its job's room (``ctx.room.on(
"sip_dtmf_received", ...)``; LiveKit's ``GetDtmfTask`` does it through ``get_job_context()``)
and sends them with ``room.local_participant.publish_dtmf(code=..., digit=...)`` (LiveKit's
``send_dtmf_events`` tool, ``ivr_detection``). In process there is no job and no room, so
`phone_line` gives the conversation LiveKit's own fake job (``livekit.agents.testing.
fake_job_context``, a real ``JobContext``) around a `PhoneRoom`: the room emits
``sip_dtmf_received`` with a real ``rtc.SipDTMF`` for each key a turn's ``dtmf:`` presses,
and its local participant records every ``publish_dtmf``. Such an agent runs unchanged.
The room has the caller in it, as LiveKit's SIP service puts one there: a remote participant
of kind SIP, identity ``sip_<number>``, with LiveKit's documented SIP attributes
(``sip.phoneNumber``, ``sip.trunkPhoneNumber``, ``sip.callStatus: active``, ``sip.callID``,
...), the numbers from the transcript's ``phone:``; an agent that reads
``ctx.room.remote_participants`` or waits for the participant runs unchanged.
The agent hanging up is recorded too: its ``ctx.shutdown()``, ``ctx.delete_room()`` and
``ctx.api.room.delete_room(...)`` on the fake job (in a fake job LiveKit runs none of them)
end the call in the turn they ran in (``call_ended``). The fake job's ``ctx.api`` is the
call's own (`PhoneAPI`): it records ``ctx.transfer_sip_participant(...)`` and ``ctx.api.sip.transfer_sip_participant(...)`` (to where,
with a dial tone or not) in the turn's ``sip_transfers``, and refuses the rest of LiveKit's
server API, which an in-process test must not reach.
Keys the agent plays as tones in its own reply audio (in band) count as sent too, when the
adapter captures that audio (a session with a TTS or a speaking realtime model).

It is installed only when nothing else gave the session a job context, and everything it
made goes with the conversation: the context variable is reset, the job's temporary folder
removed, its room listener taken off.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
import weakref
from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from livekit import rtc

from ....errors import AdapterError
from ....models import AgentReply, DtmfInput, PhoneCall, Transcript
from ....models._far_end import FarEnd
from ....models._keypad import (
    HANG_UP_KEY,
    IN_BAND_KEY,
    PRESSED_KEY,
    SIP_CALLER_KEY,
    SIP_DIALS_KEY,
    keys_alone,
)
from ....voice._dtmf import keys_in_pcm, merge_keys
from ...base import TurnInput
from .._compat import end_fake_job
from ._dial import callee_attributes, dial, failed_dial
from ._hang_up import record_session_shutdown, refuse_after_hang_up
from ._turn_state import SentTurn

if TYPE_CHECKING:
    from livekit.agents import AgentSession

    from .._turn import Stage

__all__ = [
    "PhoneAPI",
    "PhoneRoom",
    "SipParticipant",
    "keypad_turn",
    "phone_line",
    "press_around",
    "uses_phone_line",
]

_CODES = {**{str(d): d for d in range(10)}, "*": 10, "#": 11, "A": 12, "B": 13, "C": 14, "D": 15}
"""Each key's DTMF event code, as LiveKit numbers them (``dtmf_event_to_code``)."""


class _Noted(list[Any]):
    """A list of what the agent did on the line that sets ``acted`` on each append (so a turn
    of keys alone wakes when the agent answers the keys by sending keys or hanging up)."""

    def __init__(self, acted: asyncio.Event) -> None:
        super().__init__()
        self._acted = acted

    def append(self, item: Any) -> None:
        super().append(item)
        self._acted.set()


class PhoneParticipant:
    """The agent's side of the line: what ``room.local_participant`` is; it records keys."""

    identity = "agent"
    name = "agent"

    def __init__(self) -> None:
        self.attributes: dict[str, str] = {}
        self.keys_sent: list[str] = []
        """Every digit the agent published, oldest first."""

    async def publish_dtmf(self, *, code: int, digit: str) -> None:
        """Send a key on the line, as ``rtc.LocalParticipant.publish_dtmf`` does."""
        self.keys_sent.append(str(digit).upper())

    async def set_attributes(self, attributes: dict[str, str]) -> None:
        self.attributes.update(attributes)


class SipParticipant:
    """The caller, as LiveKit's SIP service puts an inbound call in a room: what
    ``room.remote_participants["sip_+15550100"]`` is (the read-only side of an
    ``rtc.RemoteParticipant``)."""

    def __init__(self, phone: PhoneCall) -> None:
        call_id = "SCL_" + "".join(c for c in phone.caller_number if c.isdigit())[-8:]
        self.sid = "PA_" + call_id.removeprefix("SCL_")
        self.identity = f"sip_{phone.caller_number}"
        self.name = f"Phone {phone.caller_number}"
        self.metadata = ""
        self.kind = rtc.ParticipantKind.PARTICIPANT_KIND_SIP
        self.kind_details: list[Any] = []
        self.state = rtc.ParticipantState.PARTICIPANT_STATE_ACTIVE
        self.disconnect_reason: Any = None
        self.track_publications: dict[str, Any] = {}
        self.permissions: Any = None
        # LiveKit's documented SIP participant attributes, for an inbound call.
        self.attributes: dict[str, str] = {
            "sip.callID": call_id,
            "sip.callIDFull": f"{call_id}@pytest-agent-eval.invalid",
            "sip.callTag": call_id.lower(),
            "sip.callStatus": "active",
            "sip.phoneNumber": phone.caller_number,
            "sip.trunkPhoneNumber": phone.trunk_number,
            "sip.trunkID": "ST_pytest_agent_eval",
            "sip.ruleID": "SDR_pytest_agent_eval",
            "sip.hostname": "pytest-agent-eval.invalid",
        }


class PhoneRoom(rtc.EventEmitter[str]):
    """The room of the in-process phone call: the caller in it (`SipParticipant`); emits
    ``sip_dtmf_received`` for the caller's keys; its local participant records the keys the
    agent sends."""

    def __init__(
        self, name: str, phone: PhoneCall | None = None, far_end: FarEnd | None = None
    ) -> None:
        super().__init__()
        self.name = name
        self.phone = phone or PhoneCall()
        self.far_end = far_end
        self.outbound = self.phone.direction == "outbound"
        self.acted = asyncio.Event()
        """Set when the agent sends a key, hangs up or transfers the call."""
        self.local_participant = PhoneParticipant()
        self.local_participant.keys_sent = _Noted(self.acted)
        self.caller = SipParticipant(self.phone)
        # On an outbound call nobody is on the line until the agent dials (`answer`).
        self.remote_participants: dict[str, Any] = (
            {} if self.outbound else {self.caller.identity: self.caller}
        )
        self.dials: list[dict[str, Any]] = []
        """Each ``create_sip_participant`` of an outbound agent: number, outcome (and
        sip_status_code when the far end sent one), oldest first."""
        self.dials_reported = 0
        self.dial_refused: str | None = None
        """Why a ``create_sip_participant`` could not be answered in process (`dial`): the
        run is an ERROR, not the agent's verdict."""
        self.keys_pressed: list[str] = []
        self.transfers: list[dict[str, Any]] = _Noted(self.acted)
        """Each ``transfer_sip_participant`` request the agent made: to, participant,
        play_dialtone, oldest first."""
        self.hang_ups: list[str] = _Noted(self.acted)
        """How the agent ended the call, each time it did (``ctx.shutdown(...)``,
        ``ctx.delete_room()``, ``session.shutdown()``), oldest first."""
        self.hung_up_in: tuple[int, str] | None = None
        """The turn (index) in which the agent first hung up, and how."""

    def isconnected(self) -> bool:
        return True

    def answer(
        self, *, number: str, identity: str, trunk_number: str | None, trunk_id: str
    ) -> SipParticipant:
        """The callee of the agent's outbound call picks up: it joins the room as LiveKit's
        SIP service puts one there (``participant_connected``, ``sip.callStatus: active``)."""
        callee = SipParticipant(PhoneCall(caller_number=number))
        callee.identity = identity
        callee.attributes = callee_attributes(
            number=number,
            trunk_number=trunk_number or self.phone.trunk_number,
            trunk_id=trunk_id,
            call_id=callee.attributes["sip.callID"],
        )
        self.caller = callee
        self.remote_participants[identity] = callee
        self.emit("participant_connected", callee)
        return callee

    def press(self, key: str) -> None:
        """The caller presses ``key``: the event a SIP participant's key makes."""
        self.keys_pressed.append(key)
        self.emit(
            "sip_dtmf_received",
            rtc.SipDTMF(code=_CODES[key], digit=key, participant=self.caller),  # type: ignore[arg-type]
        )


class _PhoneSip:
    def __init__(self, room: PhoneRoom) -> None:
        self._room = room

    async def create_sip_participant(self, request: Any, *_: Any, **__: Any) -> Any:
        """Dial out, as LiveKit's SIP service would: on an outbound call (``phone:
        {direction: outbound}``), answered (or not) as the transcript's far end says."""
        if not self._room.outbound:
            raise _refused("sip.create_sip_participant", outbound=False)
        return await dial(self._room, self._room.far_end, request)

    async def transfer_sip_participant(self, request: Any, *_: Any, **__: Any) -> Any:
        """Transfer the caller (a cold transfer), as LiveKit's SIP service would: recorded."""
        from livekit.protocol.sip import TransferSIPParticipantRequest

        if not isinstance(request, TransferSIPParticipantRequest):
            raise TypeError(
                "transfer_sip_participant takes an api.TransferSIPParticipantRequest, got "
                f"{type(request).__name__}"
            )
        self._room.transfers.append(
            {
                "to": request.transfer_to,
                "participant": request.participant_identity,
                "play_dialtone": request.play_dialtone,
            }
        )
        from google.protobuf.empty_pb2 import Empty

        return Empty()

    def __getattr__(self, name: str) -> Any:
        raise _refused(f"sip.{name}")


class _PhoneRooms:
    def __init__(self, room: PhoneRoom) -> None:
        self._room = room

    async def delete_room(self, request: Any, *_: Any, **__: Any) -> Any:
        """End the call for everyone, as deleting the room does: recorded as a hang-up."""
        from livekit.protocol.room import DeleteRoomResponse

        self._room.hang_ups.append("ctx.api.room.delete_room()")
        return DeleteRoomResponse()

    def __getattr__(self, name: str) -> Any:
        raise _refused(f"room.{name}")


def _refused(name: str, *, outbound: bool = True) -> AttributeError:
    why = (
        ""
        if outbound
        else " (sip.create_sip_participant on an outbound call: phone: {direction: outbound})"
    )
    return AttributeError(
        f"ctx.api.{name} is not available in process: the in-process phone call's API records "
        f"sip.transfer_sip_participant and room.delete_room{why}, and reaches no LiveKit server"
    )


class PhoneAPI:
    """What the fake job's ``ctx.api`` is: the parts of ``api.LiveKitAPI`` a phone agent uses
    to transfer or hang up, recorded on the `PhoneRoom`."""

    def __init__(self, room: PhoneRoom) -> None:
        self.sip = _PhoneSip(room)
        self.room = _PhoneRooms(room)

    async def aclose(self) -> None:
        """Nothing to close: no connection was made."""

    def __getattr__(self, name: str) -> Any:
        raise _refused(name)


_LINES: weakref.WeakKeyDictionary[Any, PhoneRoom] = weakref.WeakKeyDictionary()


def uses_phone_line(transcript: Transcript) -> bool:
    """Whether ``transcript`` is a phone call: it sets ``phone:`` or ``far_end:``, presses
    keys, or checks keys sent, a hang-up or a transfer. Only then does a conversation get the fake job, so an agent tested
    otherwise sees the same job context (none) as before, and LiveKit's job-only paths of the
    session start (IVR detection) stay off."""
    return (
        transcript.phone is not None
        or transcript.far_end is not None
        or any(
            turn.dtmf is not None
            or turn.expect.dtmf_sent is not None
            or turn.expect.call_ended is not None
            or turn.expect.transferred_to is not None
            for turn in transcript.turns
        )
    )


@contextlib.contextmanager
def phone_line(session: AgentSession[Any], transcript: Transcript) -> Iterator[PhoneRoom | None]:
    """Give ``session`` (about to start, in this context) a fake job whose room is a
    `PhoneRoom` on ``transcript``'s phone call, until the block ends; yields the room, or None
    when a job context was already set (the caller's own) or this LiveKit has no fake job."""
    from livekit.agents import get_job_context

    try:
        from livekit.agents.testing import fake_job_context
    except ImportError:  # a livekit-agents without fake jobs: no phone line
        yield None
        return
    if get_job_context(required=False) is not None:
        yield None
        return
    room = PhoneRoom(f"phone-{transcript.id}", transcript.phone, transcript.far_end)
    made = fake_job_context(room=room)  # type: ignore[arg-type]
    job = made.__enter__()
    _record_hang_ups(job, room)
    undo_shutdown = record_session_shutdown(session, room)
    _LINES[session] = room
    try:
        yield room
    finally:
        undo_shutdown()
        _LINES.pop(session, None)
        with contextlib.suppress(ValueError):  # ended in another context than it began in
            made.__exit__(None, None, None)
        end_fake_job(job, room)


def _record_hang_ups(job: Any, room: PhoneRoom) -> None:
    """Note on ``room`` the agent's ``job.shutdown()`` and ``job.delete_room()``: the fake
    job runs neither (its shutdown callback does nothing, and it does not delete rooms)."""
    delete_room = job.delete_room

    def on_shutdown(reason: str) -> None:
        room.hang_ups.append(f"ctx.shutdown({reason!r})")

    def deleting(room_name: str | None = None) -> Any:
        room.hang_ups.append("ctx.delete_room()")
        return delete_room(room_name)

    transfer = job.transfer_sip_participant

    def transferring(
        participant: Any, transfer_to: str, play_dialtone: bool = False, **kwargs: Any
    ) -> Any:
        identity = participant if isinstance(participant, str) else participant.identity
        room.transfers.append(
            {"to": transfer_to, "participant": identity, "play_dialtone": play_dialtone}
        )
        return transfer(participant, transfer_to, play_dialtone=play_dialtone, **kwargs)

    job._on_shutdown = on_shutdown
    job.delete_room = deleting
    job.transfer_sip_participant = transferring
    job.__dict__["api"] = PhoneAPI(room)  # JobContext.api is a cached property


async def keypad_turn(
    session: AgentSession[Any],
    turn: TurnInput,
    respond: Callable[[TurnInput], Awaitable[AgentReply]],
    audio_out: Any = None,
) -> AgentReply:
    """``respond(turn)``, with the keys the agent sent in it (published, or played as tones
    in the reply audio ``audio_out`` captured, if any) and the keys pressed for it."""
    room = _LINES.get(session)
    if room is None:
        return await respond(turn)
    refuse_after_hang_up(room, f"turn {turn.index + 1}")
    sent_from, pressed_from = len(room.local_participant.keys_sent), len(room.keys_pressed)
    ended_from, transfers_from = len(room.hang_ups), len(room.transfers)
    if room.dial_refused is not None:
        raise AdapterError(f"turn {turn.index + 1}: {room.dial_refused}")
    if room.outbound:
        if not room.dials:
            raise AdapterError(
                f"turn {turn.index + 1}: the agent placed no call: on an outbound call "
                "(phone: {direction: outbound}) the far end speaks once the agent's "
                "ctx.api.sip.create_sip_participant(...) reached it; dial before the first turn "
                "(in the agent's on_enter)"
            )
        if turn.index == 0:
            ended_from = 0  # the agent's hang-up when its dial failed, before turn 1
    failed = failed_dial(room) if room.outbound else None
    if failed is not None:
        # The line never connected: the far end's busy tone or ringing reaches no one.
        reply = AgentReply(reply="")
    else:
        reply = await respond(turn)
    if room.outbound:
        reply.metadata[SIP_DIALS_KEY] = room.dials[room.dials_reported :]
        room.dials_reported = len(room.dials)
    reply.dtmf_sent = "".join(room.local_participant.keys_sent[sent_from:])
    reply.call_ended = len(room.hang_ups) > ended_from
    if reply.call_ended:
        reply.metadata[HANG_UP_KEY] = room.hang_ups[ended_from]
        room.hung_up_in = (turn.index, room.hang_ups[ended_from])
    reply.metadata["sip_transfers"] = room.transfers[transfers_from:]
    if room.caller.identity in room.remote_participants:
        reply.metadata[SIP_CALLER_KEY] = room.caller.attributes["sip.phoneNumber"]
    if audio_out is not None:
        heard = keys_in_pcm(*_pcm(audio_out.frames))
        if heard:  # only keys heard: a turn without tones has no such key, in every adapter
            reply.metadata[IN_BAND_KEY] = heard
        reply.dtmf_sent = merge_keys(reply.dtmf_sent, heard)
    if isinstance(turn.turn.dtmf, DtmfInput):
        reply.metadata[PRESSED_KEY] = "".join(room.keys_pressed[pressed_from:])
    return reply


def _pcm(frames: list[rtc.AudioFrame]) -> tuple[bytes, int]:
    """``frames`` (the turn's reply audio) as 16-bit mono PCM, and its rate."""
    import numpy as np

    if not frames:
        return b"", 0
    rate = frames[0].sample_rate
    parts = []
    for frame in frames:
        samples = np.frombuffer(bytes(frame.data), dtype=np.int16)
        parts.append(samples[:: max(1, frame.num_channels)])
    return np.concatenate(parts).tobytes(), rate


def has_keys(turn: TurnInput) -> bool:
    """Whether ``turn`` presses keys (``dtmf:``)."""
    return isinstance(turn.turn.dtmf, DtmfInput)


async def press_around(
    conversation: Any, turn: TurnInput, stage: Stage, *, settle: bool
) -> SentTurn:
    """Send ``turn`` through ``conversation.send`` without its keys, pressing them on the
    phone line before or after; after, wait again until the agent is done (``settle``).

    Keys with no phone line (a job context of the caller's own) are not pressed: the turn's
    ``dtmf`` check then errors, saying the adapter pressed none.
    """
    keys = turn.turn.dtmf
    assert isinstance(keys, DtmfInput)
    bare = dataclasses.replace(turn, turn=dataclasses.replace(turn.turn, dtmf=None))
    room = _LINES.get(conversation.session)
    if room is None and keys_alone(turn.turn):
        raise AdapterError(
            f"turn {turn.index + 1}: a turn of keys alone needs the in-process phone line, and "
            "this session runs in a job context of its own, where the keys cannot be pressed; "
            "start the session without one, or give the turn words in 'user:'"
        )
    if room is None:
        return await conversation.send(bare, stage, settle=settle)  # type: ignore[no-any-return]
    speed = float(conversation.speed or 0.0)
    if keys_alone(turn.turn):
        return await _keys_alone(conversation, room, keys, stage, speed, settle=settle)
    if keys.at == "before":
        stage.set(f"the caller to press {keys.keys!r}")
        await _press(room, keys, speed)
        return await conversation.send(bare, stage, settle=settle)  # type: ignore[no-any-return]
    sent = await conversation.send(bare, stage, settle=settle)
    stage.set(f"the caller to press {keys.keys!r}")
    await _press(room, keys, speed)
    if settle:
        await conversation._recorder.settle(stage.set)
    return sent  # type: ignore[no-any-return]


async def _keys_alone(
    conversation: Any, room: PhoneRoom, keys: DtmfInput, stage: Stage, speed: float, *, settle: bool
) -> SentTurn:
    """A turn of keys alone: press them, then wait for the agent to answer them (a reply
    begun, a tool, a key sent, a hang-up or a transfer), within the turn's deadline as a spoken
    turn's reply is, and until it is done (``settle``). What it did while the keys were still
    being pressed counts. Its latency is from the last key before the reply (the first key, for
    a reply begun while the keys were still being pressed)."""
    session, recorder = conversation.session, conversation._recorder
    answered = asyncio.Event()

    def on_event(ev: Any) -> None:
        if getattr(ev, "new_state", "thinking") in ("thinking", "speaking"):
            answered.set()

    events = (
        "speech_created",
        "agent_state_changed",
        "function_tools_executed",
        "tool_execution_updated",
    )
    for event in events:
        session.on(event, on_event)
    room.acted.clear()
    try:
        stage.set(f"the caller to press {keys.keys!r}")
        first_at = time.perf_counter()
        await _press(room, keys, speed)
        pressed_at = time.perf_counter()
        stage.set(f"the agent to answer the keys {keys.keys!r} (a turn of keys alone)")
        waits = [asyncio.ensure_future(e.wait()) for e in (answered, room.acted)]
        try:
            await recorder.guard(asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED))
        finally:
            for wait in waits:
                wait.cancel()
    finally:
        for event in events:
            session.off(event, on_event)
    if settle:
        await recorder.settle(stage.set)
    return SentTurn([first_at, pressed_at], None, {"input": "keys"})


async def _press(room: PhoneRoom, keys: DtmfInput, speed: float) -> None:
    for index, key in enumerate(keys.keys):
        if index:
            # A phone's pace between keys, at the run's speed (as fast as it goes at 0).
            await asyncio.sleep(keys.interval_ms / 1000 / speed if speed > 0 else 0)
        room.press(key)
