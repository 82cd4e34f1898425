"""An outbound agent's dial in process: the fake job's ``ctx.api.sip.create_sip_participant``
answered from the transcript's ``far_end:`` (``phone: {direction: outbound}``).

A LiveKit outbound agent places its call as LiveKit's telephony docs have it place one:
``await ctx.api.sip.create_sip_participant(api.CreateSIPParticipantRequest(...,
wait_until_answered=True))``, and handles the call failing in an ``except api.TwirpError``
branch. In process there is no SIP service: `dial` answers the request as the far end would.
A far end that picks up (``human``, ``voicemail``, ``ivr``, ``hold_music``; or no
``far_end:``) joins the room as a SIP participant with the attributes LiveKit's SIP service
sets on an outbound call (``sip.callStatus: active``, the number dialled in
``sip.phoneNumber``); ``busy`` and ``no_answer`` raise what LiveKit raises over real SIP, as
the SIP lab measures (tests/sip/test_sip_call.py): a busy line (486 Busy Here) a
``SipCallError`` (``resource_exhausted``, HTTP 429) with ``sip_status_code`` and
``sip_status`` in its metadata; a line that rings out (the ringing timeout) a ``ServerError``
(``canceled``, HTTP 408, "sip request timed out") with no SIP status. Every dial is recorded on
the room (``sip_dials`` in the turn's metadata): the number and the outcome.

A request without ``wait_until_answered=True`` is refused (`WAIT_REFUSAL`, an ERROR): over
real SIP it returns once dialing starts, and the call's outcome reaches the agent another
way, which the in-process dial does not model.
"""

from __future__ import annotations

import base64
from typing import Any, Protocol

from ....errors import AdapterError
from ....models._far_end import FarEnd

__all__ = ["WAIT_REFUSAL", "dial", "failed_dial"]

WAIT_REFUSAL = (
    "the agent dialled {number} without wait_until_answered=True: over real SIP "
    "create_sip_participant then returns once dialing starts and the call's outcome reaches "
    "the agent later, which the in-process dial does not model; in-process dialing supports "
    "CreateSIPParticipantRequest(..., wait_until_answered=True) (as LiveKit's outbound-call "
    "docs dial)"
)
"""Why a dial without ``wait_until_answered`` cannot be evaluated in process."""

_BUSY = (486, "Busy Here")
"""What the lab's busy phone answers, and what LiveKit's SIP service reports of it."""
_RESOURCE_EXHAUSTED = 8
"""google.rpc.Code.RESOURCE_EXHAUSTED: the code LiveKit's SIP service gives a refused call."""


class DialingRoom(Protocol):
    """The in-process phone call's room (`_keypad.PhoneRoom`), as a dial uses it."""

    name: str
    dials: list[dict[str, Any]]
    dial_refused: str | None

    def answer(
        self, *, number: str, identity: str, trunk_number: str | None, trunk_id: str
    ) -> Any: ...


def failed_dial(room: DialingRoom) -> dict[str, Any] | None:
    """The agent's last dial when it was not answered (the line never connected), else
    None."""
    if room.dials and room.dials[-1]["outcome"] != "answered":
        return room.dials[-1]
    return None


async def dial(room: DialingRoom, far_end: FarEnd | None, request: Any) -> Any:
    """Answer ``request`` (an ``api.CreateSIPParticipantRequest``) as ``far_end`` would:
    the callee joins ``room`` and its ``SIPParticipantInfo`` is returned, or the call fails
    with what LiveKit raises."""
    from livekit.protocol.sip import CreateSIPParticipantRequest, SIPParticipantInfo

    if not isinstance(request, CreateSIPParticipantRequest):
        raise TypeError(
            "create_sip_participant takes an api.CreateSIPParticipantRequest, got "
            f"{type(request).__name__}"
        )
    number = request.sip_call_to
    if not request.wait_until_answered:
        room.dial_refused = WAIT_REFUSAL.format(number=number)
        raise AdapterError(room.dial_refused)
    kind = far_end.kind if far_end is not None else "human"
    if kind == "busy":
        room.dials.append({"number": number, "outcome": "busy", "sip_status_code": _BUSY[0]})
        raise _sip_call_error(*_BUSY)
    if kind == "no_answer":
        room.dials.append({"number": number, "outcome": "no_answer"})
        raise _ring_out()
    room.dials.append({"number": number, "outcome": "answered"})
    callee = room.answer(
        number=number,
        identity=request.participant_identity or f"sip_{number}",
        trunk_number=request.sip_number or None,
        trunk_id=request.sip_trunk_id,
    )
    return SIPParticipantInfo(
        participant_id=callee.sid,
        participant_identity=callee.identity,
        room_name=request.room_name or room.name,
        sip_call_id=callee.attributes["sip.callID"],
    )


def _server_error(cls: Any, code: str, message: str, status: int, metadata: dict[str, str]) -> Any:
    try:
        return cls(code, message, status=status, metadata=metadata)
    except TypeError:  # an older livekit-api: no metadata
        return cls(code, message, status=status)


def _sip_call_error(status_code: int, status: str) -> Exception:
    """What ``create_sip_participant`` raises when the far end answers ``status_code``."""
    from livekit import api

    message = f"INVITE failed: sip status: {status_code}: {status}"
    metadata = {
        "error_details": _error_details(message, status_code, status),
        "sip_status": status,
        "sip_status_code": str(status_code),
    }
    cls = getattr(api, "SipCallError", api.TwirpError)
    error: Exception = _server_error(
        cls, "resource_exhausted", f"twirp error unknown: {message}", 429, metadata
    )
    return error


def _ring_out() -> Exception:
    """What ``create_sip_participant`` raises when nobody answers within the ringing
    timeout: no SIP status, a timeout."""
    from livekit import api

    error: Exception = _server_error(
        api.TwirpError, "canceled", "twirp error unknown: sip request timed out", 408, {}
    )
    return error


def _error_details(message: str, status_code: int, status: str) -> str:
    """The ``error_details`` LiveKit's SIP service sends: a ``google.rpc.Status`` (base64)
    with the message and a ``livekit.SIPStatus`` detail."""
    from google.protobuf.any_pb2 import Any as AnyMessage
    from livekit.protocol.sip import SIPStatus

    detail = AnyMessage(
        type_url="type.googleapis.com/livekit.SIPStatus",
        value=SIPStatus(code=status_code, status=status).SerializeToString(),  # type: ignore[arg-type]
    ).SerializeToString()
    encoded_message = message.encode()
    payload = (
        bytes([0x08, _RESOURCE_EXHAUSTED])
        + bytes([0x12, len(encoded_message)])
        + encoded_message
        + bytes([0x1A, len(detail)])
        + detail
    )
    return base64.b64encode(payload).decode()


def callee_attributes(
    *, number: str, trunk_number: str, trunk_id: str, call_id: str
) -> dict[str, str]:
    """The attributes LiveKit's SIP service sets on the callee of an outbound call."""
    return {
        "sip.callID": call_id,
        "sip.callIDFull": f"{call_id}@pytest-agent-eval.invalid",
        "sip.callTag": call_id.lower(),
        "sip.callStatus": "active",
        "sip.phoneNumber": number,
        "sip.trunkPhoneNumber": trunk_number,
        "sip.trunkID": trunk_id or "ST_pytest_agent_eval",
        "sip.hostname": "pytest-agent-eval.invalid",
    }
