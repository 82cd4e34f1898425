"""The ramp: K concurrent conversations in this process, in real time, for each step of K.

Each session runs every transcript in turn, turn by turn, as the runner would (one fresh
conversation per transcript, the same `TurnInput`s), with the fixtures streamed at the plan's
speed; the sessions' starts are spread over one second, as calls do not arrive on the same
frame. A `LoopProbe` samples the loop lag, CPU and memory while the K sessions run. Results
are appended to the list the caller passes as they finish, so a run stopped by Ctrl-C still
has every repeat that completed.
"""

from __future__ import annotations

import asyncio
import inspect
import time
import wave
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._runner import assistant_messages, describe_exception
from ..adapters.base import AgentAdapter, ConversationInfo, TurnInput, coerce_reply
from ..models import AgentReply, Message, Transcript
from ..voice._speech import spoken_text
from ._knee import RepeatResult, summarize
from ._measure import LoopProbe
from ._plan import CapacityPlan

__all__ = ["StepEvent", "run_ramp", "transcript_audio_s"]

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
class _Session:
    latencies_s: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


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


async def _conversation(
    adapter: AgentAdapter, transcript: Transcript, index: int, speed: float, out: _Session
) -> None:
    where = f"session {index + 1}, {transcript.id}"
    try:
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index, speed=speed)
        )
    except Exception as exc:  # the agent never answered: a failure of this conversation
        out.failures.append(f"{where}: starting failed: {describe_exception(exc, 1)}")
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
            reply = await conversation.respond(sent)
            wall = time.perf_counter() - started
            if not isinstance(reply, AgentReply):
                reply = coerce_reply(reply)
            out.latencies_s.append(_latency(reply, wall))
            history.extend(assistant_messages(reply.reply, reply.calls, turn_index))
    except Exception as exc:  # the run boundary: this conversation stopped answering
        out.failures.append(f"{where} turn {turn_index + 1}: {describe_exception(exc, 1)}")
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
    speed: float,
    out: _Session,
) -> None:
    await asyncio.sleep(START_SPREAD_S * index / k)
    for transcript in transcripts:
        await _conversation(adapter, transcript, index, speed, out)


async def _repeat(
    plan: CapacityPlan,
    adapter: AgentAdapter,
    transcripts: Sequence[Transcript],
    k: int,
    repeat: int,
) -> RepeatResult:
    sessions = [_Session() for _ in range(k)]
    probe = LoopProbe()
    probe.start()
    timed_out = False
    tasks = [
        asyncio.create_task(_session(adapter, transcripts, i, k, plan.speed, sessions[i]))
        for i in range(k)
    ]
    try:
        async with asyncio.timeout(plan.step_timeout_s):
            await asyncio.gather(*tasks)
    except TimeoutError:
        timed_out = True
    finally:
        # Every session ends here, its conversations closed, whether the step finished, ran
        # out of time or was interrupted (Ctrl-C cancels this task; that goes on upwards).
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        measure = await probe.stop()
    audio = sum(transcript_audio_s(t) for t in transcripts) * k
    return RepeatResult(
        k=k,
        repeat=repeat,
        latencies_s=tuple(lat for s in sessions for lat in s.latencies_s),
        failures=tuple(f for s in sessions for f in s.failures),
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
) -> None:
    """Run the plan's steps into ``results``. After the first step over budget it stops, when
    the plan says so, then halves the gap to the last step within budget ``refine`` times.
    One unmeasured conversation first warms the agent up (model loads, caches)."""
    await _prepare(adapter, transcripts)
    await _conversation(adapter, transcripts[0], 0, plan.speed, _Session())
    good, over = 0, None
    for k in plan.steps:
        if await _step(plan, adapter, transcripts, k, results, on_event):
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
        if await _step(plan, adapter, transcripts, k, results, on_event):
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
) -> bool:
    """Run step ``k`` ``repeats`` times into ``results``; True when it is within budget."""
    step: list[RepeatResult] = []
    for repeat in range(plan.repeats):
        on_event(StepEvent(k, repeat, plan.repeats))
        result = await _repeat(plan, adapter, transcripts, k, repeat)
        step.append(result)
        results.append(result)
        on_event(StepEvent(k, repeat, plan.repeats, result))
    return summarize(k, step, plan.p95_latency_ms, plan.loop_lag_ms).within_budget
