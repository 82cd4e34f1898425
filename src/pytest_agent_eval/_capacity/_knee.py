"""From the measured steps to the knee: the largest K whose p95 latency and loop lag stay within
the budget (and whose conversations all answered), as sessions per core with an interval.

A step is one K run ``repeats`` times. Each step is judged on its pooled figures (every turn's
latency and every probe's lag over its repeats); the knee is the largest K such that it and
every smaller K are within budget. Sessions per core is the knee divided by the cores the
process used at the knee, counting at least one: a single process's event loop runs on one
core, so a process that leaves a core idle still needs that core for its loop. The interval
spans the repeats judged one at a time, each at the largest K its own figures keep within
budget (a repeat is too few turns for a p95 to hold up step after step, so one noisy step does
not end a repeat's ramp), and always contains the knee itself.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from ._measure import StepMeasure, lag_percentile, percentile

__all__ = ["Knee", "RepeatResult", "StepSummary", "find_knee", "onsets", "summarize"]


@dataclass(frozen=True, slots=True, kw_only=True)
class RepeatResult:
    """One repeat of one step: K sessions run together, and what they measured."""

    k: int
    repeat: int
    latencies_s: tuple[float, ...]
    """End of user speech to first agent audio (else first reply text), every turn."""
    failures: tuple[str, ...]
    """Conversations the agent failed (it raised, or refused), one line each."""
    measure: StepMeasure
    fault_failures: tuple[str, ...] = ()
    """Conversations that ended after an injected provider fault: the fault's, not the agent's."""
    unanswered: tuple[str, ...] = ()
    """Conversations that stopped answering: a turn with no answer within the bound."""
    refused: tuple[str, ...] = ()
    """Worker mode: calls no worker took (refused at its load_threshold, or none free)."""
    past_threshold: tuple[str, ...] = ()
    """Worker mode: calls the worker took while its measured load was at or over its
    load_threshold (its load_fnc under-reported); judged once the run is over."""
    joined_rooms: tuple[str, ...] = ()
    """Worker mode: the rooms the agent joined (the calls the worker took and started)."""
    span: tuple[float, float] | None = None
    """``time.monotonic()`` when the repeat began and ended."""
    faults_injected: dict[str, int] = field(default_factory=dict)
    """Injected provider faults by kind ("429", "timeout")."""
    provider_requests: int | None = None
    """Requests the stand-ins got while faults were injected (None: none were)."""
    timed_out: bool = False
    """The step ran past its time bound and was stopped."""
    audio_s: float = 0.0
    """Seconds of user audio the K sessions streamed."""
    process_starts: tuple[tuple[float, float], ...] = ()
    """Process per session: each process's start, (wall, CPU) seconds from its creation until
    its agent was loaded and prepared."""
    cpu_by_component_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds by component (`_components`), summed over the sessions' processes."""


@dataclass(frozen=True, slots=True, kw_only=True)
class StepSummary:
    """One K over its repeats, and its verdict against the budget."""

    k: int
    repeats: int
    turns: int
    p50_latency_ms: float | None
    p95_latency_ms: float | None
    loop_lag_p95_ms: float | None
    loop_lag_max_ms: float | None
    cores_used: float
    """Mean CPU seconds per wall second over the repeats (1.0 = one core busy)."""
    cpu_s_per_audio_s: float | None
    """CPU seconds per second of user audio streamed (None without audio turns)."""
    rss_peak_mb: float
    rss_per_session_mb: float
    """Growth of the resident set over the step, per session (an estimate); with a process
    per session, the mean of each session process's own peak resident set (psutil)."""
    failures: tuple[str, ...]
    timed_out: bool
    unanswered: tuple[str, ...] = ()
    """Conversations that stopped answering (no answer within the bound)."""
    refused: tuple[str, ...] = ()
    """Worker mode: calls no worker took."""
    past_threshold: tuple[str, ...] = ()
    """Worker mode: calls the worker took past its load_threshold."""
    processes_peak: int | None = None
    """Worker or process-per-session mode: the most processes measured at once (the worker
    and its job processes; the sessions' processes)."""
    cores_per_process: float | None = None
    """``cores_used`` over ``processes_peak``: what one process costs."""
    process_start_s: float | None = None
    """Process per session: the mean wall seconds from a process's creation until its agent
    was loaded and prepared (imports, model loads), before its warm-up conversation."""
    process_start_cpu_s: float | None = None
    """The CPU seconds a process spent on that start, mean over the processes."""
    cpu_by_component_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds by component over the repeats (VAD, STT, ..., unattributed); empty in
    worker mode, whose processes are the worker's."""
    fault_failures: tuple[str, ...] = ()
    """Conversations ended by an injected provider fault (not held against the agent)."""
    faults_injected: dict[str, int] = field(default_factory=dict)
    provider_requests: int | None = None
    log_warnings: dict[str, int] = field(default_factory=dict)
    """Warnings and errors logged over the repeats, by message (the most frequent few)."""
    over_budget: tuple[str, ...] = field(default=())
    """Why the step is over budget; empty when within it."""

    @property
    def within_budget(self) -> bool:
        return not self.over_budget


@dataclass(frozen=True, slots=True, kw_only=True)
class Knee:
    """The result: the largest K within budget, as sessions per core."""

    k: int
    """Largest K within budget (0: even one session is over)."""
    sessions_per_core: float
    low: float
    high: float
    """Lowest and highest sessions per core over the repeats taken one at a time."""
    first_over: int | None
    """The first K over budget, None when every step was within it."""


def _mb(value: float) -> float:
    return value / (1024 * 1024)


def summarize(
    k: int, repeats: Sequence[RepeatResult], p95_latency_ms: float, loop_lag_ms: float
) -> StepSummary:
    """One step's figures, pooled over ``repeats``, judged against the two budgets."""
    latencies = [lat for r in repeats for lat in r.latencies_s]
    lags = [lag for r in repeats for lag in r.measure.lags_s]
    failures = tuple(f for r in repeats for f in r.failures)
    unanswered = tuple(f for r in repeats for f in r.unanswered)
    refused = tuple(f for r in repeats for f in r.refused)
    past = tuple(f for r in repeats for f in r.past_threshold)
    peaks = [r.measure.processes_peak for r in repeats if r.measure.processes_peak is not None]
    processes = max(peaks) if peaks else None
    fault_failures = tuple(f for r in repeats for f in r.fault_failures)
    injected: Counter[str] = Counter()
    for r in repeats:
        injected.update(r.faults_injected)
    asked = [r.provider_requests for r in repeats if r.provider_requests is not None]
    timed_out = any(r.timed_out for r in repeats)
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    interval = repeats[0].measure.probe_interval_s if repeats else 0.02
    lag95 = lag_percentile(lags, interval, 95)
    cores = sum(r.measure.cores_used for r in repeats) / len(repeats) if repeats else 0.0
    audio = sum(r.audio_s for r in repeats)
    cpu = sum(r.measure.cpu_s for r in repeats)
    rss_peak = max((r.measure.rss_peak_bytes for r in repeats), default=0)
    growth = max((r.measure.rss_peak_bytes - r.measure.rss_start_bytes for r in repeats), default=0)
    own = [b for r in repeats for b in r.measure.rss_process_peaks_bytes]
    per_session = _mb(sum(own)) / len(own) if own else _mb(max(growth, 0)) / k
    starts = [s for r in repeats for s in r.process_starts]
    components: Counter[str] = Counter()
    for r in repeats:
        components.update(r.cpu_by_component_s)
    logged: Counter[str] = Counter()
    for r in repeats:
        logged.update(dict(r.measure.log_warnings))
    over: list[str] = []
    if timed_out:
        over.append("ran past its time bound")
    if failures:
        over.append(f"{len(failures)} conversation(s) failed")
    if refused:
        over.append(f"{len(refused)} call(s) refused by the worker")
    if past:
        over.append(f"{len(past)} call(s) taken past load_threshold")
    if unanswered:
        over.append(f"{len(unanswered)} conversation(s) stopped answering")
    if p95 is None:
        over.append(
            "no turn was answered"
            + (": injected faults ended every conversation" if fault_failures else "")
        )
    elif p95 * 1000 > p95_latency_ms:
        over.append(f"p95 latency {p95 * 1000:.0f} ms > {p95_latency_ms:g} ms")
    if lag95 is not None and lag95 * 1000 > loop_lag_ms:
        over.append(f"loop lag p95 {lag95 * 1000:.0f} ms > {loop_lag_ms:g} ms")
    return StepSummary(
        k=k,
        repeats=len(repeats),
        turns=len(latencies),
        p50_latency_ms=None if p50 is None else p50 * 1000,
        p95_latency_ms=None if p95 is None else p95 * 1000,
        loop_lag_p95_ms=None if lag95 is None else lag95 * 1000,
        loop_lag_max_ms=max(lags) * 1000 if lags else None,
        cores_used=cores,
        cpu_s_per_audio_s=cpu / audio if audio > 0 else None,
        rss_peak_mb=_mb(rss_peak),
        rss_per_session_mb=per_session,
        failures=failures,
        timed_out=timed_out,
        unanswered=unanswered,
        refused=refused,
        past_threshold=past,
        processes_peak=processes,
        cores_per_process=cores / processes if processes else None,
        process_start_s=sum(w for w, _ in starts) / len(starts) if starts else None,
        process_start_cpu_s=sum(c for _, c in starts) / len(starts) if starts else None,
        cpu_by_component_s={name: round(sec, 3) for name, sec in components.most_common()},
        fault_failures=fault_failures,
        faults_injected=dict(injected),
        provider_requests=sum(asked) if asked else None,
        log_warnings=dict(logged.most_common(5)),
        over_budget=tuple(over),
    )


def _knee_of(steps: Sequence[StepSummary]) -> tuple[int, float, int | None]:
    """(knee K, cores used there, first K over) of steps in ascending K."""
    knee, cores = 0, 1.0
    for step in sorted(steps, key=lambda s: s.k):
        if not step.within_budget:
            return knee, cores, step.k
        knee, cores = step.k, step.cores_used
    return knee, cores, None


def _per_core(k: int, cores: float) -> float:
    return k / max(1.0, cores)


def find_knee(
    results: Sequence[RepeatResult], p95_latency_ms: float, loop_lag_ms: float
) -> tuple[list[StepSummary], Knee]:
    """The steps' summaries (ascending K) and the knee over them."""
    ks = sorted({r.k for r in results})
    steps = [
        summarize(k, [r for r in results if r.k == k], p95_latency_ms, loop_lag_ms) for k in ks
    ]
    knee, cores, first_over = _knee_of(steps)
    value = _per_core(knee, cores)
    per_repeat: list[float] = [value]
    for index in sorted({r.repeat for r in results}):
        alone = [
            summarize(
                k,
                [r for r in results if r.k == k and r.repeat == index],
                p95_latency_ms,
                loop_lag_ms,
            )
            for k in ks
            if any(r.k == k and r.repeat == index for r in results)
        ]
        within = [s for s in alone if s.within_budget]
        best = max(within, key=lambda s: s.k, default=None)
        per_repeat.append(0.0 if best is None else _per_core(best.k, best.cores_used))
    return steps, Knee(
        k=knee,
        sessions_per_core=value,
        low=min(per_repeat),
        high=max(per_repeat),
        first_over=first_over,
    )


def onsets(steps: Sequence[StepSummary]) -> dict[str, int | None]:
    """The smallest K at which each kind of failure began (None: never), steps in any order:
    the agent's failures, conversations that stopped answering, calls a worker refused or took
    past its load_threshold, and conversations ended by an injected fault."""
    ordered = sorted(steps, key=lambda s: s.k)

    def first(attr: str) -> int | None:
        return next((s.k for s in ordered if getattr(s, attr)), None)

    return {
        "failures": first("failures"),
        "stopped_answering": first("unanswered"),
        "refused": first("refused"),
        "past_threshold": first("past_threshold"),
        "fault_failures": first("fault_failures"),
    }
