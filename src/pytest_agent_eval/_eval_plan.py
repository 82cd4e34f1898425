"""Which threshold, runs and tags a Python-API eval gets when ``agent_eval.run()`` names none.

The one resolver of that question: the ``agent_eval`` fixture asks it before a run, and the
records of an eval that never produced a result (skipped, errored in setup, deselected by a
shard) ask it for what the eval was to have. Order: the ``agent_eval`` marker, then
``[tool.agent_eval]``; ``--agent-eval-runs`` wins over both, applied by its one resolver
(`SessionSettings.planned_runs`). A YAML transcript carries its own threshold and runs (the
loader resolved them), so only ``--agent-eval-runs`` applies to it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._config import Settings

__all__ = ["EvalPlan", "marker_plan"]


@dataclass(frozen=True, slots=True)
class EvalPlan:
    """Threshold, runs and tags as the marker and the settings give them: not yet type-checked
    (a marker value is whatever the user wrote; the transcript built from it checks it)."""

    threshold: Any
    runs: Any
    tags: Any


def marker_plan(marked: Mapping[str, Any], settings: Settings) -> EvalPlan:
    """The plan of an eval whose test carries ``marked`` (the marker's keyword arguments).

    ``--agent-eval-runs`` is applied after this, to every transcript alike, by
    `SessionSettings.planned_runs`.
    """
    return EvalPlan(
        threshold=marked.get("threshold", settings.threshold),
        runs=marked.get("runs", settings.runs),
        tags=marked.get("tags", []),
    )
