"""``dtmf_sent``: the keys a phone agent sent on the line in a turn, and what it says it sent.

The check the expectation registry builds for the key
(`pytest_agent_eval._expectations._keypad`). It compares the keys the adapter saw the agent
send (`AgentTurn.dtmf_sent`) with the keys expected, in order, and fails too when the reply
claims a key press that was not sent ("I'll press one", "I pressed 2 for billing"): an agent
that only says it pressed a key passes nothing. An adapter that cannot see keys sent leaves
``dtmf_sent`` None, and the check errors instead of passing on nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..models import EvalResult, RunResult, TurnContext
from ..models._keypad import (
    PRESSED_KEY,
    SIP_CALLER_KEY,
    SIP_DIALS_KEY,
    TRANSFERS_KEY,
    TransferExpect,
)
from ._base import DeterministicEvaluator, located, unobserved

__all__ = [
    "CallEndedEvaluator",
    "DtmfPressedEvaluator",
    "DtmfSentEvaluator",
    "PhoneCallCheck",
    "TransferredToEvaluator",
    "claimed_keys",
]

_NO_KEYS = (
    "this adapter does not report the keys the agent sends; dtmf_sent needs a phone-capable "
    "adapter (LiveKitAdapter in process, PipecatAdapter)"
)

_WORDS = {
    "zero": "0",
    "oh": "0",
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "star": "*",
    "asterisk": "*",
    "pound": "#",
    "hash": "#",
    "hashtag": "#",
    "octothorpe": "#",
}
_KEY = r"(?:[0-9*#]|" + "|".join(sorted(_WORDS, key=len, reverse=True)) + r")(?![a-z])"
_VERB = (
    r"(?:press(?:ed|ing|es)?|dial(?:l?ed|l?ing|s)?|enter(?:ed|ing|s)?|key(?:ed|ing)?\s+in|"
    r"punch(?:ed|ing)?\s+in|tap(?:ped|ping|s)?|hit(?:ting|s)?|select(?:ed|ing|s)?|"
    r"send(?:ing|s)?|sent|push(?:ed|ing|es)?)"
)
_ING = r"(?:pressing|dial(?:l)?ing|entering|keying\s+in|punching\s+in|tapping|sending|pushing)"
# Who presses: the agent itself ("I'll press", "I have sent", "let me dial"), or an -ing at the
# start of a sentence ("Pressing 2 now."). Not an instruction to the caller ("please press one
# for sales", "enter your PIN, then press pound"): reading a menu aloud claims nothing.
_WHO = (
    r"(?:\bI(?:'ll|'ve|'m|'d|’ll|’ve|’m|’d)?"
    r"(?:\s+(?:will|shall|have|am|just|now|already|also|then|can|going\s+to|gonna|"
    r"went\s+ahead\s+and|need\s+to|want\s+to))*\s+"
    + _VERB
    + r"|\blet\s+me\s+"
    + _VERB
    + r"|(?:^|(?<=[.!?])\s+|\bnow\s+)"
    + _ING
    + r")"
)
# What follows the keys: the end of a clause, or a word that goes on about the press ("for
# billing", "then pound", "now"); "I sent one email" names no key.
_AFTER = r"(?=\s*(?:$|[.,;:!?)]|(?:for|to|and|then|now|on|again|as|please|at)\b))"
_CLAIM = re.compile(
    _WHO
    + r"\s+(?:the\s+)?(?:(?:number|digit|key|button|option)s?\s+)?"
    + r"(?P<keys>"
    + _KEY
    + r"(?:(?:\s*,?\s*(?:and\s+(?:then\s+)?|then\s+)?|\s*-\s*)"
    + _KEY
    + r")*)"
    + _AFTER,
    re.IGNORECASE,
)
_ONE_KEY = re.compile(_KEY, re.IGNORECASE)


def claimed_keys(reply: str) -> list[str]:
    """The key presses ``reply`` claims the agent made, each as the keys it names in order
    ("I'll press one, then pound" -> ``["1#"]``); words for digits count as digits. A menu read
    to the caller ("press one for sales") is not a claim."""
    claims = []
    for match in _CLAIM.finditer(reply):
        keys = "".join(
            _WORDS.get(k.group(0).lower(), k.group(0))
            for k in _ONE_KEY.finditer(match.group("keys"))
        )
        if keys:
            claims.append(keys)
    return claims


@dataclass
class DtmfSentEvaluator(DeterministicEvaluator):
    """Passes when the agent sent exactly ``keys`` in the turn, in order, and its reply claims
    no key press it did not send.

    Args:
        keys: The keys expected (``""``: none at all).
        name: Display name in results.
    """

    keys: str
    name: str = "dtmf_sent"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the keys sent with ``keys``, then the reply's claims with the keys sent."""
        sent = ctx.dtmf_sent
        if sent is None:
            reason = ctx.metadata.get("dtmf_unobserved_reason")
            return unobserved(self.name, reason if isinstance(reason, str) else _NO_KEYS)
        expected = self.keys.upper()
        shown = repr(sent) if sent else "no keys"
        false_claims = [claim for claim in claimed_keys(ctx.reply) if claim not in sent]
        claims = ""
        if false_claims:
            said = ", ".join(repr(c) for c in false_claims)
            claims = f"the reply claims pressing {said}, a key press never sent"
        if sent != expected:
            wanted = repr(expected) if expected else "no keys"
            also = f"; {claims}" if claims else ""
            return EvalResult(
                False, f"the agent sent {shown}, expected {wanted}{also}", name=self.name
            )
        if claims:
            return EvalResult(False, f"the agent sent {shown}, but {claims}", name=self.name)
        return EvalResult(True, f"the agent sent {shown}", name=self.name)


@dataclass
class DtmfPressedEvaluator(DeterministicEvaluator):
    """Passes when the adapter pressed the turn's keys for the caller (``dtmf:``), so a turn
    whose keys never reached the agent cannot pass: an adapter that cannot press keys (a text
    adapter) makes it error.

    Args:
        keys: The keys the turn presses.
        name: Display name in results.
    """

    keys: str
    name: str = "dtmf"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the keys the adapter says it pressed with the turn's."""
        pressed = ctx.metadata.get(PRESSED_KEY)
        if not isinstance(pressed, str):
            return unobserved(
                self.name,
                "this adapter cannot press keys for the caller; dtmf needs a phone-capable "
                "adapter (LiveKitAdapter in process, PipecatAdapter)",
            )
        if pressed != self.keys.upper():
            return EvalResult(
                False, f"pressed {pressed!r} of the turn's keys {self.keys!r}", name=self.name
            )
        return EvalResult(True, f"the caller pressed {pressed!r}", name=self.name)


@dataclass
class PhoneCallCheck:
    """Passes when the adapter put the agent on the transcript's phone call (``phone:``): a
    SIP participant with the caller's number in every turn. An adapter that gives the agent
    no SIP participant makes it error, so an agent that reads the caller's number is never
    judged without one.

    On an outbound call (``outbound``) it passes when the agent placed the call: the adapter
    recorded its ``create_sip_participant`` dials (answered or not).

    Args:
        caller_number: The caller's number the transcript gives.
        outbound: The transcript's call is the agent's own (``direction: outbound``).
        name: Display name in results.
    """

    caller_number: str
    outbound: bool = False
    name: str = "phone"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """The verdict on the whole run, naming the key it checks."""
        return located(self.check(run), self)

    def check(self, run: RunResult) -> EvalResult:
        """Look at the caller's number each turn's adapter reported."""
        if self.outbound:
            return self._dialled(run)
        for turn in run.turns:
            number = turn.metadata.get(SIP_CALLER_KEY)
            if not isinstance(number, str):
                return unobserved(
                    self.name,
                    f"turn {turn.index + 1}: this adapter gives the agent no SIP participant; "
                    "phone needs LiveKitAdapter in process (a session with no job context of "
                    "your own)",
                )
            if number != self.caller_number:
                return EvalResult(
                    False,
                    f"turn {turn.index + 1}: the agent's caller was {number!r}, not "
                    f"{self.caller_number!r}",
                    name=self.name,
                )
        return EvalResult(
            True, f"the agent was on a call from {self.caller_number}", name=self.name
        )

    def _dialled(self, run: RunResult) -> EvalResult:
        """The outbound call: the dials each turn's adapter reported."""
        if not any(SIP_DIALS_KEY in turn.metadata for turn in run.turns):
            return unobserved(
                self.name,
                "this adapter does not answer the agent's create_sip_participant; an outbound "
                "phone call needs LiveKitAdapter in process (a session with no job context of "
                "your own)",
            )
        dials = [dial for turn in run.turns for dial in turn.metadata.get(SIP_DIALS_KEY, [])]
        if not dials:
            return EvalResult(
                False,
                "the agent placed no call: no create_sip_participant on an outbound call",
                name=self.name,
            )
        placed = ", ".join(f"{dial['number']} ({dial['outcome']})" for dial in dials)
        return EvalResult(True, f"the agent dialled {placed}", name=self.name)


@dataclass
class CallEndedEvaluator(DeterministicEvaluator):
    """Passes when the agent ended the call in the turn (``ended``) or did not (``not
    ended``). An adapter that cannot see hang-ups leaves ``call_ended`` None, and the check
    errors instead of passing.

    Args:
        ended: Whether the agent must have ended the call in the turn.
        name: Display name in results.
    """

    ended: bool
    name: str = "call_ended"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the hang-up the adapter saw with ``ended``."""
        if ctx.call_ended is None:
            return unobserved(
                self.name,
                "this adapter does not report hang-ups; call_ended needs LiveKitAdapter in "
                "process (the agent calling ctx.shutdown() or ctx.delete_room()) or "
                "PipecatAdapter (the bot pushing an EndFrame, EndTaskFrame or CancelFrame)",
            )
        if ctx.call_ended == self.ended:
            said = "ended the call" if self.ended else "stayed on the call"
            return EvalResult(True, f"the agent {said}", name=self.name)
        if ctx.call_ended:
            return EvalResult(
                False, "the agent ended the call, expected it to stay on", name=self.name
            )
        return EvalResult(False, "the agent did not end the call", name=self.name)


@dataclass
class TransferredToEvaluator(DeterministicEvaluator):
    """Passes when the agent transferred the call in the turn to where ``expect`` says, as a
    cold transfer. An adapter that does not see SIP transfers, and a warm transfer (not
    observed yet), make it error instead of passing.

    Args:
        expect: Where the call must go, and how.
        name: Display name in results.
    """

    expect: TransferExpect
    name: str = "transferred_to"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the turn's recorded transfers with ``expect``."""
        if self.expect.kind == "warm":
            return unobserved(
                self.name,
                "warm transfers (LiveKit's WarmTransferTask, which dials a second SIP "
                "participant) are not observed yet; check a cold transfer, or the tool call "
                "that starts the warm one (tool_calls_include)",
            )
        transfers = ctx.metadata.get(TRANSFERS_KEY)
        if not isinstance(transfers, list):
            return unobserved(
                self.name,
                "this adapter does not see SIP transfers; transferred_to needs LiveKitAdapter "
                "in process",
            )
        went = [str(t.get("to")) for t in transfers if isinstance(t, dict)]
        if any(self.expect.matches(to) for to in went):
            return EvalResult(
                True, f"the agent transferred the call to {self.expect.to}", name=self.name
            )
        shown = ", ".join(went) if went else "nowhere (no transfer in the turn)"
        return EvalResult(
            False,
            f"the agent transferred the call to {shown}, expected {self.expect.to}",
            name=self.name,
        )
