"""The checks of a call with a far end (``far_end: expect:``): the message left on a voicemail
box, the IVR node reached, and whether the agent hung up.

Each reads the finished run: the far end's turns are in ``run.turns`` in the order the far end
played them, so the IVR walk is played back from the keys each turn's adapter saw the agent
send, the same walk the far end made during the call. What an adapter could not observe (keys
sent, hang-ups) makes a check error, never pass or fail.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import EvalResult, RunResult, TurnResult
from ..models._far_end import FarEnd, VoicemailExpect, walk_ivr
from ._base import located, unobserved

__all__ = ["FarEndHungUpCheck", "IvrReachedCheck", "VoicemailCheck"]


@dataclass
class VoicemailCheck:
    """Passes when the agent left its message on a voicemail box as it must: nothing said
    before the beep (not before the greeting, not in reply to it), then a message after the
    beep containing every phrase of ``says``.

    Args:
        expect: What the message must be.
        name: Display name in results.
    """

    expect: VoicemailExpect
    name: str = "far_end.expect.voicemail"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """The verdict on the whole call, naming the key it checks."""
        return located(self.check(run), self)

    def check(self, run: RunResult) -> EvalResult:
        """Read the greeting turn and the beep turn of ``run``."""
        if len(run.turns) < 2:
            if run.turns and run.turns[-1].call_ended:
                return EvalResult(
                    False,
                    "the agent hung up during the greeting, before the beep; it left no message",
                    name=self.name,
                )
            return unobserved(
                self.name,
                f"the call ended after {len(run.turns)} of the voicemail's 2 turns (greeting, "
                "beep), so no message was left to check",
            )
        before = run.greeting.text if run.greeting is not None else ""
        over, message = run.turns[0].reply.strip(), run.turns[1].reply.strip()
        if self.expect.starts_after_beep:
            if before.strip():
                return EvalResult(
                    False,
                    f"the agent spoke before the voicemail's greeting was over ({before!r}), "
                    "so its message starts before the beep",
                    name=self.name,
                )
            overlap, spoken = _over_the_far_end(run.turns[0])
            if over or overlap:
                return EvalResult(
                    False,
                    "the agent talked over the voicemail's greeting, before the beep: "
                    f"{over or spoken!r}{overlap}",
                    name=self.name,
                )
            if not message:
                return EvalResult(False, "the agent left no message after the beep", name=self.name)
        left = " ".join(part for part in (before, over, message) if part)
        missing = [p for p in self.expect.says if p.casefold() not in left.casefold()]
        if missing:
            return EvalResult(
                False,
                f"the message does not say {', '.join(repr(m) for m in missing)}: {message!r}",
                name=self.name,
            )
        return EvalResult(
            True, f"the agent left its message after the beep: {message!r}", name=self.name
        )


def _over_the_far_end(turn: TurnResult) -> tuple[str, str]:
    """Where, on a voice turn's timeline, the agent's audio out overlapped the far end's audio
    streamed in that turn (the voicemail's greeting heard as audio): the span of agent speech
    that started before the greeting's audio ended, as a phrase, and the text it played;
    ("", "") when none did, or the turn has no timeline (a text adapter, where any reply to
    the greeting is already talking over it)."""
    timeline = turn.timeline
    if timeline is None:
        return "", ""
    streamed = [e.t_end if e.t_end is not None else e.t_start for e in timeline.of("stream")]
    if not streamed:
        return "", ""
    greeting_end = max(streamed)
    for speech in timeline.of("agent_speech"):
        if speech.t_start < greeting_end:
            return (
                f" (its audio from {speech.t_start:.2f} s overlapped the greeting's audio, "
                f"which played until {greeting_end:.2f} s)",
                str(speech.detail.get("text", "")),
            )
    return "", ""


@dataclass
class IvrReachedCheck:
    """Passes when the agent's keys took the IVR call to ``node``.

    Args:
        far_end: The IVR.
        node: The node to reach.
        name: Display name in results.
    """

    far_end: FarEnd
    node: str
    name: str = "far_end.expect.reached"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """The verdict on the whole call, naming the key it checks."""
        return located(self.check(run), self)

    def check(self, run: RunResult) -> EvalResult:
        """Play the IVR back from the keys each turn's agent sent."""
        sent = [turn.dtmf_sent for turn in run.turns]
        if any(keys is None for keys in sent):
            return unobserved(self.name, "this adapter does not report the keys the agent sends")
        walk = walk_ivr(self.far_end, [keys for keys in sent if keys is not None])
        path = " -> ".join(walk.nodes) or "nowhere"
        wrong = (
            f"; keys the menus did not take: {''.join(walk.wrong_keys)!r}"
            if walk.wrong_keys
            else ""
        )
        if walk.node != self.node:
            return EvalResult(
                False,
                f"the call reached {walk.node!r}, not {self.node!r} (path: {path}){wrong}",
                name=self.name,
            )
        return EvalResult(True, f"the call reached {self.node!r} (path: {path})", name=self.name)


@dataclass
class FarEndHungUpCheck:
    """Passes when the agent hung up by the end of the call (``ended``), or never did.

    Args:
        ended: Whether the agent must have ended the call.
        name: Display name in results.
    """

    ended: bool
    name: str = "far_end.expect.call_ended"

    async def evaluate(self, run: RunResult) -> EvalResult:
        """The verdict on the whole call, naming the key it checks."""
        return located(self.check(run), self)

    def check(self, run: RunResult) -> EvalResult:
        """Look at each turn's hang-up, as the adapter saw it."""
        seen = [turn.call_ended for turn in run.turns]
        if not seen or any(ended is None for ended in seen):
            return unobserved(self.name, "this adapter does not report hang-ups")
        hung_up = next((i for i, ended in enumerate(seen) if ended), None)
        if self.ended and hung_up is None:
            return EvalResult(False, "the agent never hung up", name=self.name)
        if not self.ended and hung_up is not None:
            return EvalResult(False, f"the agent hung up in turn {hung_up + 1}", name=self.name)
        said = f"hung up in turn {hung_up + 1}" if hung_up is not None else "stayed on the line"
        return EvalResult(True, f"the agent {said}", name=self.name)
