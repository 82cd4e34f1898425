"""``pytest_agent_eval.yaml_loader``: where the earlier package (0.3) loaded YAML transcripts.

Kept so ``from pytest_agent_eval.yaml_loader import load_transcript, TranscriptError`` goes on
working; the loader lives in `pytest_agent_eval.loader`.
"""

from __future__ import annotations

from os import PathLike
from pathlib import Path

from .errors import TranscriptError
from .loader import load_transcript_file
from .models import Transcript

__all__ = ["TranscriptError", "load_transcript"]


def load_transcript(
    path: str | PathLike[str], *, default_threshold: float = 0.8, default_runs: int = 1
) -> Transcript:
    """Read and validate one YAML transcript, as `pytest_agent_eval.loader.load_transcript_file`.

    Raises:
        TranscriptError: With file, line, field path and a hint; a YAML syntax error too.
    """
    return load_transcript_file(
        Path(path), default_threshold=default_threshold, default_runs=default_runs
    )
