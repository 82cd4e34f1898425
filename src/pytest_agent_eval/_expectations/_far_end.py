"""``far_end`` (top level): who answers an outbound agent's call, and the checks of the call.

The far end drives the conversation instead of per-turn user text (`pytest_agent_eval._far_end`
plays it); its ``expect:`` block holds the checks of the whole call: the voicemail message
(``voicemail``), the IVR node reached (``reached``), a hang-up (``call_ended``). What is wrong
with a far end (keys of another kind, a menu key that is not a key or leads nowhere, a menu
with no way out) is found once, by `far_end_problems`, for the loader and the runner.
"""

from __future__ import annotations

from typing import Any

from ..evaluators._far_end import FarEndHungUpCheck, IvrReachedCheck, VoicemailCheck
from ..models import Transcript
from ..models._far_end import FAR_END_KINDS, far_end_problems
from ._base import Expectation, ExpectKey, Problem, keyed

__all__ = ["EXPECTATION", "FAR_END_SCHEMA"]

_NODE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["prompt"],
    "properties": {
        "prompt": {"type": "string", "minLength": 1, "description": "What the menu says."},
        "keys": {
            "type": "object",
            "additionalProperties": {"type": "string"},
            "description": "Each key the menu takes (quoted: '1', '#') and the node it leads "
            "to; none: the tree ends here (the call is put through) and the IVR hangs up.",
        },
    },
}

FAR_END_SCHEMA: dict[str, Any] = {
    "anyOf": [
        {"enum": list(FAR_END_KINDS), "description": "A far end with its defaults."},
        {
            "type": "object",
            "additionalProperties": False,
            "required": ["kind"],
            "properties": {
                "kind": {"enum": list(FAR_END_KINDS), "description": "Who answers."},
                "hello": {
                    "type": "string",
                    "description": "human, hold_music: what the person who picks up says "
                    "first ('Hello?').",
                },
                "greeting": {
                    "type": "string",
                    "description": "voicemail: the greeting before the beep; hold_music: the "
                    "queue's announcement.",
                },
                "menu": {
                    "type": "object",
                    "minProperties": 1,
                    "additionalProperties": _NODE,
                    "description": "ivr: the nodes of the phone tree, by name.",
                },
                "start": {"type": "string", "description": "ivr: the first node's name."},
                "retries": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 10,
                    "description": "ivr: menus said again (wrong key, no key) before it hangs "
                    "up (2).",
                },
                "holds": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "description": "hold_music: turns of music before a person picks up (1).",
                },
                "as": {
                    "enum": ["text", "audio"],
                    "description": "How the far end reaches the agent: text (the default: its "
                    "words, and the line's sounds as words such as '(beep)'), or audio (its "
                    "words spoken by the offline TTS, the beep, ringback, busy tone and hold "
                    "music as tones; voice adapters only).",
                },
                "expect": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "voicemail": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "starts_after_beep": {
                                    "type": "boolean",
                                    "description": "Nothing before the beep, a message after "
                                    "it (true by default).",
                                },
                                "says": {
                                    "type": "array",
                                    "items": {"type": "string", "minLength": 1},
                                    "description": "Phrases the message must contain.",
                                },
                            },
                        },
                        "reached": {
                            "type": "string",
                            "description": "ivr: the node the agent's keys must reach.",
                        },
                        "call_ended": {
                            "type": "boolean",
                            "description": "The agent hung up by the end of the call.",
                        },
                    },
                },
            },
        },
    ]
}
"""``#/$defs/far_end``."""


def _check(value: Any) -> list[Problem]:
    return far_end_problems(value)


def _call_checks(transcript: Transcript) -> list[Any]:
    far_end = transcript.far_end
    if far_end is None:
        return []
    expect = far_end.expect
    checks: list[Any] = []
    if expect.voicemail is not None:
        checks.append(VoicemailCheck(expect.voicemail))
    if expect.reached is not None:
        checks.append(IvrReachedCheck(far_end, expect.reached))
    if expect.call_ended is not None:
        checks.append(FarEndHungUpCheck(expect.call_ended))
    return [keyed(check, "far_end", scope="transcript") for check in checks]


EXPECTATION = Expectation(
    name="far_end",
    keys=(),
    transcript_keys=(
        ExpectKey(
            name="far_end",
            schema={"$ref": "#/$defs/far_end"},
            description="Top level: who answers an outbound agent's call, driving the "
            "conversation: human (hello, then the turns), voicemail (greeting, beep), ivr "
            "(a menu that moves on the keys the agent sends), no_answer, busy, hold_music; "
            "with expect: {voicemail: {starts_after_beep, says}, reached, call_ended}.",
            example={"kind": "human", "hello": "Hello?", "expect": {"call_ended": True}},
            check=_check,
        ),
    ),
    call_checks=_call_checks,
    defs={"far_end": FAR_END_SCHEMA},
)
