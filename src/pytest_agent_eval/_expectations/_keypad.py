"""``dtmf`` (a turn key) and ``dtmf_sent``: the caller's keypad, and the keys the agent sends.

``dtmf`` is an input: the keys the caller presses in the turn, before or after its speech,
delivered as the framework receives them from a phone line (LiveKit's ``sip_dtmf_received``
room event, Pipecat's ``InputDTMFFrame``), and with ``in_audio`` as tones in the turn's audio
too. Its check passes once the adapter says it pressed them, so keys a text adapter cannot
press make the turn error instead of passing without them. ``dtmf_sent`` checks the keys the agent sent in the turn
(LiveKit's ``publish_dtmf``, Pipecat's ``OutputDTMFFrame``), in order, and fails when the
reply claims a key press that was not sent. An adapter that cannot see keys sent makes it
error, never pass. ``phone`` (top level) makes the conversation a phone call: the caller's
number and the number dialled, given to an in-process LiveKit agent as a SIP participant;
its check errors with adapters that give the agent none.
"""

from __future__ import annotations

from typing import Any

from ..errors import TranscriptError
from ..evaluators._keypad import (
    CallEndedEvaluator,
    DtmfPressedEvaluator,
    DtmfSentEvaluator,
    PhoneCallCheck,
    TransferredToEvaluator,
)
from ..models import DtmfInput, Expect, Transcript, Turn
from ..models._keypad import keypad_problem, keys_alone, phone_number_problem
from ._base import Expectation, ExpectKey, Problem, keyed

__all__ = [
    "DTMF_SCHEMA",
    "EXPECTATION",
    "PHONE_SCHEMA",
    "DtmfPressedEvaluator",
    "DtmfSentEvaluator",
    "dtmf_problems",
    "refuse_keys_alone",
]

DTMF_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {
            "type": "string",
            "description": 'The keys, in order ("4521#"): 0-9, *, # and A-D. Quote it.',
        },
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["digits"],
            "properties": {
                "digits": {
                    "type": "string",
                    "description": "The keys, in order: 0-9, *, # and A-D. Quote it.",
                },
                "interval_ms": {
                    "type": "number",
                    "minimum": 0,
                    "description": "Milliseconds from one key to the next (100 by default).",
                },
                "at": {
                    "enum": ["before", "after"],
                    "description": "Press the keys before (the default) or after the turn's "
                    "speech or text.",
                },
                "in_audio": {
                    "type": "boolean",
                    "description": "Also play the keys as tones (ITU-T Q.23 pairs) in the "
                    "turn's audio, for an agent that listens in band. Needs an audio turn.",
                },
            },
        },
    ]
}
"""``#/$defs/dtmf``."""

PHONE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "caller_number": {
            "type": "string",
            "description": "The caller's number, E.164 ('+15550100', the default): the SIP "
            "participant's sip.phoneNumber and identity (sip_+15550100).",
        },
        "trunk_number": {
            "type": "string",
            "description": "The number the caller dialled, E.164 ('+15550199', the default): "
            "the SIP participant's sip.trunkPhoneNumber.",
        },
        "direction": {
            "enum": ["inbound", "outbound"],
            "description": "inbound (the default): the caller is on the line when the agent "
            "starts; outbound: the agent places the call with create_sip_participant, "
            "answered (or not: busy, no_answer) as far_end says.",
        },
    },
}
"""``#/$defs/phone``."""


def _check_phone(value: Any) -> list[Problem]:
    if not isinstance(value, dict):
        return []  # the schema says what is wrong
    found: list[Problem] = []
    for name in ("caller_number", "trunk_number"):
        if name in value:
            problem = phone_number_problem(value[name], name)
            if problem:
                found.append(((name,), problem))
    return found


def _call_checks(transcript: Transcript) -> list[Any]:
    if transcript.phone is None:
        return []
    phone = transcript.phone
    check = PhoneCallCheck(phone.caller_number, outbound=phone.direction == "outbound")
    return [keyed(check, "phone", scope="transcript")]


def _check_dtmf(value: Any) -> list[Problem]:
    digits = value.get("digits") if isinstance(value, dict) else value
    problem = keypad_problem(digits)
    return [(("digits",) if isinstance(value, dict) else (), problem)] if problem else []


def _check_sent(value: Any) -> list[Problem]:
    if value == "":
        return []
    problem = keypad_problem(value)
    return [((), problem)] if problem else []


def dtmf_problems(transcript: Transcript) -> list[tuple[int, str]]:
    """Turns whose ``dtmf`` cannot work, as (turn index, what to fix)."""
    out: list[tuple[int, str]] = []
    for index, turn in enumerate(transcript.turns):
        keys = turn.dtmf
        if isinstance(keys, DtmfInput) and keys.in_audio and turn.audio is None:
            fix = (
                "a turn of keys alone has no audio: leave in_audio out, or give the turn "
                "'user:' and 'audio:'"
                if keys_alone(turn)
                else "give it audio, or leave in_audio out"
            )
            out.append(
                (
                    index,
                    "in_audio plays the keys as tones in the turn's audio, and this turn has "
                    f"no 'audio:'; {fix} (the keys are still delivered as keypad events)",
                )
            )
        if keys_alone(turn):
            out.extend((index, problem) for problem in _keys_alone_problems(transcript, index))
    return out


def refuse_keys_alone(transcript: Transcript, adapter: Any) -> None:
    """Refuse, before anything runs, a turn of keys alone on an adapter that presses no keys
    (its ``presses_keys`` is not True): the agent would be sent no words and no keys, and its
    reply would answer nothing.

    Raises:
        TranscriptError: A turn presses keys alone and the adapter cannot press them (an
            ERROR: the agent was not evaluated as asked).
    """
    if getattr(adapter, "presses_keys", False):
        return
    for index, turn in enumerate(transcript.turns):
        if not keys_alone(turn):
            continue
        where = (
            f"{transcript.path.name}:{turn.line}: "
            if transcript.path is not None and turn.line is not None
            else ""
        )
        raise TranscriptError(
            f"{where}transcript {transcript.id!r}, turns[{index}].dtmf: this turn presses keys "
            f"alone (no 'user:'), and {type(adapter).__name__} cannot press keys for the caller; "
            "run it with a phone-capable adapter (LiveKitAdapter in process, PipecatAdapter), or "
            "give the turn words in 'user:'"
        )


def _keys_alone_problems(transcript: Transcript, index: int) -> list[str]:
    """What a turn of keys alone (``dtmf:`` and no ``user:``) has that needs words."""
    turn = transcript.turns[index]
    alone = "this turn presses keys alone (no 'user:')"
    problems = []
    if turn.audio is not None:
        problems.append(
            f"{alone} and has 'audio:', whose words 'user:' gives; give the turn its words in "
            "'user:', or drop 'audio:' for a turn of keys alone"
        )
    if turn.interrupt is not None:
        problems.append(
            f"{alone} and 'interrupt:' speaks over the agent; give the turn its words and audio, "
            "or drop 'interrupt:'"
        )
    following = transcript.turns[index + 1] if index + 1 < len(transcript.turns) else None
    if following is not None and following.interrupt is not None:
        problems.append(
            f"{alone}, and the next turn interrupts its reply: a barge-in over the reply to keys "
            "is not supported; give this turn words in 'user:', or drop the next turn's "
            "'interrupt:'"
        )
    return problems


def _turn_checks(turn: Turn) -> list[Any]:
    if not isinstance(turn.dtmf, DtmfInput):
        return []
    return [keyed(DtmfPressedEvaluator(turn.dtmf.digits), "dtmf", scope="turn")]


def _checks(expect: Expect) -> list[Any]:
    checks: list[Any] = []
    if expect.dtmf_sent is not None:
        checks.append(keyed(DtmfSentEvaluator(expect.dtmf_sent), "dtmf_sent"))
    if expect.call_ended is not None:
        checks.append(keyed(CallEndedEvaluator(expect.call_ended), "call_ended"))
    if expect.transferred_to is not None:
        checks.append(keyed(TransferredToEvaluator(expect.transferred_to), "transferred_to"))
    return checks


def _check_transfer(value: Any) -> list[Problem]:
    to = value.get("to") if isinstance(value, dict) else value
    if isinstance(to, str) and to.strip():
        return []
    at: tuple[str, ...] = ("to",) if isinstance(value, dict) else ()
    return [(at, "give where the call goes: a tel: or sip: URI, e.g. 'tel:+15550111'")]


EXPECTATION = Expectation(
    name="keypad",
    keys=(
        ExpectKey(
            name="dtmf_sent",
            schema={"type": "string"},
            description="Phone agents: the keys the agent sent on the line in this turn "
            '(0-9, *, #, A-D), in order; "" means none. Fails too when the reply claims a key '
            "press that was not sent. Errors with adapters that cannot see keys sent.",
            example="21",
            check=_check_sent,
        ),
        ExpectKey(
            name="call_ended",
            schema={"type": "boolean"},
            description="Phone agents: the agent ended the call in this turn (true) or did "
            "not (false). Errors with adapters that cannot see hang-ups.",
            example=True,
        ),
        ExpectKey(
            name="transferred_to",
            schema={
                "anyOf": [
                    {"type": "string"},
                    {
                        "type": "object",
                        "additionalProperties": False,
                        "required": ["to"],
                        "properties": {
                            "to": {"type": "string"},
                            "kind": {"enum": ["cold", "warm"]},
                        },
                    },
                ]
            },
            description="Phone agents: the agent transferred the call in this turn to this "
            "tel: or sip: URI (a bare number matches its tel: URI), or {to, kind: cold|warm}. "
            "Errors with adapters that cannot see transfers, and for warm transfers (not "
            "observed yet).",
            example={"to": "tel:+15550111", "kind": "cold"},
            check=_check_transfer,
        ),
    ),
    checks=_checks,
    turn_keys=(
        ExpectKey(
            name="dtmf",
            schema={"$ref": "#/$defs/dtmf"},
            description="Turn level: keys the caller presses on the keypad in this turn, a "
            'string ("4521#") or {digits, interval_ms, at: before|after the speech, '
            "in_audio}; delivered as the framework gets them from a phone line (LiveKit: "
            "sip_dtmf_received; Pipecat: InputDTMFFrame). Errors with adapters that cannot "
            "press keys.",
            example={"digits": "4521#", "interval_ms": 150, "at": "after"},
            check=_check_dtmf,
        ),
    ),
    turn_checks=_turn_checks,
    transcript_keys=(
        ExpectKey(
            name="phone",
            schema={"$ref": "#/$defs/phone"},
            description="Top level: the conversation is a phone call, {caller_number, "
            "trunk_number}; an in-process LiveKit agent gets a SIP participant with them "
            "(sip.phoneNumber, sip.trunkPhoneNumber, sip.callStatus: active). Errors with "
            "adapters that cannot give the agent one.",
            example={"caller_number": "+15550123", "trunk_number": "+15550199"},
            check=_check_phone,
        ),
    ),
    call_checks=_call_checks,
    defs={"dtmf": DTMF_SCHEMA, "phone": PHONE_SCHEMA},
)
