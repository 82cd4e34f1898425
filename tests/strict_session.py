"""Helpers for child pytest sessions of a voice example run as strict CI runs them (issue 32):
under ``-W error`` the session must exit 0 with nothing the package opened left to the garbage
collector, and the streaming speed the session asked for must reach the adapter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

__all__ = ["STRICT", "assert_clean_exit", "set_config_speed", "streamed_speeds"]

STRICT = ("-W", "error", "-p", "no:cacheprovider")
"""Warnings are errors, as in a common CI setting: an unclosed loop, socket or file that the
garbage collector finds becomes an unraisable-exception warning, and so an error."""

_LEAK_SIGNS = ("Unraisable", "unclosed", "ResourceWarning", "Exception ignored")


def assert_clean_exit(result: pytest.RunResult) -> None:
    """Exit status 0 and no sign of a resource left to the garbage collector."""
    output = "\n".join(result.outlines + result.errlines)
    assert result.ret == 0, output[-6000:]
    signs = [line for line in output.splitlines() if any(s in line for s in _LEAK_SIGNS)]
    assert signs == [], "\n".join(signs[:20])


def set_config_speed(pyproject: Path, value: str) -> None:
    """Put ``speed = value`` (TOML) in the ``[tool.agent_eval]`` table of ``pyproject``."""
    text = pyproject.read_text()
    assert "[tool.agent_eval]\n" in text, pyproject
    pyproject.write_text(
        text.replace("[tool.agent_eval]\n", f"[tool.agent_eval]\nspeed = {value}\n")
    )


def streamed_speeds(results_file: Path) -> set[float | None]:
    """Every speed the audio turns of a results file recorded."""
    document = json.loads(results_file.read_text())
    return {
        turn["speed"]
        for entry in document["evals"]
        for run in entry["captures"] or ()
        for turn in run["turns"]
        if turn["audio"] is not None
    }
