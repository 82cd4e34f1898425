"""``interrupt`` (a turn key): the turn speaks over the agent's reply, and the agent must stop.

The turn's own ``audio`` is the interrupting utterance. It starts ``after_ms`` into the audio
of the agent's reply to the turn before (or at its ``at_word``-th word), and the agent's
audio must stop within ``stop_within_ms`` of the start of that speech. The turn's ``expect``
checks what the agent does next, as for any turn.

It cannot pass for the wrong reason. The adapter records a `BargeIn` on the turn; when the
agent was not speaking as the interruption started, the interrupting speech is shorter than
the session's minimum interruption duration, or the session has no TTS to speak with, the
barge-in was not tested and the check errors, saying which. An adapter that does not perform
barge-in (a text adapter) records nothing, and the check errors too.
"""

from __future__ import annotations

from typing import Any

from ..evaluators._barge_in import InterruptEvaluator
from ..models import Transcript, Turn
from ._base import Expectation, ExpectKey, Problem, keyed

__all__ = ["EXPECTATION", "INTERRUPT_SCHEMA", "InterruptEvaluator", "interrupt_problems"]

INTERRUPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["stop_within_ms"],
    "properties": {
        "after_ms": {
            "type": "number",
            "minimum": 0,
            "description": "Start the interruption this many milliseconds after the agent's "
            "reply to the turn before started playing.",
        },
        "at_word": {
            "type": "integer",
            "minimum": 1,
            "description": "Start it at this word (1-based) of that reply (timed by spreading "
            "the reply's words over its speech audio).",
        },
        "stop_within_ms": {
            "type": "number",
            "exclusiveMinimum": 0,
            "description": "The agent's audio must stop within this many milliseconds of the "
            "start of the interrupting speech (this includes the session's minimum "
            "interruption duration).",
        },
    },
}
"""``#/$defs/interrupt``."""


def interrupt_problems(transcript: Transcript) -> list[tuple[int, str]]:
    """Turns whose ``interrupt`` cannot work, as (turn index, what to fix)."""
    out: list[tuple[int, str]] = []
    for index, turn in enumerate(transcript.turns):
        if turn.interrupt is None:
            continue
        if transcript.far_end is not None:
            out.append(
                (
                    index,
                    "'interrupt:' is not supported with a far end (far_end:) yet: the far end "
                    "plays its turns one at a time, so the turn never reaches the reply it "
                    "should speak over; remove 'interrupt:' from this turn",
                )
            )
        elif index == 0:
            out.append(
                (
                    index,
                    "the first turn cannot interrupt: there is no reply before it to speak "
                    "over (interrupting the greeting is not supported)",
                )
            )
        elif turn.audio is None:
            out.append(
                (
                    index,
                    "an interrupting turn needs 'audio:', the utterance that speaks over the agent",
                )
            )
        elif transcript.turns[index - 1].interrupt is not None:
            out.append(
                (
                    index,
                    "the turn before also interrupts; two interrupting turns in a row are not "
                    "supported (put an ordinary turn between them)",
                )
            )
    return out


def _turn_checks(turn: Turn) -> list[Any]:
    if turn.interrupt is None:
        return []
    return [keyed(InterruptEvaluator(turn.interrupt.stop_within_ms), "interrupt", scope="turn")]


def _check_interrupt(value: Any) -> list[Problem]:
    if isinstance(value, dict) and ("after_ms" in value) == ("at_word" in value):
        return [((), "give exactly one of after_ms (a delay) and at_word (a word of the reply)")]
    return []


EXPECTATION = Expectation(
    name="barge_in",
    keys=(),
    turn_keys=(
        ExpectKey(
            name="interrupt",
            schema={"$ref": "#/$defs/interrupt"},
            description="Turn level, next to audio: this turn's audio speaks over the agent's "
            "reply to the turn before, after_ms into it (or at_word), and the agent's audio "
            "stops within stop_within_ms of the start of that speech; expect checks what it "
            "does next. Errors when the agent was not speaking, the speech is shorter than "
            "the session's minimum interruption duration, or the adapter cannot barge in.",
            example={"after_ms": 1000, "stop_within_ms": 1500},
            check=_check_interrupt,
        ),
    ),
    turn_checks=_turn_checks,
    defs={"interrupt": INTERRUPT_SCHEMA},
)
