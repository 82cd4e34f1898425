"""Run a transcript N times against an adapter and aggregate the verdict.

Flow of `run_transcript`:

1. ``adapter.prepare(transcript)`` once, if the adapter has it; its exception propagates (the
   input is unusable, no run could succeed).
2. Up to ``concurrency`` runs in flight. Each run opens its own conversation, reads what the
   agent said before turn 1 (``conversation.greeting()``, when the conversation has it) and
   checks it against the transcript's ``greeting:``, feeds the turns in order, evaluates each
   reply with every evaluator, and always closes the conversation.
3. Each run ends as passed, CRASHED, FAIL or ERROR (`models.Verdict`; docs/reports.md, "Run
   outcomes", has the table). CRASHED (a FAIL of its own kind): the agent's own exception in a
   turn (`Crash.of` finds its frame), an agent raising `SystemExit` (an agent must not end the
   test process), an `AgentCrashError` an adapter raised while starting, in the greeting, a
   turn or the close (a hook that raised, an error the session could not recover from). FAIL:
   a turn longer than its ``turn_timeout_s``, an `AgentFailedError` (an agent that never
   answered, or never heard the caller under the turn's audio conditions), a check that said
   no. ERROR, the agent not evaluated: any other exception while starting the conversation,
   reading its greeting or closing it, any other `AgentEvalError` raised in a turn (our adapter
   or code could not drive or observe the agent: a worker that died, a fixture we refused), a
   check that could not decide (an evaluator that raised, a judge that was down). No run
   touches the others.
4. With ``early_stop``, no new run starts once the verdict is settled either way (one ERROR
   run settles it: the eval is an ERROR).
5. The test passes when no run is an ERROR, no run crashed (unless ``crashes_fail`` is off:
   then a crash is an ordinary FAIL) and passed runs / runs >= threshold; the score is passed
   runs / evaluated runs (ERROR runs left out).
6. Every string of the result is made safe to record (`_sanitize.scrub`): lone surrogates
   become U+FFFD and secrets are redacted, so reports, JUnit and xdist can carry it.

Where a run's turns come from is a `RunScript`: by default the transcript's turns in order; a
simulation (`pytest_agent_eval.simulation`) passes ``scripts=`` whose turns a simulated caller
writes as the conversation goes, and which judges the whole conversation once it is over. The
run boundary above (start, greeting, turns, close, ERROR or FAIL) is the same for both.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import json
import re
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ._config import DEFAULT_CONCURRENCY, DEFAULT_TURN_TIMEOUT_S, JudgeSettings, Settings
from ._expectations import (
    build_call_checks,
    build_evaluators,
    build_greeting_checks,
    build_result_checks,
)
from ._expectations._keypad import refuse_keys_alone
from ._far_end import FarEndScript, refuse_unplayable
from ._problems import transcript_problems
from ._sanitize import scrub
from .adapters._turn_timeout import TurnDeadlineError, turn_timeout_message
from .adapters.base import (
    AgentAdapter,
    Conversation,
    ConversationInfo,
    TurnInput,
    as_adapter,
    coerce_reply,
)
from .errors import (
    AdapterError,
    AgentCrashError,
    AgentEvalError,
    AgentFailedError,
    MissingExtraError,
    TranscriptError,
)
from .evaluators._base import Evaluator, evaluate_safely, evaluator_name, source_of
from .evaluators._call import evaluate_call
from .models import (
    AgentReply,
    Crash,
    EvalResult,
    Greeting,
    Message,
    RunResult,
    ToolCall,
    Transcript,
    TranscriptResult,
    TurnContext,
    TurnResult,
    describe_conditions,
    passes_needed,
)
from .voice._speech import spoken_text

__all__ = [
    "RunScript",
    "RunSettings",
    "assistant_messages",
    "crash_of",
    "describe_exception",
    "heard_wer",
    "passes_needed",
    "run_transcript",
    "turn_evaluators",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class RunSettings:
    """How to run a transcript (as opposed to what it says)."""

    concurrency: int = DEFAULT_CONCURRENCY
    """Most runs in flight at once."""
    early_stop: bool = False
    """Stop starting runs once the verdict cannot change."""
    judge: JudgeSettings = field(default_factory=JudgeSettings)
    """Model, retries, timeout and cache for judges."""
    save_audio_dir: Path | None = None
    """Where voice adapters save the exact audio each turn streamed (`ConversationInfo`)."""
    turn_timeout_s: float = DEFAULT_TURN_TIMEOUT_S
    """Seconds one agent turn may take (a transcript's own ``turn_timeout_s`` wins)."""
    speed: float | None = None
    """How fast voice adapters stream audio (`ConversationInfo.speed`); None: their own."""
    crashes_fail: bool = True
    """A run that crashed fails the eval whatever its pass rate (``crashes_fail_gates``)."""

    @classmethod
    def from_settings(
        cls, settings: Settings, *, judge_model: Any = None, turn_timeout_s: float | None = None
    ) -> RunSettings:
        """The run settings ``[tool.agent_eval]`` asks for; ``judge_model`` (from the
        ``llm_eval_judge_model`` fixture or ``agent_eval.run``) wins over the configured one,
        as ``turn_timeout_s`` (from the ``agent_eval`` marker) does."""
        judge = settings.judge
        if judge_model is not None:
            judge = replace(judge, model=judge_model)
        return cls(
            concurrency=settings.concurrency,
            early_stop=settings.early_stop,
            judge=judge,
            save_audio_dir=settings.save_audio_path,
            turn_timeout_s=turn_timeout_s or settings.turn_timeout_s,
            speed=settings.speed,
            crashes_fail=settings.crashes_fail_gates,
        )


class RunScript(Protocol):
    """Where the turns of one run come from, and what happens once the conversation is over.

    The runner asks `next_turn` before each turn and runs the turn it returns like any other
    (its evaluators, its timeout, its ERROR or FAIL); `finish` is called once, after the
    conversation is closed. A transcript's script gives its turns in order and does nothing at
    the end; a simulation's writes each turn from the conversation so far and judges the whole
    conversation at the end.
    """

    transcript: Transcript
    """What the adapter is told the run is (`ConversationInfo.transcript`). Before
    `next_turn` returns evaluators, ``transcript.turns[len(run.turns)]`` is the turn to run."""

    async def next_turn(
        self, run: RunResult, history: Sequence[Message]
    ) -> Sequence[Evaluator] | None:
        """The evaluators of the next turn (the turn itself is put in ``transcript.turns``),
        or None when the conversation is over. ``run`` holds the turns so far and the
        greeting. An exception ends the run as an ERROR with its message: the agent was not
        what failed."""
        ...

    async def finish(self, run: RunResult) -> None:
        """Called once after the conversation closed (also after a failed turn): a simulation
        judges the conversation here. An exception makes the run an ERROR."""
        ...


@dataclass(slots=True)
class _TranscriptScript:
    """The turns of a transcript, in order, each with its prebuilt evaluators."""

    transcript: Transcript
    evaluators: Sequence[Sequence[Evaluator]]
    call_checks: Sequence[Any] = ()

    async def next_turn(
        self, run: RunResult, history: Sequence[Message]
    ) -> Sequence[Evaluator] | None:
        index = len(run.turns)
        return self.evaluators[index] if index < len(self.transcript.turns) else None

    async def finish(self, run: RunResult) -> None:
        run.evaluations += await evaluate_call(self.call_checks, run)


def crash_of(exc: BaseException) -> Crash:
    """The `Crash` an exception from the agent stands for: an `AgentCrashError` carries what
    its adapter saw; any other exception is the agent's own, found in its traceback."""
    if isinstance(exc, AgentCrashError):
        return Crash(type=exc.kind, message=exc.detail, where=exc.where)
    if isinstance(exc, SystemExit):
        return Crash(type="SystemExit", message=str(exc.code), where=Crash.of(exc).where)
    return Crash.of(exc)


def _notes(exc: BaseException) -> str:
    """What was noted on ``exc`` (a close after a failed start that failed too), as
    ``"; note"`` each."""
    return "".join(f"; {note}" for note in getattr(exc, "__notes__", ()))


def describe_exception(exc: BaseException, frames: int = 3) -> str:
    """``ValueError: boom`` plus the innermost frames, for results and reports."""
    if isinstance(exc, SystemExit):
        return (
            f"the agent raised SystemExit({exc.code!r}): an agent must not end the test process; "
            "raise an exception or return an error reply instead"
        )
    head = f"{type(exc).__name__}: {exc}".rstrip(": ")
    stack = traceback.extract_tb(exc.__traceback__)[-frames:]
    if not stack:
        return head
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(stack))
    return f"{head} (at {where})"


async def run_transcript(
    transcript: Transcript,
    agent: Any,
    *,
    settings: RunSettings | None = None,
    on_run_done: Callable[[RunResult], None] | None = None,
    on_turn_start: Callable[[int, int], None] | None = None,
    scripts: Callable[[int], RunScript] | None = None,
) -> TranscriptResult:
    """Run ``transcript.runs`` conversations with ``agent`` and aggregate them.

    Args:
        transcript: What to say and what to expect.
        agent: An `AgentAdapter`, or an agent callable (wrapped in `CallableAdapter`).
        settings: Concurrency, early stop and judge settings.
        on_run_done: Called after each finished run (progress reporting).
        on_turn_start: Called with (run index, turn index) as each turn starts (progress).
        scripts: The `RunScript` of each run, by run index; default: the transcript's turns
            in order (a simulation passes its own; the transcript then holds its scripted
            opening turns, possibly none).

    Returns:
        The aggregated result; runs are ordered by index.

    Raises:
        TranscriptError: For a transcript without turns, one with variants (expand it first),
            or with audio conditions or interruptions that cannot work (before the agent is
            touched).
    """
    settings = settings or RunSettings()
    if not transcript.turns and scripts is None and transcript.far_end is None:
        raise TranscriptError(
            f"transcript {transcript.id!r} has no turns, so there is nothing to run; add at "
            "least one Turn(...) to its turns"
        )
    _check_transcript(transcript)
    adapter = as_adapter(agent)
    refuse_unplayable(transcript, adapter)
    refuse_keys_alone(transcript, adapter)
    await _prepare(adapter, transcript)

    if scripts is None:
        evaluators = [
            turn_evaluators(transcript, i, settings) for i in range(len(transcript.turns))
        ]

        call_checks = build_call_checks(transcript)
        far_end = transcript.far_end

        def scripts(index: int) -> RunScript:
            if far_end is not None:  # the far end drives the call (an outbound agent)
                scripted = list(zip(transcript.turns, evaluators, strict=True))
                return FarEndScript.of(transcript, far_end, scripted, call_checks)
            return _TranscriptScript(transcript, evaluators, call_checks)

    script_for = scripts
    result_checks = build_result_checks(transcript)
    greeting_checks = build_greeting_checks(transcript)
    timeout_s = transcript.turn_timeout_s or settings.turn_timeout_s
    planned = transcript.runs
    needed = passes_needed(transcript.threshold, planned)
    results: list[RunResult] = []
    passed = failed = errored = crashed = 0

    def settled() -> bool:
        # At least one run always happens, also when threshold 0 needs no passes at all.
        decided = passed >= needed or planned - failed < needed or errored > 0 or crashed > 0
        return settings.early_stop and passed + failed > 0 and decided

    def in_flight_limit() -> int:
        if not settings.early_stop:
            return concurrency
        # Never more runs in flight than could still be needed to settle the verdict: if they
        # all go the same way, none of them is wasted.
        to_settle = min(needed - passed, planned - needed + 1 - failed)
        return max(1, min(concurrency, to_settle))

    started = time.perf_counter()
    pending: set[asyncio.Task[RunResult]] = set()
    started_tasks: list[asyncio.Task[RunResult]] = []
    concurrency = max(1, settings.concurrency)
    next_index = 0
    try:
        while next_index < planned or pending:
            while next_index < planned and len(pending) < in_flight_limit() and not settled():
                task = asyncio.create_task(
                    _run_once(
                        script_for(next_index),
                        adapter,
                        next_index,
                        timeout_s,
                        greeting_checks,
                        save_audio_dir=settings.save_audio_dir,
                        speed=settings.speed,
                        on_turn_start=on_turn_start,
                    )
                )
                pending.add(task)
                started_tasks.append(task)
                next_index += 1
            if not pending:
                break
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for task in done:
                run = task.result()
                results.append(run)
                passed += run.passed
                failed += not run.passed
                errored += run.verdict == "error"
                crashed += run.verdict == "crashed" and settings.crashes_fail
                if on_run_done is not None:
                    on_run_done(run)
    finally:
        # On the way out (a skip or exit raised by the agent, or cancellation), stop the runs
        # still in flight and collect every task's outcome so none is left unretrieved.
        for task in pending:
            task.cancel()
        await asyncio.gather(*started_tasks, return_exceptions=True)

    results.sort(key=lambda r: r.index)
    evaluated = len(results) - errored
    score = passed / evaluated if evaluated else 0.0
    result = TranscriptResult(
        # With every run done this is score >= threshold; after an early stop, the settled
        # verdict. A run that could not evaluate the agent leaves the verdict unreached.
        passed=passed >= needed and not errored and not crashed,
        score=score,
        threshold=transcript.threshold,
        runs=results,
        transcript_id=transcript.id,
        planned_runs=planned,
        tags=list(transcript.tags),
        duration_s=time.perf_counter() - started,
        variant=transcript.variant,
        base_id=transcript.base_id,
        crashes_fail=settings.crashes_fail,
    )
    if result_checks:
        result.checks = [await _check_result(c, result) for c in result_checks]
        result.passed = result.passed and all(c.passed for c in result.checks)
    return scrub(result)  # type: ignore[no-any-return]


async def _check_result(check: Any, result: TranscriptResult) -> Any:
    """One check of the whole result; an exception is an errored verdict, as for a turn."""
    name = getattr(check, "name", type(check).__name__)
    try:
        verdict = check.evaluate(result)
        if inspect.isawaitable(verdict):
            verdict = await verdict
    except Exception as exc:  # the result boundary: record, don't raise
        return EvalResult(False, f"check raised {describe_exception(exc)}", name=name, errored=True)
    return verdict


async def _prepare(adapter: AgentAdapter, transcript: Transcript) -> None:
    """``adapter.prepare(transcript)`` when the adapter has it. Any exception means no run
    can start, so the eval is an ERROR: ours pass through, anything else becomes an
    `AdapterError` naming the adapter and the transcript."""
    prepare = getattr(adapter, "prepare", None)
    if not callable(prepare):
        return
    try:
        await prepare(transcript)
    except AgentEvalError:
        raise
    except Exception as exc:  # the adapter's boundary: no run could start
        raise AdapterError(
            f"transcript {transcript.id!r}: {type(adapter).__name__}.prepare() failed, so no "
            f"run could start: {describe_exception(exc)}"
        ) from exc


def _check_transcript(transcript: Transcript) -> None:
    """Variants must be expanded, and the transcript must have no problem
    (`transcript_problems`; the loader raised them for YAML files already, this covers
    transcripts built in Python), before the adapter or the agent is touched."""
    for made, what in ((transcript.variants, "variants"), (transcript.cases, "cases")):
        if made:
            raise TranscriptError(
                f"transcript {transcript.id!r} has {what}, which make one test each; run each "
                "of pytest_agent_eval.expand(transcript) instead"
            )
    for found in transcript_problems(transcript):
        raise found.in_python(transcript.id)


def turn_evaluators(transcript: Transcript, index: int, settings: RunSettings) -> list[Evaluator]:
    """The evaluators of turn ``index``: its expectations' checks (judges with the session's
    judge settings), each naming its key and line.

    Raises:
        TranscriptError: A regex of the turn does not compile.
    """
    turn = transcript.turns[index]
    try:
        built = build_evaluators(turn.expect, settings.judge, turn=turn)
    except re.error as exc:
        raise TranscriptError(
            f"transcript {transcript.id!r}, turn {index + 1}: invalid regex '{exc.pattern!s}': {exc}"
        ) from exc
    return [_with_session_judge_settings(e, settings.judge) for e in built]


async def check_again(
    transcript: Transcript,
    ctx: TurnContext,
    checks: set[str],
    settings: RunSettings,
) -> list[EvalResult]:
    """The verdicts, once more, of the checks of turn ``ctx.turn_index`` named in ``checks``
    (a check's key, ``turns[0].expect.judge``, or a user evaluator's name) on ``ctx``: failure
    attribution asks a judge again about the reply the run recorded."""
    wanted = [
        e
        for e in turn_evaluators(transcript, ctx.turn_index, settings)
        if ((source.path(ctx) if (source := source_of(e)) else evaluator_name(e)) in checks)
    ]
    return list(await asyncio.gather(*(evaluate_safely(e, ctx) for e in wanted)))


def _with_session_judge_settings(evaluator: Any, judge: JudgeSettings) -> Any:
    """A judge built in Python without ``settings`` gets the session's (``judge_model``,
    retries, timeout, cache), as YAML judges do; every other evaluator is returned as it is."""
    if (
        dataclasses.is_dataclass(evaluator)
        and not isinstance(evaluator, type)
        and "settings" in {f.name for f in dataclasses.fields(evaluator)}
        and getattr(evaluator, "settings", ...) is None
        and hasattr(evaluator, "judge_settings")
    ):
        return replace(evaluator, settings=judge)
    return evaluator


async def _greeting_of(conversation: Conversation) -> Greeting | None:
    """``conversation.greeting()`` when the conversation offers it (sync or async), else None."""
    method = getattr(conversation, "greeting", None)
    if not callable(method):
        return None
    greeting = method()
    if inspect.isawaitable(greeting):
        greeting = await greeting
    if greeting is not None and not isinstance(greeting, Greeting):
        raise AdapterError(
            f"{type(conversation).__name__}.greeting() returned {type(greeting).__name__}; "
            "expected a Greeting or None"
        )
    return greeting


async def _run_once(
    script: RunScript,
    adapter: AgentAdapter,
    index: int,
    timeout_s: float,
    greeting_checks: Sequence[Any] = (),
    *,
    save_audio_dir: Path | None = None,
    speed: float | None = None,
    on_turn_start: Callable[[int, int], None] | None = None,
) -> RunResult:
    started = time.perf_counter()
    run = RunResult(index=index)
    try:
        conversation = await adapter.start_conversation(
            ConversationInfo(
                transcript=script.transcript,
                run_index=index,
                save_audio_dir=save_audio_dir,
                speed=speed,
            )
        )
    except AgentCrashError as exc:  # the agent crashed as its session started (a hook)
        run.error = f"starting the conversation: {exc}{_notes(exc)}"
        run.crash = crash_of(exc)
        run.duration_s = time.perf_counter() - started
        await _finish(script, run)
        return run
    except (Exception, SystemExit) as exc:  # the run boundary: the agent was never reached
        run.error = f"starting the conversation failed: {describe_exception(exc)}{_notes(exc)}"
        run.errored = True
        run.duration_s = time.perf_counter() - started
        await _finish(script, run)
        return run
    history: list[Message] = []
    try:
        try:
            run.greeting = await _greeting_of(conversation)
        except AgentCrashError as exc:  # the agent crashed before turn 1 (its on_enter)
            run.error, run.crash = f"before turn 1: {exc}", crash_of(exc)
            return run
        except Exception as exc:  # the run boundary: the conversation could not be observed
            run.error = f"reading the greeting failed: {describe_exception(exc)}"
            run.errored = True
            return run
        if greeting_checks:
            run.greeting_evaluations = list(
                await asyncio.gather(*(evaluate_safely(c, run.greeting) for c in greeting_checks))
            )
        while True:
            try:
                evaluators = await script.next_turn(run, list(history))
            except AgentEvalError as exc:  # the script (a simulated caller) could not go on
                run.error, run.errored = str(exc), True
                break
            except Exception as exc:  # the run boundary: our side failed, not the agent
                run.error = f"preparing turn {len(run.turns) + 1} failed: {describe_exception(exc)}"
                run.errored = True
                break
            if evaluators is None:
                break
            turn_index = len(run.turns)
            if on_turn_start is not None:
                on_turn_start(index, turn_index)
            result = await _run_turn(
                script.transcript,
                conversation,
                turn_index,
                index,
                history,
                evaluators,
                timeout_s,
            )
            run.turns.append(result)
            if result.error is not None:
                break  # the conversation's state is unknown after an agent error
    finally:
        try:
            await conversation.aclose()
        except AgentCrashError as exc:  # the agent crashed after its last turn
            if run.error is None:
                run.error, run.crash = f"closing the conversation: {exc}", crash_of(exc)
        except (Exception, SystemExit) as exc:
            if run.error is None:
                run.error = f"closing the conversation failed: {describe_exception(exc)}"
                run.errored = True
        await _finish(script, run)
        run.duration_s = time.perf_counter() - started
    return run


async def _finish(script: RunScript, run: RunResult) -> None:
    """``script.finish(run)``; what it raises makes the run an ERROR (ours, not the agent's).
    Not called while the run is being cancelled (Ctrl-C, a stop): nothing is judged then."""
    task = asyncio.current_task()
    if task is not None and task.cancelling():
        return
    try:
        await script.finish(run)
    except Exception as exc:  # the run boundary
        if run.error is None:
            run.error = f"finishing the run failed: {describe_exception(exc)}"
            run.errored = True


async def _run_turn(
    transcript: Transcript,
    conversation: Conversation,
    turn_index: int,
    run_index: int,
    history: list[Message],
    evaluators: Sequence[Evaluator],
    timeout_s: float,
) -> TurnResult:
    turn = transcript.turns[turn_index]
    audio = Path(turn.audio) if turn.audio is not None else None
    # What the user says, without pause markers: they shape synthesized audio, not the words.
    words = spoken_text(turn.user)
    history.append(Message("user", words, audio=audio))
    audio_text = str(audio) if audio else None
    sent = TurnInput.of(
        transcript,
        turn_index,
        run_index,
        history=history,
        interrupted_by=TurnInput.interrupting(transcript, turn_index, run_index),
    )
    sent = dataclasses.replace(sent, timeout_s=timeout_s)
    described = describe_conditions(sent.conditions) or None
    started = time.perf_counter()
    deadline = asyncio.timeout(timeout_s)
    try:
        async with deadline:
            reply = await conversation.respond(sent)
        if not isinstance(reply, AgentReply):
            reply = coerce_reply(reply)
    except (Exception, SystemExit) as exc:  # the run boundary
        error = describe_exception(exc)
        # Our adapter or our code could not drive or observe the agent: an ERROR. The agent's
        # own exception (or one an adapter saw in the agent's code) is a crash; its timeout a
        # FAIL.
        crash: Crash | None = None
        errored = isinstance(exc, AgentEvalError) and not isinstance(
            exc, (AgentFailedError, AgentCrashError)
        )
        if isinstance(exc, AgentCrashError):
            error, crash = str(exc), crash_of(exc)
        elif isinstance(exc, TimeoutError) and deadline.expired():
            error = turn_timeout_message(timeout_s)
        elif isinstance(exc, TurnDeadlineError):  # the same deadline, on the agent's clock
            error = str(exc)
        elif not isinstance(exc, AgentEvalError):
            crash = crash_of(exc)
        return TurnResult(
            index=turn_index,
            user=turn.user,
            audio=audio_text,
            error=error,
            duration_s=time.perf_counter() - started,
            conditions=described,
            errored=errored,
            crash=crash,
        )
    if reply.wer is None and audio is not None and reply.heard is not None:
        reply.wer = heard_wer(words, reply.heard)

    ctx = TurnContext(
        user=words,
        history=list(history),
        turn_index=turn_index,
        run_index=run_index,
        transcript_id=transcript.id,
        audio=audio,
        **reply.agent_turn_values(),
    )
    evaluations = list(await asyncio.gather(*(evaluate_safely(e, ctx) for e in evaluators)))
    history.extend(assistant_messages(reply.reply, reply.calls, turn_index))
    return TurnResult(
        index=turn_index,
        user=turn.user,
        audio=audio_text,
        evaluations=evaluations,
        duration_s=time.perf_counter() - started,
        conditions=described,
        **reply.agent_turn_values(),
    )


def heard_wer(spoken: str, heard: str) -> float | None:
    """The word error rate of ``heard`` against ``spoken`` (number-aware, as ``--verify``
    scores), or None when the normalizer is not installed (heard_wer_max then errors, naming
    the extra)."""
    from .voice._wer import word_error_rate

    try:
        return round(word_error_rate(spoken, heard), 4)
    except MissingExtraError:
        return None


def assistant_messages(reply: str, calls: Sequence[ToolCall], turn_index: int) -> list[Message]:
    """The OpenAI-format messages for one agent turn: tool calls, their results, the reply.

    Earlier turns' tool calls and results stay in the history, so an agent (or a judge) sees
    what was done, not only what was said.
    """
    messages: list[Message] = []
    if calls:
        ids = [c.call_id or f"call_{turn_index}_{i}" for i, c in enumerate(calls)]
        messages.append(
            Message(
                "assistant",
                None,
                tool_calls=[
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {
                            "name": str(call),
                            "arguments": json.dumps(call.args or {}, default=str),
                        },
                    }
                    for call, call_id in zip(calls, ids, strict=True)
                ],
                uncaptured_args=frozenset(
                    call_id for call, call_id in zip(calls, ids, strict=True) if call.args is None
                ),
            )
        )
        for call, call_id in zip(calls, ids, strict=True):
            output = call.output
            content = output if isinstance(output, str) else json.dumps(output, default=str)
            messages.append(
                Message("tool", "" if output is None else content, tool_call_id=call_id)
            )
    messages.append(Message("assistant", reply))
    return messages
