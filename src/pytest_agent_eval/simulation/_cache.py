"""An on-disk cache of the simulated caller's turns, so a rerun replays the same caller free.

One JSON file per caller turn, ``<folder>/<key[:2]>/<key>.json``, as the judge's verdict cache
lays them out, named by a SHA-256 key over everything the request depends on that this side
knows: the package version, the caller prompt version, the caller's model (its id, and where
it is served and its own settings when the model object says), its instructions (persona,
goal, whether it may end the call), the conversation so far as the caller saw it, the run's
seed, the temperature and ``max_words``. Against an unchanged agent every key is found again:
the caller makes no request. When the agent says something new, the conversation after it is
new, so the caller is asked from that turn on, and only from there.

What no key can see is a different model served under the same name: each entry keeps when it
was recorded, the reports say which runs were replayed and when, and ``refresh`` (the
``--agent-eval-refresh-caller-cache`` option) asks the model again and rewrites every entry it
meets. The criteria verdicts of a simulation are kept the same way, in ``verdicts/``.

Writes are atomic (temporary file, then rename), so parallel runs and xdist workers share the
folder safely. Only usable turns are stored (an utterance, or the end of the call); a failed
call is asked again next time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .._json_store import JsonStore, recorded_now, sha256_key

__all__ = ["CallerCache", "CallerTurn", "Replayed", "caller_key", "model_facts"]

_FORMAT = 2
"""Layout version of an entry; entries of another layout are misses (1: before entries said
when they were recorded, and before keys held the package version and the model's server)."""


def model_facts(model: Any) -> dict[str, Any]:
    """What this side knows of a built model beyond its id, for a cache key: where it is
    served (``base_url``) and the settings it carries itself. None values when the model
    could not be built or does not say (a model that cannot be built is not asked either)."""
    base_url = getattr(model, "base_url", None) if model is not None else None
    settings = getattr(model, "settings", None) if model is not None else None
    return {
        "base_url": base_url if isinstance(base_url, str) else None,
        "model_settings": dict(settings) if isinstance(settings, dict) else None,
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerTurn:
    """What the caller did at one point of a conversation: said something, or ended the call."""

    kind: Literal["say", "end"]
    text: str = ""
    """What the caller said (``say``)."""
    outcome: Literal["goal_reached", "gave_up"] | None = None
    """Why it ended the call (``end``)."""
    reason: str = ""
    """Its reason, in its words (``end``)."""


@dataclass(frozen=True, slots=True)
class Replayed:
    """A turn read back, with when it was recorded (None for an entry that does not say)."""

    turn: CallerTurn
    recorded_at: str | None


def caller_key(**parts: Any) -> str:
    """The cache key of one caller turn: a SHA-256 over ``parts`` as sorted JSON."""
    return sha256_key(parts)


class CallerCache:
    """Caller turns stored as ``<directory>/<key[:2]>/<key>.json``.

    Args:
        directory: The cache folder; created on first write.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._store = JsonStore(self.directory, format=_FORMAT)

    def get(self, key: str) -> Replayed | None:
        """The stored turn for ``key``, or None (missing, unreadable, of another layout)."""
        data = self._store.get(key)
        if data is None:
            return None
        kind, text = data.get("kind"), data.get("text", "")
        outcome, reason = data.get("outcome"), data.get("reason", "")
        if kind not in ("say", "end") or not isinstance(text, str) or not isinstance(reason, str):
            return None
        if kind == "say" and not text.strip():
            return None
        if kind == "end" and outcome not in ("goal_reached", "gave_up"):
            return None
        recorded = data.get("recorded_at")
        return Replayed(
            CallerTurn(kind=kind, text=text, outcome=outcome, reason=reason),
            recorded if isinstance(recorded, str) else None,
        )

    def put(self, key: str, turn: CallerTurn, *, model: str) -> None:
        """Store ``turn`` atomically; a cache that cannot be written is skipped (a cache is an
        optimisation: a read-only disk must not fail the run)."""
        self._store.put(
            key,
            {
                "kind": turn.kind,
                "text": turn.text,
                "outcome": turn.outcome,
                "reason": turn.reason,
                "model": model,
                "recorded_at": recorded_now(),
            },
        )
