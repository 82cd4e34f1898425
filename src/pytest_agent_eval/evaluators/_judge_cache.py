"""An on-disk cache of judge verdicts, so re-running an unchanged suite does not pay twice.

One JSON file per verdict, named by a SHA-256 key over everything that decides it: the prompt
version, the judge model and the full prompt (rubric, conversation, reply, tool calls). Writes
go to a temporary file that is then renamed over the target, so a crash or a concurrent
xdist worker never leaves a half-written entry. Only real verdicts are stored; a judge that
errored is asked again next time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .._json_store import JsonStore, recorded_now, sha256_key

__all__ = ["CachedVerdict", "VerdictCache", "verdict_key"]

_FORMAT = 1
"""Layout version of a cache file; entries of another layout are treated as misses."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CachedVerdict:
    """A verdict read back from the cache."""

    passed: bool
    reasoning: str
    recorded_at: str | None = None
    """When it was recorded (UTC), for the reports; None for an entry that does not say."""


def verdict_key(*, prompt_version: str, model: str, instructions: str, user_prompt: str) -> str:
    """The cache key of one judge call.

    Args:
        prompt_version: The judge prompt version constant.
        model: A stable id of the judge model.
        instructions: The trusted part of the prompt (includes the rubric).
        user_prompt: The data part (conversation, tool calls, reply or arguments).
    """
    return sha256_key(
        {
            "prompt_version": prompt_version,
            "model": model,
            "instructions": instructions,
            "user_prompt": user_prompt,
        }
    )


class VerdictCache:
    """Verdicts stored as ``<directory>/<key[:2]>/<key>.json``.

    Args:
        directory: The cache folder; created on first write.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._store = JsonStore(self.directory, format=_FORMAT)

    def get(self, key: str) -> CachedVerdict | None:
        """The stored verdict for ``key``, or None (missing, unreadable or of another layout)."""
        data = self._store.get(key)
        if data is None:
            return None
        passed, reasoning = data.get("passed"), data.get("reasoning")
        if not isinstance(passed, bool) or not isinstance(reasoning, str):
            return None
        recorded = data.get("recorded_at")
        return CachedVerdict(
            passed=passed,
            reasoning=reasoning,
            recorded_at=recorded if isinstance(recorded, str) else None,
        )

    def put(self, key: str, *, passed: bool, reasoning: str, model: str) -> None:
        """Store a verdict atomically; a cache that cannot be written is skipped silently.

        A cache is an optimisation: failing a test because the disk is read-only would be
        worse than paying for the judge again.
        """
        self._store.put(
            key,
            {
                "passed": passed,
                "reasoning": reasoning,
                "model": model,
                "recorded_at": recorded_now(),
            },
        )
