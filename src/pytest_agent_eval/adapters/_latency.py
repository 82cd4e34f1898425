"""Provider latency for the scripted stand-ins: a delay before their first output, drawn from a
distribution, so a run (``agent-eval capacity`` above all) models a session waiting on its
providers and not only its own compute.

``latency`` is given as seconds (always that delay), as ``(p50, p95)`` seconds (a log-normal
with that median and 95th percentile, the usual shape of a provider's TTFT or TTFB), as the
path of a LiveKit session report, or a list or tuple of them (`ReplayedLatency`: the delays
those real calls saw, ``llm_node_ttft`` for an LLM, drawn at random; read by
`.._session_report`, the reader the importer uses too), or as
a `ProviderLatency` (with a seed, for a repeatable sequence). Waiting is ``asyncio.sleep``: the
event loop stays free, as it does while a real request is in flight.

`ProviderFaults` makes a share of the stand-ins' requests fail as a provider's do under load: a
429 at once, or a timeout after hanging ``timeout_s``. ``agent-eval capacity --fault-rate``
installs one for the whole process (`install_faults`); each stand-in asks `provider_wait`
before answering, which waits its latency and then raises `InjectedFault` when a fault is
drawn. The conversation a fault hit is told through `FAULT_LOG`, so the run counts a
conversation that then fails as failed by the fault, not by the agent.
"""

from __future__ import annotations

import asyncio
import math
import random
import threading
from collections import Counter
from collections.abc import Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import NoReturn, TypeAlias

from ..errors import AgentEvalError

__all__ = [
    "FAULT_KINDS",
    "FAULT_LOG",
    "INJECTED",
    "InjectedFault",
    "LatencySpec",
    "ProviderFaults",
    "ProviderLatency",
    "ReplayedLatency",
    "as_latency",
    "install_faults",
    "provider_wait",
]

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


class ReplayedLatency(ProviderLatency):
    """The delays real calls saw, replayed: each draw one of ``samples`` (seconds), at random."""

    def __init__(self, samples: Sequence[float], *, seed: int | None = None) -> None:
        # Any delays real calls saw replay as they are (a median of 0 among them is fine):
        # no log-normal is fitted, so ProviderLatency's checks of (p50, p95) do not apply.
        if not samples:
            raise ValueError("replayed latency needs at least one delay")
        for sample in samples:
            if (
                isinstance(sample, bool)
                or not isinstance(sample, int | float)
                or not math.isfinite(sample)
                or sample < 0
            ):
                raise ValueError(
                    f"replayed latency: {sample!r} is not a delay (finite seconds >= 0)"
                )
        ordered = sorted(float(s) for s in samples)
        self.p50_s = ordered[len(ordered) // 2]
        self.p95_s = ordered[-1]
        self._random = random.Random(seed)
        self.samples = tuple(float(s) for s in samples)

    def __repr__(self) -> str:
        return f"ReplayedLatency({len(self.samples)} delays, median {self.p50_s:.3f} s)"

    def draw(self) -> float:
        return self._random.choice(self.samples)

    @classmethod
    def from_reports(
        cls, paths: Sequence[str | Path], metric: str, *, seed: int | None = None
    ) -> ReplayedLatency:
        """The ``metric`` of every assistant message in these LiveKit session reports
        (``json.dumps(ctx.make_session_report().to_dict())``).

        Raises:
            ValueError: A report unreadable, or none holding ``metric``, saying which.
        """
        from .._session_report import report_delays

        samples: list[float] = []
        for path in paths:
            samples.extend(report_delays(Path(path), metric))
        if not samples:
            shown = ", ".join(str(p) for p in paths)
            raise ValueError(
                f"no assistant message in {shown} has metrics.{metric}: these reports hold no "
                f"{metric} to replay; save reports of calls the agent answered, with "
                "livekit-agents 1.x metrics, or give latency as seconds or (p50, p95)"
            )
        return cls(samples, seed=seed)


LatencySpec: TypeAlias = (
    float
    | tuple[float, float]
    | str
    | Path
    | list[str | Path]
    | tuple[str | Path, ...]
    | ProviderLatency
    | None
)
"""What a stand-in's ``latency`` argument takes."""


def as_latency(
    value: LatencySpec, where: str, metric: str = "llm_node_ttft"
) -> ProviderLatency | None:
    """``value`` as a `ProviderLatency` (None stays None); a path (or a list of paths) of
    LiveKit session reports replays their ``metric``.

    Raises:
        ValueError: For anything else, naming ``where``.
    """
    if value is None or isinstance(value, ProviderLatency):
        return value
    if isinstance(value, str | Path) or (
        isinstance(value, list | tuple) and value and all(isinstance(v, str | Path) for v in value)
    ):
        paths: list[str | Path] = (
            [value]
            if isinstance(value, str | Path)
            else [v for v in value if isinstance(v, str | Path)]
        )
        try:
            return ReplayedLatency.from_reports(paths, metric)
        except (ValueError, AgentEvalError) as exc:
            raise ValueError(f"{where}: {exc}") from None
    try:
        if isinstance(value, tuple) and len(value) == 2:
            p50, p95 = value
            return ProviderLatency(p50, p95)  # type: ignore[arg-type]  # checked there
        if isinstance(value, int | float) and not isinstance(value, bool):
            return ProviderLatency(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    raise ValueError(
        f"{where}: latency must be seconds, (p50, p95) seconds, LiveKit session reports (a "
        f"path, or a list or tuple of paths) or a ProviderLatency; got {value!r}"
    )


INJECTED = "injected provider fault"
"""Every injected fault's message starts with this, so a failure it caused is recognised even
where the conversation's context does not reach (a Pipecat pipeline's own thread)."""

FAULT_KINDS = ("429", "timeout")


class InjectedFault(AgentEvalError):
    """A provider error a capacity run injected into a stand-in: a 429 or a timeout."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        what = "429 Too Many Requests" if kind == "429" else "request timed out"
        super().__init__(f"{INJECTED}: {what}")


FAULT_LOG: ContextVar[list[str] | None] = ContextVar("agent_eval_fault_log", default=None)
"""The faults injected into the current conversation (set by the capacity run per
conversation; a LiveKit session's tasks inherit it)."""


class ProviderFaults:
    """Fails ``rate`` of the requests (0 to 1), half of them with a 429 and half with a
    timeout after ``timeout_s``; counts requests and faults (thread-safe: Pipecat pipelines run
    on threads of their own)."""

    def __init__(self, rate: float, *, timeout_s: float = 10.0, seed: int | None = None) -> None:
        if isinstance(rate, bool) or not isinstance(rate, int | float) or not 0 <= rate <= 1:
            raise ValueError(f"fault rate must be between 0 and 1, got {rate!r}")
        if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s < 0:
            raise ValueError(f"fault timeout must be seconds >= 0, got {timeout_s!r}")
        self.rate = float(rate)
        self.timeout_s = float(timeout_s)
        self.requests = 0
        self.injected: Counter[str] = Counter()
        self._random = random.Random(seed)
        self._lock = threading.Lock()

    def draw(self) -> str | None:
        """Count one request; the kind of fault it gets, or None."""
        with self._lock:
            self.requests += 1
            if self._random.random() >= self.rate:
                return None
            kind = FAULT_KINDS[0] if self._random.random() < 0.5 else FAULT_KINDS[1]
            self.injected[kind] += 1
            return kind

    async def fail(self, kind: str) -> NoReturn:
        """Raise the fault, after hanging ``timeout_s`` for a timeout (the loop stays free)."""
        if kind == "timeout" and self.timeout_s > 0:
            await asyncio.sleep(self.timeout_s)
        raise InjectedFault(kind)


_installed: ProviderFaults | None = None


def install_faults(faults: ProviderFaults | None) -> None:
    """Make every stand-in in this process draw from ``faults`` (None: no faults)."""
    global _installed
    _installed = faults


async def provider_wait(latency: ProviderLatency | None) -> None:
    """What a stand-in does before it answers: wait its latency, then fail if a fault is drawn.

    Raises:
        InjectedFault: When the installed `ProviderFaults` draws a fault for this request.
    """
    if latency is not None:
        await latency.wait()
    faults = _installed
    if faults is None:
        return
    kind = faults.draw()
    if kind is None:
        return
    log = FAULT_LOG.get()
    if log is not None:
        log.append(kind)
    await faults.fail(kind)
