"""Which YAML file is which, told from its text alone.

Its own module, importing nothing of the package, so that collection can tell a transcript
from a simulation without importing the simulation package (a second or more of imports in a
process that runs only transcripts, where bytecode is not cached).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal, TypeAlias

__all__ = ["FileKind", "file_kind"]

FileKind: TypeAlias = Literal["simulation", "livekit"]
"""A simulation file of ours, or LiveKit's ``scenarios.yaml``."""

_SIMULATION_KEY = re.compile(r"^(?:persona|criteria)[ \t]*:", re.MULTILINE)
_SCENARIOS_KEY = re.compile(r"^scenarios[ \t]*:", re.MULTILINE)


def file_kind(path: Path) -> FileKind | None:
    """``simulation`` for a YAML file with a top-level ``persona:`` or ``criteria:``,
    ``livekit`` for one with a top-level ``scenarios:`` (LiveKit's ``scenarios.yaml``), None
    for anything else (a transcript). Read as text, without parsing: a top-level key of a
    block mapping starts its line."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if _SIMULATION_KEY.search(text):
        return "simulation"
    if _SCENARIOS_KEY.search(text):
        return "livekit"
    return None
