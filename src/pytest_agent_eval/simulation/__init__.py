"""Simulated callers: persona-driven conversations, spoken on the fly, judged at the end.

A simulation is a YAML file (or a scenario of LiveKit's ``scenarios.yaml``): who the caller is
(``persona``, ``goal``), what the agent must do over the conversation (``criteria``, each judged
on its own), and the limits (``max_turns``, ``min_turns``). Each run, a caller model writes the
next words from the conversation so far; a voice agent hears them synthesized on the fly, a text
agent reads them; the caller ends the call through a tool, or ``max_turns`` does; a judge then
scores each criterion on what the agent did and heard. Runs, threshold and Wilson interval are a
transcript's; a caller or judge that fails makes the run an ERROR, never an agent FAIL; the
caller's turns are cached, so a rerun against an unchanged agent is free. See
docs/simulations.md.

```python
from pytest_agent_eval import Transcript
from pytest_agent_eval.simulation import Simulation, run_simulation

simulation = Simulation(
    transcript=Transcript(id="refund", turns=[], runs=3),
    persona="Dana, polite but in a hurry; order 1234 arrived broken.",
    goal="A refund for order 1234.",
    criteria=["The agent looks the order up before promising a refund."],
)
result = await run_simulation(simulation, agent)
```
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ._caller import CallerError, CallerSettings
from ._files import load_simulation_file
from ._model import (
    DEFAULT_MAX_TURNS,
    DEFAULT_MIN_TURNS,
    CallerConfig,
    Criterion,
    Simulation,
    simulation_schema,
)
from ._run import SimulationSettings, run_simulation

if TYPE_CHECKING:
    import pytest

__all__ = [
    "DEFAULT_MAX_TURNS",
    "DEFAULT_MIN_TURNS",
    "CallerConfig",
    "CallerError",
    "CallerSettings",
    "Criterion",
    "Simulation",
    "SimulationSettings",
    "collect_simulation_file",
    "load_simulation_file",
    "run_simulation",
    "simulation_schema",
]


def collect_simulation_file(path: Path, parent: pytest.Collector) -> pytest.File | None:
    """The pytest collector of a simulation file or a LiveKit ``scenarios.yaml`` under
    ``yaml_dirs`` (None for any other file); the collection hook calls it."""
    from ._collect import collect_simulation_file as collect

    return collect(path, parent)
