"""The caller's keypad in a transcript: `DtmfInput`, the keys a turn presses (``dtmf:``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "HANG_UP_KEY",
    "IN_BAND_KEY",
    "KEYPAD_KEYS",
    "PRESSED_KEY",
    "SIP_CALLER_KEY",
    "SIP_DIALS_KEY",
    "TRANSFERS_KEY",
    "DtmfInput",
    "PhoneCall",
    "TransferExpect",
    "keypad_problem",
    "keys_alone",
    "phone_number_problem",
]

KEYPAD_KEYS = "0123456789*#ABCD"
"""The 16 keys of a phone's keypad (DTMF, ITU-T Q.23): digits, star, pound and A-D."""

PRESSED_KEY = "dtmf_pressed"
"""The `AgentTurn.metadata` key where an adapter says which keys it pressed for the caller."""

SIP_CALLER_KEY = "sip_caller"
"""The `AgentTurn.metadata` key where an adapter says which caller's number the agent's SIP
participant had (a transcript's ``phone: caller_number``)."""

SIP_DIALS_KEY = "sip_dials"
"""The `AgentTurn.metadata` key where an adapter that answers an outbound agent's
``create_sip_participant`` lists the turn's dials: ``{number, outcome}`` each (``outcome``:
``answered``, ``busy`` or ``no_answer``; with ``sip_status_code`` when the far end sent one)."""

HANG_UP_KEY = "hang_up"
"""The `AgentTurn.metadata` key where an adapter that saw the agent end the call in a turn
(``call_ended``) says how it did (``ctx.shutdown('...')``, ``EndTaskFrame``)."""

TRANSFERS_KEY = "sip_transfers"
"""The `AgentTurn.metadata` key where an adapter that sees SIP transfers lists the turn's:
``{to, participant, play_dialtone}`` each (``[]``: none)."""

IN_BAND_KEY = "dtmf_in_band"
"""The `AgentTurn.metadata` key where an adapter that captures the agent's reply audio says
which keys it heard as tones in it (counted in ``dtmf_sent`` too)."""


def keypad_problem(digits: Any) -> str | None:
    """What is wrong with ``digits`` as keys to press, with the fix; None when nothing is."""
    if not isinstance(digits, str):
        return (
            f"digits must be a string of keys, got {type(digits).__name__} {digits!r}; quote "
            'it in YAML (dtmf: "1234#"), or a number loses its leading zeros and its # starts a '
            "comment"
        )
    if not digits:
        return "digits is empty; give the keys to press, e.g. '1234#'"
    for index, char in enumerate(digits):
        if char.upper() not in KEYPAD_KEYS:
            return (
                f"{digits!r}: {char!r} (position {index + 1}) is not a key; keys are 0-9, *, # "
                "and A-D"
            )
    return None


def keys_alone(turn: Any) -> bool:
    """Whether ``turn`` (a `Turn`) is a turn of keys alone: ``dtmf:`` and no words
    (``user:`` empty), so the agent's reply answers the keys."""
    return not turn.user and turn.dtmf is not None


def phone_number_problem(number: Any, field_name: str) -> str | None:
    """What is wrong with ``number`` as a phone number (E.164: ``+`` and up to 15 digits),
    with the fix; None when nothing is."""
    if not isinstance(number, str):
        return (
            f"{field_name} must be a quoted phone number such as '+15550100', got "
            f"{type(number).__name__} {number!r}"
        )
    digits = number.removeprefix("+")
    if not (digits.isascii() and digits.isdigit() and 3 <= len(digits) <= 15):
        return (
            f"{field_name} {number!r} is not a phone number; write it as LiveKit's SIP service "
            "reports one: '+' and 3 to 15 digits, no spaces or dashes, e.g. '+15550100'"
        )
    return None


@dataclass
class PhoneCall:
    """The phone call a transcript is (its ``phone:``): who calls, and which number they
    dialled. An in-process LiveKit session gets a SIP participant with these numbers in its
    attributes (``sip.phoneNumber``, ``sip.trunkPhoneNumber``).

    Args:
        caller_number: The caller's number (E.164, ``"+15550100"``); inbound calls only.
        trunk_number: The number the caller dialled (the agent's SIP trunk); on an outbound
            call, the number the call comes from.
        direction: ``inbound`` (the default: the caller is on the line when the agent starts)
            or ``outbound``: the agent places the call itself with ``create_sip_participant``
            (``wait_until_answered``), answered as the transcript's ``far_end:`` says.

    A number that is not one is refused before anything runs (`phone_number_problem`).
    """

    caller_number: str = "+15550100"
    trunk_number: str = "+15550199"
    direction: Literal["inbound", "outbound"] = "inbound"


@dataclass
class DtmfInput:
    """Keys the caller presses in a turn (a turn's ``dtmf:``), delivered as the framework
    receives them from a phone line: LiveKit's ``sip_dtmf_received`` room event, Pipecat's
    ``InputDTMFFrame``; with ``in_audio``, also as tones mixed into the turn's audio.

    Args:
        digits: The keys, in order: ``0``-``9``, ``*``, ``#``, ``A``-``D``.
        interval_ms: Milliseconds from one key to the next.
        at: ``"before"`` or ``"after"`` the turn's speech (or text).
        in_audio: Also play the keys as tones (ITU-T Q.23 pairs) in the turn's audio, for an
            agent that listens for them in band. Needs an audio turn.
    """

    digits: str
    interval_ms: float = 100.0
    at: Literal["before", "after"] = "before"
    in_audio: bool = False

    @property
    def keys(self) -> str:
        """The digits as the keypad names them (``a`` is ``A``)."""
        return self.digits.upper()

    @classmethod
    def coerce(cls, value: Any) -> Any:
        """A YAML ``dtmf:`` value in its long form: ``"4521#"`` is ``{"digits": "4521#"}``; a
        mapping, or anything else (for the schema to refuse), is returned as it is."""
        if isinstance(value, str | int) and not isinstance(value, bool):
            return {"digits": value}
        if isinstance(value, Mapping):
            return dict(value)
        return value


@dataclass
class TransferExpect:
    """A transfer the agent must make in a turn (``transferred_to:``).

    Args:
        to: Where the call goes: a SIP URI or ``tel:`` URI (``"tel:+15550111"``), or a bare
            number, which matches its ``tel:`` URI.
        kind: ``cold`` (the caller is handed over: LiveKit's ``transfer_sip_participant``) or
            ``warm`` (the agent briefs the person first: LiveKit's ``WarmTransferTask``, not
            observed yet, so such a check errors).
    """

    to: str
    kind: Literal["cold", "warm"] = "cold"

    @classmethod
    def coerce(cls, value: Any) -> Any:
        """A YAML ``transferred_to:`` value in its long form: ``"tel:+1..."`` is ``{"to": ...}``."""
        if isinstance(value, str):
            return {"to": value}
        if isinstance(value, Mapping):
            return dict(value)
        return value

    def matches(self, to: str) -> bool:
        """Whether a transfer to ``to`` is the one expected."""
        return to == self.to or to == f"tel:{self.to}" or f"tel:{to}" == self.to
