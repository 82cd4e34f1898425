"""Provider latency for the scripted stand-ins: a delay before their first output, drawn from a
distribution, so a run (``agent-eval capacity`` above all) models a session waiting on its
providers and not only its own compute.

``latency`` is given as seconds (always that delay), as ``(p50, p95)`` seconds (a log-normal
with that median and 95th percentile, the usual shape of a provider's TTFT or TTFB), or as a
`ProviderLatency` (with a seed, for a repeatable sequence). Waiting is ``asyncio.sleep``: the
event loop stays free, as it does while a real request is in flight.
"""

from __future__ import annotations

import asyncio
import math
import random
from typing import TypeAlias

__all__ = ["LatencySpec", "ProviderLatency", "as_latency"]

_Z95 = 1.6448536269514722
"""The standard normal's 95th percentile."""


class ProviderLatency:
    """Delays with median ``p50_s`` and 95th percentile ``p95_s`` (log-normal), or a fixed
    ``p50_s`` when ``p95_s`` is None or equal to it."""

    def __init__(
        self, p50_s: float, p95_s: float | None = None, *, seed: int | None = None
    ) -> None:
        if isinstance(p50_s, bool) or not isinstance(p50_s, int | float) or not p50_s >= 0:
            raise ValueError(f"latency p50 must be a number of seconds >= 0, got {p50_s!r}")
        if p95_s is not None and (
            isinstance(p95_s, bool) or not isinstance(p95_s, int | float) or not p95_s >= p50_s
        ):
            raise ValueError(
                f"latency p95 must be a number of seconds >= its p50 ({p50_s!r}), got {p95_s!r}"
            )
        if p50_s == 0 and p95_s:
            raise ValueError(
                f"latency p50 of 0 with a p95 of {p95_s!r}: a log-normal delay needs a median "
                "above 0; give the median (e.g. latency=(0.4, 0.9)) or a fixed delay"
            )
        self.p50_s = float(p50_s)
        self.p95_s = float(p95_s) if p95_s is not None else None
        self._random = random.Random(seed)

    def __repr__(self) -> str:
        return f"ProviderLatency(p50_s={self.p50_s!r}, p95_s={self.p95_s!r})"

    def draw(self) -> float:
        """One delay, in seconds."""
        if self.p95_s is None or self.p95_s == self.p50_s or self.p50_s == 0:
            return self.p50_s
        sigma = math.log(self.p95_s / self.p50_s) / _Z95
        return self._random.lognormvariate(math.log(self.p50_s), sigma)

    async def wait(self) -> float:
        """Sleep one drawn delay (the loop stays free); returns it."""
        delay = self.draw()
        if delay > 0:
            await asyncio.sleep(delay)
        return delay


LatencySpec: TypeAlias = float | tuple[float, float] | ProviderLatency | None
"""What a stand-in's ``latency`` argument takes."""


def as_latency(value: LatencySpec, where: str) -> ProviderLatency | None:
    """``value`` as a `ProviderLatency` (None stays None).

    Raises:
        ValueError: For anything else, naming ``where``.
    """
    if value is None or isinstance(value, ProviderLatency):
        return value
    try:
        if isinstance(value, tuple) and len(value) == 2:
            return ProviderLatency(value[0], value[1])
        if isinstance(value, int | float) and not isinstance(value, bool):
            return ProviderLatency(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    raise ValueError(
        f"{where}: latency must be seconds, (p50, p95) seconds or a ProviderLatency; got {value!r}"
    )
