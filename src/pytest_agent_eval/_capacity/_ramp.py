"""The ramp: K concurrent conversations in this process, in real time, for each step of K.

Each session runs every transcript in turn, turn by turn, as the runner would (one fresh
conversation per transcript, the same `TurnInput`s), with the fixtures streamed at the plan's
speed; the sessions' starts are spread over one second, as calls do not arrive on the same
frame. A `LoopProbe` samples the loop lag, CPU and memory while the K sessions run. Results
are appended to the list the caller passes as they finish, so a run stopped by Ctrl-C still
has every repeat that completed.

A conversation that ends early is filed under one of three causes: an injected provider fault
(``--fault-rate``; the fault hit that conversation, or its error is the fault's), no answer
within ``answer_timeout_s`` (it stopped answering), or anything else (the agent failed).
"""

from __future__ import annotations

import asyncio
import inspect
import os
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..adapters._latency import FAULT_LOG, INJECTED, ProviderFaults, install_faults
from ..adapters.base import AgentAdapter, ConversationInfo, TurnInput, coerce_reply
from ..errors import AgentTimeoutError
from ..models import AgentReply, Message, Transcript
from ..runner import assistant_messages, describe_exception
from ..voice._speech import spoken_text
from ._children import run_children
from ._knee import RepeatResult, summarize
from ._measure import LoopProbe
from ._plan import CapacityPlan

__all__ = ["Session", "StepEvent", "run_conversation", "run_ramp", "transcript_audio_s"]

REFUSED = "no worker took"
"""How the room adapter says the server placed a dispatch with no worker: the worker refused
the job (its load at or past ``load_threshold``) or had none free."""

START_SPREAD_S = 1.0
"""The K sessions of a step start spread over this many seconds."""


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


@dataclass(slots=True)
class Session:
    """What one session's conversations measured, each ending filed under its cause."""

    latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    fault_failures: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)

    def failed(self, line: str, faults: list[str], exc: BaseException) -> None:
        """File a conversation's end under its cause (see the module docstring)."""
        if faults or INJECTED in line:
            hit = f" (injected: {', '.join(faults)})" if faults else ""
            self.fault_failures.append(line + hit)
        elif REFUSED in line:
            self.refused.append(line)
        elif isinstance(exc, TimeoutError | AgentTimeoutError):
            self.unanswered.append(line)
        else:
            self.failures.append(line)


def _latency(reply: AgentReply, wall_s: float) -> float:
    if reply.first_audio_latency_s is not None:
        return reply.first_audio_latency_s
    if reply.latency_s is not None:
        return reply.latency_s
    return wall_s


async def _greet(conversation: object) -> None:
    method = getattr(conversation, "greeting", None)
    if callable(method):
        value = method()
        if inspect.isawaitable(value):
            await value


async def run_conversation(
    adapter: AgentAdapter,
    transcript: Transcript,
    index: int,
    plan: CapacityPlan,
    out: Session,
) -> None:
    where = f"session {index + 1}, {transcript.id}"
    faults: list[str] = []
    FAULT_LOG.set(faults)  # this task's context; the agent's tasks started here inherit it
    try:
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index, speed=plan.speed)
        )
    except Exception as exc:  # the agent never answered: a failure of this conversation
        out.failed(f"{where}: starting failed: {describe_exception(exc, 1)}", faults, exc)
        return
    history: list[Message] = []
    turn_index = 0
    try:
        await _greet(conversation)
        for turn_index, turn in enumerate(transcript.turns):
            audio = Path(turn.audio) if turn.audio is not None else None
            history.append(Message("user", spoken_text(turn.user), audio=audio))
            sent = TurnInput.of(
                transcript,
                turn_index,
                index,
                history=history,
                interrupted_by=TurnInput.interrupting(transcript, turn_index, index),
            )
            started = time.perf_counter()
            try:
                async with asyncio.timeout(plan.answer_timeout_s):
                    reply = await conversation.respond(sent)
            except TimeoutError as exc:
                raise TimeoutError(f"no answer within {plan.answer_timeout_s:g} s") from exc
            wall = time.perf_counter() - started
            if not isinstance(reply, AgentReply):
                reply = coerce_reply(reply)
            out.latencies_s.append(_latency(reply, wall))
            history.extend(assistant_messages(reply.reply, reply.calls, turn_index))
    except Exception as exc:  # the run boundary: this conversation stopped answering
        line = f"{where} turn {turn_index + 1}: {describe_exception(exc, 1)}"
        out.failed(line, faults, exc)
    finally:
        try:
            await conversation.aclose()
        except Exception as exc:
            out.failures.append(f"{where}: closing failed: {describe_exception(exc, 1)}")


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
) -> RepeatResult:
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
    probe.start()
    timed_out = False
    counted: dict[str, int] = {}
    asked: int | None = None
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
        measure = await probe.stop()
        install_faults(None)
    if plan.process_per_session and not timed_out and not tasks[0].cancelled():
        for session, child in zip(sessions, tasks[0].result(), strict=True):
            for name in ("latencies_s", "failures", "fault_failures", "unanswered", "refused"):
                getattr(session, name).extend(child.get(name, []))
            for kind, count in child.get("faults_injected", {}).items():
                counted[kind] = counted.get(kind, 0) + count
            if "provider_requests" in child:
                asked = (asked or 0) + child["provider_requests"]
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
        faults_injected=counted,
        provider_requests=asked,
        measure=measure,
        timed_out=timed_out,
        audio_s=audio,
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
) -> None:
    """Run the plan's steps into ``results``. After the first step over budget it stops, when
    the plan says so, then halves the gap to the last step within budget ``refine`` times.
    One unmeasured conversation first warms the agent up (model loads, caches). With
    ``watch_pid`` (worker mode) CPU and memory are that process tree's."""
    if not plan.process_per_session:  # each process prepares and warms up its own agent
        await _prepare(adapter, transcripts)
        await run_conversation(adapter, transcripts[0], 0, plan, Session())
    good, over = 0, None
    for k in plan.steps:
        if await _step(plan, adapter, transcripts, k, results, on_event, watch_pid):
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
        if await _step(plan, adapter, transcripts, k, results, on_event, watch_pid):
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
) -> bool:
    """Run step ``k`` ``repeats`` times into ``results``; True when it is within budget."""
    step: list[RepeatResult] = []
    for repeat in range(plan.repeats):
        on_event(StepEvent(k, repeat, plan.repeats))
        result = await _repeat(plan, adapter, transcripts, k, repeat, watch_pid)
        step.append(result)
        results.append(result)
        on_event(StepEvent(k, repeat, plan.repeats, result))
    return summarize(k, step, plan.p95_latency_ms, plan.loop_lag_ms).within_budget
