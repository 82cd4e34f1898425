"""What the turn-taking run hands an adapter's runner, and what the runner gives back: the one
contract between `pytest_agent_eval._turn_gate._run` and each framework's runner
(``adapters/livekit/_turn_taking.py``, ``adapters/pipecat/_turn_taking.py``), so both record a
stimulus the same way and the metrics never depend on which framework played it.

What both runners share lives here too: the words a stand-in STT hears in a segment of the
clip (`words_in`), the scripted agent's reply (`AGENT_REPLY`), reading a written pack
(`read_pack`), and `observation_of`, which turns what the agent did (on the clip's clock) into
the `Observation` the metrics read."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..voice._clip import AudioClip
from ._metrics import Observation
from ._stimulus import Expected, Stimulus

__all__ = [
    "AGENT_REPLY",
    "CALLER_EVENTS",
    "DEAF_SPEECH_S",
    "SAMPLE_RATE",
    "WORD_EVENTS",
    "Observe",
    "PlayedStimulus",
    "TurnTakingObserver",
    "observation_of",
    "read_pack",
    "unheard_speech",
    "words_in",
]

SAMPLE_RATE = 16000
"""The rate the runners stream the stimuli at (the pack's)."""
WORD_EVENTS = ("speech", "filler", "backchannel", "side_speech")
"""Events with words a stand-in STT hears (noise has none)."""
CALLER_EVENTS = ("speech", "filler")
"""Events that are the caller's own words (what an answer must wait for)."""
AGENT_REPLY = "Sure, I can help with that. Let me check it for you right away."
"""What the scripted agent answers every caller turn with."""


@dataclass(frozen=True, slots=True)
class PlayedStimulus:
    """A stimulus with its rendered audio (16 kHz mono) and the events of its sidecar."""

    stimulus: Stimulus
    clip: AudioClip
    events: tuple[Mapping[str, Any], ...]
    wav: Path | None = None
    """The file the audio was read from (what a report plays)."""
    seed: int = 0
    """The seed of the pack it belongs to."""


Observe = Callable[[PlayedStimulus], Awaitable[Observation]]
"""Plays one stimulus to a fresh session or pipeline of the agent and says what it did."""


@dataclass(frozen=True, slots=True)
class TurnTakingObserver:
    """An adapter's turn-taking runner, building each session or pipeline as the adapter does."""

    framework: str
    """``livekit`` or ``pipecat``."""
    clock: str
    """``virtual``: the framework's own timers run in audio time."""
    observe: Observe


def words_in(events: Sequence[Mapping[str, Any]], start_s: float, end_s: float) -> str:
    """The words of the stimulus events whose audio overlaps ``start_s`` to ``end_s`` (the
    clip's clock): what a stand-in STT answers for a segment the agent's VAD cut there, and
    nothing for a segment of noise."""
    words = [
        str(e.get("text", ""))
        for e in events
        if e["kind"] in WORD_EVENTS and e["start_s"] < end_s and e["end_s"] > start_s
    ]
    return " ".join(w for w in words if w)


DEAF_SPEECH_S = 1.0
"""Seconds of caller words (in all) any working VAD hears some of: a VAD that heard nothing of
a clip with as much is deaf (or absent), and the clip could not be observed. Less unheard
(a single "No.", "Yeah.") is the agent ignoring it, which the metrics measure; whether such an
agent can hear at all the gate's hearing probe (`_turn_gate._run.hearing_probe`) tells."""


def unheard_speech(events: Sequence[Mapping[str, Any]], *, heard: bool) -> str | None:
    """When the agent's VAD ``heard`` nothing of a clip it had to hear (at least
    `DEAF_SPEECH_S` of the caller's words in all), those words; else None (nothing to hear,
    or only words short enough that ignoring them is the agent's choice)."""
    if heard:
        return None
    caller = [e for e in events if e["kind"] in CALLER_EVENTS]
    if sum(float(e["end_s"]) - float(e["start_s"]) for e in caller) < DEAF_SPEECH_S:
        return None
    return " ".join(str(e.get("text", "")) for e in caller if e.get("text")) or "speech"


def read_pack(folder: Path, ids: Sequence[str] | None = None) -> list[PlayedStimulus]:
    """The stimuli of a written pack (``pack.json`` in ``folder``), in order; ``ids`` picks
    some.

    Raises:
        ConfigError: ``ids`` names a stimulus the folder does not hold.
    """
    from ..voice._clip import read_wav

    listed = json.loads((folder / "pack.json").read_text(encoding="utf-8"))["stimuli"]
    by_id = {s["id"]: s for s in listed}
    missing = [i for i in ids or () if i not in by_id]
    if missing:
        raise ConfigError(
            f"{folder / 'pack.json'} lists no stimulus {', '.join(map(repr, missing))}; write "
            "the pack with --turn-taking-pack (and --stimulus for each id)"
        )
    chosen = [by_id[i] for i in ids] if ids is not None else listed
    return [
        PlayedStimulus(
            Stimulus.from_dict(doc),
            read_wav(folder / doc["wav"]),
            tuple(doc["events"]),
            wav=folder / doc["wav"],
        )
        for doc in chosen
    ]


def observation_of(
    stimulus: Stimulus,
    events: Sequence[Mapping[str, Any]],
    *,
    turns: Sequence[float],
    began: Sequence[float],
    halts: Sequence[float],
    resumes: Sequence[float],
) -> Observation:
    """What the agent did with ``stimulus``, from when (seconds on the clip's clock) its user
    turns were committed (``turns``), it began speaking (``began``), its speech was halted by
    an interruption (``halts``) and it went back to halted speech (``resumes``), all within
    the clip and its tail."""
    caller = [e for e in events if e["kind"] in CALLER_EVENTS]
    caller_end = max((float(e["end_s"]) for e in caller), default=0.0)
    speech_s = sum(float(e["end_s"]) - float(e["start_s"]) for e in caller)
    interrupt_start = min((float(e["start_s"]) for e in caller), default=None)
    if stimulus.agent_speaking:
        # A turn of its own: a user turn committed, then the agent speaking again after it.
        turn_start = next((t for t in began if turns and t >= turns[0]), None)
        # Only a stop at or after the caller's sound started is a reaction to it: one before
        # (the agent ending its line on its own) is not a yield, and never one of 0 ms.
        stopped = next((h for h in halts if interrupt_start is None or h >= interrupt_start), None)
        resumed = stopped is not None and any(r > stopped for r in resumes)
        if stimulus.expect is Expected.YIELD and stopped is not None:
            overlap = max(0.0, stopped - (interrupt_start or stopped))
        else:
            overlap = speech_s if stopped is None and speech_s else 0.0
        return Observation(
            stimulus_id=stimulus.id,
            category=stimulus.category,
            expect=stimulus.expect,
            caller_end_s=caller_end,
            agent_turn_start_s=turn_start,
            agent_stopped_s=stopped,
            agent_resumed=resumed,
            interrupt_start_s=interrupt_start,
            overlap_s=overlap,
            caller_speech_s=speech_s,
        )
    first = began[0] if began else None
    stopped = next((h for h in halts if first is not None and h > first), None)
    return Observation(
        stimulus_id=stimulus.id,
        category=stimulus.category,
        expect=stimulus.expect,
        caller_end_s=caller_end,
        agent_turn_start_s=first,
        agent_stopped_s=stopped,
        overlap_s=max(0.0, caller_end - first) if first is not None else 0.0,
        caller_speech_s=speech_s,
    )
