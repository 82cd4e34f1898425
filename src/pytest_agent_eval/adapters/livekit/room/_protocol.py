"""The wire protocol between `publish_eval_events` (in the agent's process) and the room
adapter's caller: the RPC the caller drives the helper with, and the events the helper sends.

The test's caller drives the helper with LiveKit RPC (method `EVAL_RPC_METHOD`, JSON in and out):

==========  =====================================================  ===========================
``op``      request fields                                         answer
==========  =====================================================  ===========================
``hello``                                                          ``v``, ``vad`` (the VAD's
                                                                   settings, or null),
                                                                   ``vad_problem``,
                                                                   ``realtime`` (see below)
``ping``                                                           ``{}`` (the caller checks
                                                                   the agent is alive)
``begin``   ``turn``; ``input`` (``audio``/``text``); ``fixture``  ``{}``
            (``first_start_s``, ``last_end_s``: where the fixture's
            speech starts, and where the VAD ends its last segment)
``settle``  ``turn`` (null: the greeting); ``phrase``, ``phrases``  ``{}``; a ``capture`` event
            (a realtime agent's audio turn: phrase k of n)         follows once the agent is
                                                                   done (a ``phrase`` event
                                                                   for phrase k < n)
            ``hold``: true: a ``phrase`` event with phrase 0
            once done, the turn kept open (keys pressed
            after the speech, over SIP)
==========  =====================================================  ===========================

For an agent on a realtime (speech-to-speech) model with no STT, ``hello``'s ``realtime`` says
``model`` (its class), ``turn_detection`` (``server``: the model's; ``session``: the session's
VAD), ``vad`` (the settings of the VAD that takes the turns: the scripted model's own, or the
session's; null for a provider's server, which the caller approximates with Silero's
defaults), ``vad_problem`` and ``hearing`` (``provenance``, ``none`` or the STT class of a
`ScriptedRealtimeModel`; ``model`` for any other model, which hears by itself); it is null for
any other agent. ``begin`` then carries ``realtime``: ``transcripts`` (what a scripted model
hearing through the fixture's provenance is to hear of each phrase: the caller proved them from
the fixture's provenance; null otherwise) and ``phrases``. The caller says such a fixture
phrase by phrase, as in process: each once the agent answered the one before.

and sends events, one JSON object per text stream on `EVAL_EVENTS_TOPIC`, in order. Every
object has ``v`` (`EVAL_EVENTS_VERSION`), ``seq`` (0, 1, 2, ...), ``t`` (the agent's
``time.time()``) and ``type``:

================  ===========================================================================
``hello``         the helper is installed (sent once, first)
``stage``         ``text``: what the agent is waiting for before the turn is done
``capture``       one turn's record (see `EvalEventPublisher`), or ``error`` when it failed
``phrase``        ``turn``, ``phrase``: a realtime agent answered that phrase of the fixture
``agent_state``   ``new``, ``agent`` (the active agent's class name)
``user_state``    ``new``: the user is ``speaking``, ``listening`` or ``away``
``error``         ``source``, ``error``, ``recoverable``
``close``         ``reason``, ``error``: the session closed; ``crash``: how the agent crashed
                  first, if it did (as in a ``capture``)
================  ===========================================================================

Events go only to participants carrying the `EVAL_LISTENER_ATTRIBUTE` attribute (the adapter's
caller does, in its token), and the helper records nothing when none is in the room as it
connects: a real user's app never receives tool outputs, so the line can stay in a production
entrypoint.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_EVENTS_VERSION",
    "EVAL_LISTENER_ATTRIBUTE",
    "EVAL_RPC_METHOD",
    "parse_eval_event",
]

EVAL_EVENTS_TOPIC = "agent-eval.events"
"""The text-stream topic the helper sends on and the adapter reads."""

EVAL_RPC_METHOD = "agent-eval.turn"
"""The RPC method the helper answers and the adapter calls."""

EVAL_LISTENER_ATTRIBUTE = "agent-eval.listen"
"""A participant attribute; participants that carry it (``"1"``) receive the events."""

EVAL_EVENTS_VERSION = 4
"""Version 1 (pytest-agent-eval before the helper recorded turns) sent raw session events;
version 2 sent no turn timelines; version 3 knew no ``hold`` on ``settle`` (a helper of that
version would answer a phone line's keys turn with the record from before its keys)."""


def parse_eval_event(text: str) -> dict[str, Any] | None:
    """One event sent by the helper, or None for anything else (not JSON, not an event).

    An event of another version comes back with its ``v``: the adapter says which helper the
    agent runs instead of ignoring it.
    """
    try:
        event = json.loads(text)
    except ValueError:
        return None
    if not isinstance(event, dict) or not isinstance(event.get("v"), int):
        return None
    if not isinstance(event.get("type"), str) or not isinstance(event.get("seq"), int):
        return None
    return event
