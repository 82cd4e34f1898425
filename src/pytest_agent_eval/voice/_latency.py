"""A reply's latency: from the end of the user speech it answers to the reply.

The rule both voice adapters measure by, kept apart from their wording: the anchor is the last
end of user speech (or the sending of a text turn) at or before the reply. A reply before every
anchor, or with no anchor at all, has no latency: it is returned as `Unmeasured`, and the
adapter fails the turn saying why, never hands a check a number it could pass on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Unmeasured", "reply_latency_s"]


@dataclass(frozen=True, slots=True)
class Unmeasured:
    """Why a reply's latency is not a number."""

    early_s: float | None
    """How long before the first end of the user's speech the reply came; None when no end of
    the user's speech was observed at all."""


def reply_latency_s(anchors: Sequence[float], at: float | None) -> float | Unmeasured | None:
    """Seconds from the last anchor at or before ``at`` to ``at``; None without a reply (``at``
    None); `Unmeasured` when no anchor comes before it."""
    if at is None:
        return None
    if not anchors:
        return Unmeasured(None)
    before = [a for a in anchors if a <= at]
    if not before:
        return Unmeasured(min(anchors) - at)
    return at - max(before)
