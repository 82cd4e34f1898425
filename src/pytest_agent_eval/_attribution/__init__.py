"""Failure attribution for voice runs (issue 35): why a FAILed voice run failed, proven by
counterfactuals, written on the run as an `Attribution` (docs/attribution.md).

The record (`Attribution`, `Evidence`) lives with the results in `pytest_agent_eval.models`,
so a run carries it through xdist and into the results file; the counterfactuals that fill it
are here, above the runner, which they call again for a text rerun.
"""

from __future__ import annotations

from ..models._attribution import Attribution, Cause, Counterfactual, Evidence, EvidenceVerdict
from ._attribute import (
    attribute_result,
    failing_turn,
    fixture_hearing_transcript,
    text_transcript,
)
from ._words import misheard_spans

__all__ = [
    "Attribution",
    "Cause",
    "Counterfactual",
    "Evidence",
    "EvidenceVerdict",
    "attribute_result",
    "failing_turn",
    "fixture_hearing_transcript",
    "misheard_spans",
    "text_transcript",
]
