"""The ramp: K concurrent conversations in this process, in real time, for each step of K.

Each session runs every transcript in turn, turn by turn, as the runner would (one fresh
conversation per transcript, the same `TurnInput`s), with the fixtures streamed at the plan's
speed; the sessions' starts are spread over one second, as calls do not arrive on the same
frame. A `LoopProbe` samples the loop lag, CPU and memory while the K sessions run. Results
are appended to the list the caller passes as they finish, so a run stopped by Ctrl-C still
has every repeat that completed.

With ``process_per_session`` each session is a process of its own instead (`_children`); a
session's conversations, and the cause each early ending is filed under, are `_session`'s.
"""

from __future__ import annotations

import asyncio
import os
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..adapters._latency import ProviderFaults, install_faults
from ..adapters.base import AgentAdapter
from ..models import Transcript
from ._children import run_children
from ._components import ComponentMeter
from ._knee import RepeatResult, summarize
from ._measure import LoopProbe
from ._plan import CapacityPlan
from ._session import START_SPREAD_S, Session, run_conversation

__all__ = ["PastThreshold", "StepEvent", "run_ramp", "transcript_audio_s"]

PastThreshold = Callable[[float], tuple[str, ...]]
"""The calls taken past load_threshold since a ``time.monotonic()`` instant (kept for callers;
worker mode judges them once the run is over, from each repeat's `RepeatResult.span`)."""


@dataclass(frozen=True, slots=True)
class StepEvent:
    """What the ramp tells its caller: a repeat starts (``result`` None) or has finished."""

    k: int
    repeat: int
    repeats: int
    result: RepeatResult | None = None


def _wav_seconds(path: Path) -> float:
    try:
        with wave.open(str(path), "rb") as wav:
            return wav.getnframes() / float(wav.getframerate())
    except (OSError, wave.Error, EOFError, ZeroDivisionError):
        return 0.0


def transcript_audio_s(transcript: Transcript) -> float:
    """Seconds of user audio in ``transcript``'s turns (WAV fixtures)."""
    return sum(_wav_seconds(Path(t.audio)) for t in transcript.turns if t.audio is not None)


async def _session(
    adapter: AgentAdapter,
    transcripts: Sequence[Transcript],
    index: int,
    k: int,
    plan: CapacityPlan,
    out: Session,
) -> None:
    await asyncio.sleep(START_SPREAD_S * index / k)
    for transcript in transcripts:
        await run_conversation(adapter, transcript, index, plan, out)


async def _repeat(
    plan: CapacityPlan,
    adapter: AgentAdapter,
    transcripts: Sequence[Transcript],
    k: int,
    repeat: int,
    watch_pid: int | None = None,
    past_threshold: PastThreshold | None = None,
) -> RepeatResult:
    began = time.monotonic()
    sessions = [Session() for _ in range(k)]
    faults = (
        ProviderFaults(plan.fault_rate, timeout_s=plan.fault_timeout_s, seed=1000 * k + repeat)
        if plan.fault_rate > 0 and not plan.process_per_session
        else None
    )
    install_faults(faults)
    if plan.process_per_session:
        watch_pid = os.getpid()  # its K children (not this process, which only waits)
    probe = LoopProbe(watch_pid=watch_pid, children_only=plan.process_per_session)
    # Per-component CPU where the sessions run here (each session's process meters its own).
    meter = ComponentMeter() if watch_pid is None and plan.cpu_by_component else None
    probe.start()
    if meter is not None:
        meter.start()
    timed_out = False
    counted: dict[str, int] = {}
    asked: int | None = None
    starts: list[tuple[float, float]] = []
    tasks: list[asyncio.Task[Any]]
    if plan.process_per_session:
        tasks = [asyncio.create_task(run_children(plan, k, repeat))]
    else:
        tasks = [
            asyncio.create_task(_session(adapter, transcripts, i, k, plan, sessions[i]))
            for i in range(k)
        ]
    try:
        async with asyncio.timeout(plan.step_timeout_s):
            await asyncio.gather(*tasks)
    except TimeoutError:
        timed_out = True
    finally:
        # Every session ends here, its conversations closed (its process killed), whether the
        # step finished, ran out of time or was interrupted (Ctrl-C cancels this task; that
        # goes on upwards).
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        components: dict[str, float] = meter.stop() if meter is not None else {}
        measure = await probe.stop()
        install_faults(None)
    if plan.process_per_session and not timed_out and not tasks[0].cancelled():
        for session, child in zip(sessions, tasks[0].result(), strict=True):
            for name in (
                "latencies_s",
                "failures",
                "fault_failures",
                "unanswered",
                "refused",
                "joined",
            ):
                getattr(session, name).extend(child.get(name, []))
            for kind, count in child.get("faults_injected", {}).items():
                counted[kind] = counted.get(kind, 0) + count
            if "provider_requests" in child:
                asked = (asked or 0) + child["provider_requests"]
            if "start_s" in child:
                starts.append((float(child["start_s"]), float(child["start_cpu_s"])))
            for name, seconds in child.get("cpu_by_component_s", {}).items():
                components[name] = components.get(name, 0.0) + float(seconds)
    if faults is not None:
        counted, asked = dict(faults.injected), faults.requests
    audio = sum(transcript_audio_s(t) for t in transcripts) * k
    return RepeatResult(
        k=k,
        repeat=repeat,
        latencies_s=tuple(lat for s in sessions for lat in s.latencies_s),
        failures=tuple(f for s in sessions for f in s.failures),
        fault_failures=tuple(f for s in sessions for f in s.fault_failures),
        unanswered=tuple(f for s in sessions for f in s.unanswered),
        refused=tuple(f for s in sessions for f in s.refused),
        past_threshold=past_threshold(began) if past_threshold is not None else (),
        joined_rooms=tuple(room for s in sessions for room in s.joined),
        span=(began, time.monotonic()),
        faults_injected=counted,
        provider_requests=asked,
        measure=measure,
        timed_out=timed_out,
        audio_s=audio,
        process_starts=tuple(starts),
        cpu_by_component_s=components,
    )


async def _prepare(adapter: AgentAdapter, transcripts: Sequence[Transcript]) -> None:
    prepare = getattr(adapter, "prepare", None)
    if callable(prepare):
        for transcript in transcripts:
            await prepare(transcript)


async def run_ramp(
    plan: CapacityPlan,
    adapter: AgentAdapter,
    transcripts: Sequence[Transcript],
    results: list[RepeatResult],
    on_event: Callable[[StepEvent], None] = lambda event: None,
    watch_pid: int | None = None,
    past_threshold: PastThreshold | None = None,
) -> None:
    """Run the plan's steps into ``results``. After the first step over budget it stops, when
    the plan says so, then halves the gap to the last step within budget ``refine`` times.
    One unmeasured conversation first warms the agent up (model loads, caches). With
    ``watch_pid`` (worker mode) CPU and memory are that process tree's, and ``past_threshold``
    names the calls the worker took past its load_threshold during each repeat."""
    if not plan.process_per_session:  # each process prepares and warms up its own agent
        await _prepare(adapter, transcripts)
        await run_conversation(adapter, transcripts[0], 0, plan, Session())
    good, over = 0, None
    for k in plan.steps:
        if await _step(plan, adapter, transcripts, k, results, on_event, watch_pid, past_threshold):
            good = k
        elif over is None:
            over = k
            if plan.stop_at_breach:
                break
    if over is None or not plan.stop_at_breach:
        return
    for _ in range(plan.refine):
        k = (good + over) // 2
        if k <= good:
            return
        if await _step(plan, adapter, transcripts, k, results, on_event, watch_pid, past_threshold):
            good = k
        else:
            over = k


async def _step(
    plan: CapacityPlan,
    adapter: AgentAdapter,
    transcripts: Sequence[Transcript],
    k: int,
    results: list[RepeatResult],
    on_event: Callable[[StepEvent], None],
    watch_pid: int | None,
    past_threshold: PastThreshold | None = None,
) -> bool:
    """Run step ``k`` ``repeats`` times into ``results``; True when it is within budget."""
    step: list[RepeatResult] = []
    for repeat in range(plan.repeats):
        on_event(StepEvent(k, repeat, plan.repeats))
        result = await _repeat(plan, adapter, transcripts, k, repeat, watch_pid, past_threshold)
        step.append(result)
        results.append(result)
        on_event(StepEvent(k, repeat, plan.repeats, result))
    return summarize(k, step, plan.p95_latency_ms, plan.loop_lag_ms).within_budget
