"""What the turn-taking run hands an adapter's runner, and what the runner gives back: the one
contract between `pytest_agent_eval._turn_gate._run` and each framework's runner
(``adapters/livekit/_turn_taking.py``, ``adapters/pipecat/_turn_taking.py``), so both record a
stimulus the same way and the metrics never depend on which framework played it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ..voice._clip import AudioClip
from ._metrics import Observation
from ._stimulus import Stimulus

__all__ = ["Observe", "PlayedStimulus", "TurnTakingObserver"]


@dataclass(frozen=True, slots=True)
class PlayedStimulus:
    """A stimulus with its rendered audio (16 kHz mono) and the events of its sidecar."""

    stimulus: Stimulus
    clip: AudioClip
    events: tuple[Mapping[str, Any], ...]


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
