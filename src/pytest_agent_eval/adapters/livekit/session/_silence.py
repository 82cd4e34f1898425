"""A LiveKit agent that heard the caller and began no reply: a FAIL, as on Pipecat and in a room.

LiveKit lets an agent end a turn without starting a reply (``StopResponse`` from
``on_user_turn_completed``), and the session then goes back to listening: the turn is over at
once, with an empty reply. On Pipecat and in room mode the same agent is waited for until the
turn's timeout and FAILs ("still waiting for the bot to respond"); in process it read as a turn
with an empty reply, which passed when the turn had no reply check. One behaviour, one verdict:
a turn the caller spoke in, in which the agent began no speech, called no tool, handed off to
no one and did not hang up, fails here too, naming what the agent heard and which agent it was.
A reply that was begun and said nothing (a model that answered with no text, as an outbound
agent does to a voicemail greeting before the beep) is a reply, as on Pipecat, where the
model's response starting ends the wait.
"""

from __future__ import annotations

from ....errors import AgentFailedError
from ....models import AgentReply
from ....models._keypad import SIP_DIALS_KEY, keys_alone
from ...base import TurnInput

__all__ = ["refuse_silence"]


def refuse_silence(
    turn: TurnInput, reply: AgentReply, *, began_reply: bool, label: str, agent: str
) -> None:
    """Raise when ``reply`` shows the agent did nothing in answer to ``turn``.

    Left alone: a turn in which a reply was begun (even one that said nothing), a turn that
    presses keys with its words (an agent collecting digits may rightly wait for more of them
    without a word; a turn of keys alone is judged as a spoken turn is), a turn of a far end
    the agent's outbound call never reached (a busy line, one nobody answered), a turn that
    interrupts the agent (its barge-in check says what the agent did), and a turn during which
    the agent was still saying an earlier turn's
    answer (busy, not silent: a reply that could not be interrupted, a tool's late answer).

    Raises:
        AgentFailedError: The agent said nothing and did nothing (a FAIL of the agent).
    """
    alone = keys_alone(turn.turn)  # keys and no words: judged as a spoken turn is
    if began_reply or (turn.turn.dtmf is not None and not alone) or turn.turn.interrupt:
        return
    if turn.far_end:  # quiet through a far end's greeting or ring: the call's checks judge it
        return
    if reply.metadata.get("livekit", {}).get("late_speech"):
        return
    if reply.reply.strip() or reply.agent_speech or reply.tool_calls or reply.handoffs:
        return
    if reply.metadata.get("livekit", {}).get("reply_audio_s"):
        return  # it spoke without words (a chime, a reply with no transcript)
    if reply.call_ended or reply.dtmf_sent:
        return
    dials = reply.metadata.get(SIP_DIALS_KEY) or [{}]
    if dials[-1].get("outcome", "answered") != "answered":
        return  # the agent's call was not answered: the far end's turn reached no one
    if alone:
        what = f"was pressed the keys {turn.turn.dtmf.keys!r}"  # type: ignore[union-attr]
    elif turn.audio is not None:
        heard = (reply.heard or "").strip()
        what = f"heard {heard!r}" if heard else "was sent the audio"
    else:
        what = f"was sent {turn.text!r}"
    raise AgentFailedError(
        f"{label}: the agent ({agent}) said nothing: it {what} and went back to listening "
        "without beginning a reply, calling a tool or handing off (an on_user_turn_completed "
        "that raised StopResponse). An agent that ignores the caller fails the turn, as on "
        "Pipecat and in room mode."
    )
