"""The agent frameworks installed where a session ran, as its results file states them.

A suite that went red after an upgrade of livekit-agents or pipecat-ai is the commonest reason
to compare two results files; `agent-eval compare` names the versions that changed between
them. The versions are those installed (package metadata), not those imported: the reports are
written in the session's main process, which under xdist imports no framework.
"""

from __future__ import annotations

from collections.abc import Mapping
from importlib import metadata
from typing import Any

__all__ = ["FRAMEWORKS", "framework_changes", "framework_versions"]

FRAMEWORKS = (
    "livekit-agents",
    "livekit-plugins-openai",
    "livekit-plugins-silero",
    "livekit",  # the realtime SDK (livekit.rtc)
    "pipecat-ai",
    "pipecat-ai-flows",
    "pydantic-ai-slim",
    "openai",
    "langchain-core",
    "smolagents",
    "faster-whisper",
)
"""The distributions whose versions decide what an agent or its test does (an adapter's
framework, the STT and VAD it runs, the judges' library), in the order reports list them."""


def framework_versions() -> tuple[tuple[str, str], ...]:
    """``(distribution, version)`` of each of `FRAMEWORKS` installed here."""
    found = []
    for name in FRAMEWORKS:
        try:
            found.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return tuple(found)


def framework_changes(base: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """``livekit-agents 1.8.9 -> 1.9.0`` for each framework whose version differs between two
    results files (``not installed`` on the side without it). Empty when either file predates
    the ``frameworks`` field: nothing is known to compare."""
    then, now = base.get("frameworks"), new.get("frameworks")
    if not isinstance(then, Mapping) or not isinstance(now, Mapping):
        return []
    order = [*FRAMEWORKS, *sorted((then.keys() | now.keys()) - set(FRAMEWORKS))]
    return [
        f"{name} {then.get(name, 'not installed')} -> {now.get(name, 'not installed')}"
        for name in order
        if then.get(name) != now.get(name)
    ]
