"""What a step measures while its sessions run: the process's CPU and memory (psutil) and the
event loop's lag (how late a probe task wakes up).

The probe sleeps ``interval_s`` at a time; anything that holds the loop (a synchronous resample,
a busy tool) makes it wake late, and that lateness is exactly what every other session on the
loop waits too. Its percentiles are over time (`lag_percentile`). CPU is the process's CPU seconds over the step's wall seconds (1.0 is one core
busy); memory is the resident set size, sampled by the same probe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import ConfigError, install_command

__all__ = [
    "LogWarnings",
    "LoopProbe",
    "ProcessTree",
    "StepMeasure",
    "lag_percentile",
    "percentile",
    "process_handle",
]


def process_handle() -> Any:
    """``psutil.Process()`` for this process; psutil is the ``capacity`` extra."""
    try:
        import psutil
    except ImportError:
        raise ConfigError(
            "agent-eval capacity measures CPU and memory with psutil, which is not installed: "
            f"{install_command('capacity')}"
        ) from None
    return psutil.Process()


def percentile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` percentile (0-100) of ``values`` by linear interpolation; None when empty."""
    if not values:
        return None
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def lag_percentile(lags: Sequence[float], interval_s: float, q: float) -> float | None:
    """The ``q`` percentile of the loop lag over time, not over wake-ups: each wake-up's lag
    counts for the time its wait covered (``interval_s`` plus the lag), so a loop held for
    300 ms weighs as 300 ms of lag, not as one late sample among fifteen on-time ones."""
    if not lags:
        return None
    ordered = sorted(lags)
    total = sum(interval_s + lag for lag in ordered)
    target = total * q / 100.0
    covered = 0.0
    for lag in ordered:
        covered += interval_s + lag
        if covered >= target:
            return lag
    return ordered[-1]


class LogWarnings(logging.Handler):
    """Counts the warnings and errors logged (through the standard logging module) while a
    step runs, by message: a framework's own word on overload ("VAD inference is slower than
    realtime", LiveKit's) explains a knee better than any figure."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.counts: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        try:
            message = record.getMessage()
        except Exception:  # a record whose arguments do not format: its template
            message = str(record.msg)
        self.counts[message.splitlines()[0][:120] if message else record.name] += 1


@dataclass(frozen=True, slots=True, kw_only=True)
class StepMeasure:
    """What the probe saw over one step."""

    wall_s: float
    cpu_s: float
    """CPU seconds of the process (user + system) over the step."""
    rss_start_bytes: int
    rss_peak_bytes: int
    lags_s: tuple[float, ...]
    """Each probe wake-up's lateness, in seconds."""
    probe_interval_s: float = 0.02
    """How long the probe slept between wake-ups."""
    log_warnings: tuple[tuple[str, int], ...] = ()
    """Warnings and errors logged during the step: (message, count), most frequent first."""
    processes_peak: int | None = None
    """In worker mode, the most processes the worker's tree had (itself, its job processes);
    CPU and memory are then the tree's, not this process's."""
    rss_process_peaks_bytes: tuple[int, ...] = ()
    """Process per session: each session process's own peak resident set (psutil)."""

    @property
    def cores_used(self) -> float:
        """CPU seconds per wall second: 1.0 is one core fully busy."""
        return self.cpu_s / self.wall_s if self.wall_s > 0 else 0.0


class ProcessTree:
    """CPU and memory of a process and all its descendants (a LiveKit worker and its job
    processes), with psutil. A process that appears during the step counts all its CPU; one
    that ends between two samples loses what it used since the last one (samples are 0.2 s
    apart)."""

    def __init__(self, pid: int, *, children_only: bool = False) -> None:
        import psutil

        self._children_only = children_only
        self._psutil = psutil
        self._root = psutil.Process(pid)
        self._first: dict[tuple[int, float], float] = {}
        self._last: dict[tuple[int, float], float] = {}
        self.rss_peak = 0
        self.processes_peak = 0
        self.rss_peaks: dict[tuple[int, float], int] = {}
        """Each process's own peak resident set, by (pid, create time)."""
        self._started = False

    def sample(self) -> int:
        """Read every process of the tree once; returns the tree's RSS now."""
        psutil = self._psutil
        try:
            children = self._root.children(recursive=True)
            processes = children if self._children_only else [self._root, *children]
        except psutil.Error:
            processes = []
        rss = 0
        for process in processes:
            try:
                with process.oneshot():
                    times = process.cpu_times()
                    key = (process.pid, process.create_time())
                    own = int(process.memory_info().rss)
            except psutil.Error:
                continue
            rss += own
            self.rss_peaks[key] = max(self.rss_peaks.get(key, 0), own)
            cpu = float(times.user + times.system)
            self._first.setdefault(key, cpu if not self._started else 0.0)
            self._last[key] = cpu
        self._started = True
        self.rss_peak = max(self.rss_peak, rss)
        self.processes_peak = max(self.processes_peak, len(processes))
        return rss

    @property
    def cpu_s(self) -> float:
        return sum(self._last[key] - self._first[key] for key in self._last)


class LoopProbe:
    """Samples loop lag, CPU and RSS of this process (or of ``watch_pid``'s process tree) while
    a step runs (a task on its loop)."""

    def __init__(
        self,
        interval_s: float = 0.02,
        rss_every: int = 10,
        watch_pid: int | None = None,
        children_only: bool = False,
    ) -> None:
        self._children_only = children_only
        self.interval_s = interval_s
        self.rss_every = rss_every
        self._process = process_handle()
        self._watch_pid = watch_pid
        self._tree: ProcessTree | None = None
        self._task: asyncio.Task[None] | None = None
        self._warnings = LogWarnings()
        self._lags: list[float] = []
        self._rss_start = 0
        self._rss_peak = 0
        self._started = 0.0
        self._cpu_start = 0.0

    def _cpu(self) -> float:
        if self._tree is not None:
            return self._tree.cpu_s
        times = self._process.cpu_times()
        return float(times.user + times.system)

    def _rss(self) -> int:
        if self._tree is not None:
            rss = self._tree.sample()
        else:
            rss = int(self._process.memory_info().rss)
        self._rss_peak = max(self._rss_peak, rss)
        return rss

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        ticks = 0
        while True:
            before = loop.time()
            await asyncio.sleep(self.interval_s)
            self._lags.append(max(0.0, loop.time() - before - self.interval_s))
            ticks += 1
            if ticks % self.rss_every == 0:
                if self._tree is not None:  # many processes: off the loop it measures
                    await asyncio.to_thread(self._rss)
                else:
                    self._rss()

    def start(self) -> None:
        """Start sampling (on the running loop)."""
        self._lags = []
        self._rss_peak = 0
        self._tree = (
            ProcessTree(self._watch_pid, children_only=self._children_only)
            if self._watch_pid is not None
            else None
        )
        self._rss_start = self._rss()
        self._cpu_start = self._cpu()
        self._started = time.perf_counter()
        logging.getLogger().addHandler(self._warnings)
        self._task = asyncio.get_running_loop().create_task(self._run(), name="capacity-probe")

    async def stop(self) -> StepMeasure:
        """Stop sampling and return what was measured since `start`."""
        wall = time.perf_counter() - self._started
        self._rss()
        cpu = self._cpu() - self._cpu_start
        logging.getLogger().removeHandler(self._warnings)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return StepMeasure(
            wall_s=wall,
            cpu_s=cpu,
            rss_start_bytes=self._rss_start,
            rss_peak_bytes=self._rss_peak,
            lags_s=tuple(self._lags),
            probe_interval_s=self.interval_s,
            log_warnings=tuple(self._warnings.counts.most_common(5)),
            processes_peak=self._tree.processes_peak if self._tree is not None else None,
            rss_process_peaks_bytes=tuple(self._tree.rss_peaks.values())
            if self._tree is not None and self._children_only
            else (),
        )
