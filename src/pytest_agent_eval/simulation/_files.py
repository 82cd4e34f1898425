"""Which loader reads a simulation file: ours (`read_simulation_file`) or LiveKit's
``scenarios.yaml`` (`load_scenarios`). A module above both, so neither imports the other."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from .._loader import Presets
from ._model import Simulation, file_kind, read_simulation_file
from ._scenarios import load_scenarios

__all__ = ["load_simulation_file"]


def load_simulation_file(
    path: Path,
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> list[Simulation]:
    """The simulations of a simulation file (one) or of LiveKit's ``scenarios.yaml`` (one per
    scenario).

    Raises:
        TranscriptError: One error with the file, line, simulation (or scenario) and field.
    """
    if file_kind(path) == "livekit":
        return load_scenarios(path, default_threshold=default_threshold, default_runs=default_runs)
    return read_simulation_file(
        path,
        default_threshold=default_threshold,
        default_runs=default_runs,
        presets=presets,
        audio_roots=audio_roots,
    )
