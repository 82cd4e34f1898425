"""Results coming out: one check (`EvalResult`), a turn, a run, a transcript."""

from __future__ import annotations

import os
import sysconfig
import traceback
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeAlias

from .._serialize import from_json, to_json
from ._attribution import Attribution
from ._stats import percentile, score_and_threshold_text, wilson_interval
from ._turns import AgentTurn, Greeting, ToolCall, Usage, sum_usage

# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


__all__ = [
    "CallEnd",
    "Crash",
    "EvalResult",
    "RunResult",
    "SimulatedCaller",
    "TranscriptResult",
    "TurnResult",
    "Verdict",
]

Verdict: TypeAlias = Literal["passed", "failed", "crashed", "error"]
"""The outcome of a turn, a run or a transcript.

- ``passed``: every check passed.
- ``failed`` (FAIL): the agent did something wrong: a check said no, or the agent hung. Counted
  in pass rates; a passing gate may absorb it.
- ``crashed`` (FAIL, CRASHED): the agent crashed: an exception escaped its own code (a tool, a
  hook such as LiveKit's ``on_enter``, a Pipecat processor, a text agent's callable), or its
  session or pipeline hit an error it could not recover from. A FAIL, counted in pass rates
  like one, but other news than a wrong answer: the eval fails whatever its pass rate and no
  gate absorbs it, unless ``crashes_fail_gates = false`` says crashes are ordinary FAILs (then
  a transcript is ``failed`` or ``passed`` by its pass rate). The `Crash` says what and where.
- ``error`` (ERROR): the agent could not be evaluated: starting the conversation failed (the
  session factory, the adapter, a worker that never joined), our adapter or our code raised
  an ``AgentEvalError`` in a turn (a worker that crashed, a fixture we refused), or a check
  could not decide (a judge that was down). Never counted in a pass rate, never absorbed by a
  gate; the test is a pytest error.
"""


@dataclass
class Crash:
    """How the agent crashed: the exception that escaped its code, or the error its session or
    pipeline could not recover from. Reports print it as ``RuntimeError: boom (at
    agent.py:12 in on_enter)``.

    Args:
        type: The exception's class name (``RuntimeError``), or the framework's error kind.
        message: The exception's message.
        where: Where it was raised: ``file:line in function`` of the agent's innermost frame,
            or the framework's error source (``Pipecat processor LLMProcessor#0``); None when
            unknown.
    """

    type: str
    message: str = ""
    where: str | None = None

    def describe(self) -> str:
        """``RuntimeError: boom (at agent.py:12 in on_enter)``."""
        head = f"{self.type}: {self.message}" if self.message else self.type
        return f"{head} (at {self.where})" if self.where else head

    @classmethod
    def of(cls, exc: BaseException, *, where: str | None = None) -> Crash:
        """The crash an exception describes; ``where`` defaults to `agent_frame` of its
        traceback."""
        return cls(
            type=type(exc).__name__,
            message=str(exc),
            where=where or agent_frame(exc.__traceback__),
        )

    @classmethod
    def from_agent_code(cls, exc: BaseException, *, own: Iterable[str] = ()) -> Crash | None:
        """The crash, when ``exc`` came through the user's own code (a frame of its traceback
        is outside the standard library, the installed packages and ours, or inside one of
        ``own``: the installed packages the agent came from); None otherwise.

        A framework logs exceptions of its own too (a provider connection it reconnects):
        only one that passed through the agent's code is the agent's crash."""
        where = agent_frame(exc.__traceback__, fallback=False, own=own)
        if where is None:
            return None
        return cls(type=type(exc).__name__, message=str(exc), where=where)


def agent_frame(
    tb: TracebackType | None, *, fallback: bool = True, own: Iterable[str] = ()
) -> str | None:
    """``agent.py:12 in on_enter``: the innermost frame of ``tb`` in the user's code (not the
    standard library, an installed package or ours; an installed package among ``own``, the
    folders or files of the packages the agent came from, is the user's), else (with
    ``fallback``) the innermost frame; None for no traceback. That is where a user looks
    first."""
    frames = traceback.extract_tb(tb)
    if not frames:
        return None
    ours = str(Path(__file__).resolve().parents[1])
    stdlib = sysconfig.get_paths()["stdlib"]
    mine = tuple(own)

    def foreign(filename: str) -> bool:
        resolved = str(Path(filename).resolve())
        if any(resolved == root or resolved.startswith(root + os.sep) for root in mine):
            return False
        return (
            "site-packages" in resolved
            or "dist-packages" in resolved
            or resolved.startswith((ours, stdlib))
            or filename.startswith("<")
        )

    chosen = next((f for f in reversed(frames) if not foreign(f.filename)), None)
    if chosen is None and fallback:
        chosen = frames[-1]
    return (
        None if chosen is None else f"{Path(chosen.filename).name}:{chosen.lineno} in {chosen.name}"
    )


def _verdict(
    passed: bool,
    errored: bool,
    agent_failed: bool,
    evaluations: Iterable[EvalResult],
    crashed: bool = False,
) -> Verdict:
    """One rule for every level: a crash of the agent decides; then a definite failure of the
    agent; else an error; else failed (a result built by hand with ``passed=False``)."""
    if crashed:
        return "crashed"
    if passed:
        return "passed"
    evaluations = list(evaluations)
    if agent_failed or any(not e.passed and not e.errored for e in evaluations):
        return "failed"
    if errored or any(e.errored for e in evaluations):
        return "error"
    return "failed"


def _errored_check_reason(check: EvalResult) -> str:
    """``judge errored: 503 ...``: the check's name once (judges start their reasoning with
    it already)."""
    head = f"{check.name or 'a check'} errored"
    reasoning = check.reasoning or "no reason given"
    return reasoning if reasoning.startswith(head) else f"{head}: {reasoning}"


@dataclass
class EvalResult:
    """Result from a single evaluator on a single turn.

    Args:
        passed: The verdict.
        reasoning: Why; for failed deterministic checks, every failed check and what was seen.
        name: Which evaluator gave it (filled in by the runner when empty).
        errored: True when the evaluator could not decide (a judge that timed out, an
            evaluator that raised, ``traceback`` kept); always ``passed=False``. Not a "no".
        usage: Tokens the evaluator spent (judges).
        model: Id of the model that gave the verdict (judges), when known: reports name it
            and price its tokens.
        key: The transcript key the check comes from, as a path
            (``turns[0].expect.reply_contains_all``), filled in by the runner for the checks a
            transcript declares; None for the user's own evaluators.
        location: Where that key is written (``weather.yaml:11``), for a transcript loaded
            from YAML; None otherwise.
    """

    passed: bool
    reasoning: str = ""
    name: str = ""
    errored: bool = False
    usage: Usage | None = None
    model: str | None = None
    key: str | None = None
    location: str | None = None
    traceback: str | None = None

    @property
    def label(self) -> str:
        """How reports name the check: ``turns[0].expect.reply_contains_all (weather.yaml:11)``,
        its key alone without a location, else the evaluator's name."""
        if self.key and self.location:
            return f"{self.key} ({self.location})"
        return self.key or self.name or "check"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


@dataclass(repr=False)
class TurnResult(AgentTurn):
    """What happened in one turn of one run.

    The earlier package's keywords construct it too, and its names read:
    ``TurnResult(turn_index=0, passed=True, eval_results=[...])``, ``.turn_index``,
    ``.eval_results``. ``passed`` is computed; an explicit ``passed=False`` fails the turn (the
    reason goes in ``error``), and ``passed=True`` cannot make a failed turn pass (a
    `UserWarning` says why).

    Args:
        index: Zero-based turn index.
        user: The user text.
        reply: The agent's reply ("" when the turn errored before a reply).
        tool_calls: The tool calls with their arguments.
        evaluations: Every evaluator's verdict, in order.
        error: Short description of an exception in the agent or adapter, if any.
        duration_s: Wall time of the turn (agent plus evaluators).
        audio: The audio fixture streamed for this turn, if any.
        heard: What the agent's speech recognizer heard; see `AgentTurn` for this and the
            fields below.
        latency_s: End of user speech to first reply text.
        first_audio_latency_s: End of user speech to first reply audio.
        usage: Tokens the agent spent in this turn.
        audio_out: Reply audio saved by the adapter, if any.
        metadata: Adapter-specific extras from `AgentReply.metadata`.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
        conditions: The audio conditions the turn's audio went through, described
            (``noise(color=pink, snr_db=10), telephone(...)``); None for none.
        errored: True when ``error`` kept the agent from being evaluated (our adapter, the
            session around the agent, a fixture our code refused: an ``AgentEvalError``), so
            the turn is an ERROR; False when the agent itself failed (a timeout: a FAIL; its
            own exception: ``crash`` is set and the turn is CRASHED). See `Verdict`.
        crash: How the agent crashed in this turn (its own exception, an error its session
            could not recover from), or None; ``error`` then describes it too and the turn is
            ``crashed``.
    """

    index: int
    user: str = ""
    reply: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    evaluations: list[EvalResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    audio: str | None = None
    conditions: str | None = None
    errored: bool = False
    crash: Crash | None = None

    @property
    def passed(self) -> bool:
        """No error, no crash and every evaluation passed."""
        return self.error is None and self.crash is None and all(e.passed for e in self.evaluations)

    @property
    def verdict(self) -> Verdict:
        """``passed``; ``crashed`` when the agent crashed (`crash`); ``failed`` when the agent
        failed (its error, a check that said no); ``error`` when the turn could not evaluate
        the agent (an errored turn, or checks that only errored)."""
        return _verdict(
            self.passed,
            self.errored,
            self.error is not None and not self.errored,
            self.evaluations,
            crashed=self.crash is not None,
        )

    @property
    def turn_index(self) -> int:
        """``index``, by the earlier package's name."""
        return self.index

    @turn_index.setter
    def turn_index(self, value: int) -> None:
        self.index = value

    @property
    def eval_results(self) -> list[EvalResult]:
        """``evaluations``, by the earlier package's name."""
        return self.evaluations

    @eval_results.setter
    def eval_results(self, value: list[EvalResult]) -> None:
        self.evaluations = value

    def _fail_by_caller(self, why: str) -> None:
        self.error = self.error or why

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens spent by this turn's judges."""
        return sum_usage(e.usage for e in self.evaluations)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


CallEnd: TypeAlias = Literal["caller", "max_turns", "agent", "error"]
"""Who or what ended a simulated conversation: the simulated caller (through its tool), the
``max_turns`` limit, the agent (it hung up), or an error (a turn or the caller failed)."""


@dataclass
class SimulatedCaller:
    """What the simulated caller of one run did, and how the conversation ended.

    A simulated run's turns are ordinary `TurnResult` s (the caller's words are each turn's
    ``user``, its synthesized speech the turn's ``audio``); this record says the rest, for the
    reports: who ended the call and why, how many turns were scripted and how many the caller
    wrote, and what the caller cost.

    Args:
        persona: Who the caller played.
        goal: What the caller wanted ("" when the persona says it).
        ended_by: See `CallEnd`.
        outcome: The caller's own word when it ended the call: ``goal_reached`` or
            ``gave_up``; None when something else ended it.
        reason: Why it ended, in words (the caller's reason, the limit, the error).
        scripted_turns: Turns written in the simulation file, run before the caller's own.
        simulated_turns: Turns the caller wrote.
        min_turns: The earliest turn after which the caller could end the call.
        max_turns: The most turns the conversation could have.
        model: Id of the caller's model.
        requests: Model requests the caller made in this run (0 when every turn was replayed
            from the caller cache).
        cached_turns: Caller turns replayed from the cache.
        cached_verdicts: Criteria verdicts replayed from the cache.
        recorded_at: When the oldest of the replayed turns and verdicts was recorded (UTC),
            None when nothing was replayed (or the entries did not say): a replay shows a
            model as it answered then, not as it answers now.
        usage: Tokens the caller spent (None when it made no request).
        not_judged: Why the criteria were not judged (the conversation broke off), or None.
    """

    persona: str = ""
    goal: str = ""
    ended_by: CallEnd = "max_turns"
    outcome: Literal["goal_reached", "gave_up"] | None = None
    reason: str = ""
    scripted_turns: int = 0
    simulated_turns: int = 0
    min_turns: int = 1
    max_turns: int = 1
    model: str | None = None
    requests: int = 0
    cached_turns: int = 0
    cached_verdicts: int = 0
    recorded_at: str | None = None
    usage: Usage | None = None
    not_judged: str | None = None

    def note_recorded(self, when: str | None) -> None:
        """Keep the oldest recording time of what this run replayed."""
        if when is not None and (self.recorded_at is None or when < self.recorded_at):
            self.recorded_at = when

    @property
    def turns(self) -> int:
        """Every user turn of the conversation, scripted and simulated."""
        return self.scripted_turns + self.simulated_turns


@dataclass
class RunResult:
    """One execution of a whole transcript.

    The earlier package's keywords construct it too, and its names read:
    ``RunResult(run_index=0, passed=True, turn_results=[...])``, ``.run_index``,
    ``.turn_results``; an explicit ``passed`` combines with the computed verdict as for
    `TurnResult` (a run without turns never passes).

    Args:
        index: Zero-based run index.
        turns: Results of the turns that ran (a run stops at the first turn that errors).
        error: An error outside any turn (starting or closing the conversation), if any.
        duration_s: Wall time of the run.
        greeting: What the agent said and did before turn 1, from adapters that observe it
            (None: the adapter does not).
        greeting_evaluations: The verdicts of the transcript's ``greeting:`` checks.
        errored: True when ``error`` kept the agent from being evaluated (starting the
            conversation, reading the greeting or closing it failed), so the run is an
            ERROR; see `verdict`.
        evaluations: Checks of the whole conversation, judged once after its last turn (a
            simulation's criteria, each with its verdict and reason).
        simulation: What the simulated caller did and how the conversation ended, for a run
            of a simulation; None for a transcript's run.
        crash: How the agent crashed outside any turn (before its greeting, while the
            conversation closed), or None; a turn's crash is on the turn. See `crashes`.
        attribution: Why a failed voice run failed (`Attribution`), when attribution ran
            (``attribute``); None otherwise. It never changes the verdict.
    """

    index: int
    turns: list[TurnResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    greeting: Greeting | None = None
    greeting_evaluations: list[EvalResult] = field(default_factory=list)
    errored: bool = False
    evaluations: list[EvalResult] = field(default_factory=list)
    simulation: SimulatedCaller | None = None
    crash: Crash | None = None
    attribution: Attribution | None = None

    @property
    def crashes(self) -> list[tuple[int | None, Crash]]:
        """Every crash of the run, as ``(turn index, crash)``; the index is None for the run's
        own (outside any turn)."""
        found: list[tuple[int | None, Crash]] = [
            (t.index, t.crash) for t in self.turns if t.crash is not None
        ]
        if self.crash is not None:
            found.append((None, self.crash))
        return found

    @property
    def crash_reason(self) -> str | None:
        """``turn 2: RuntimeError: boom (at agent.py:12 in on_enter)``: the run's first crash,
        or None when it did not crash."""
        crashes = self.crashes
        if not crashes:
            return None
        index, crash = crashes[0]
        return ("" if index is None else f"turn {index + 1}: ") + crash.describe()

    @property
    def passed(self) -> bool:
        """True when the run had no error and no crash, every turn passed, and so did the
        greeting checks and the checks of the whole conversation."""
        return (
            self.error is None
            and self.crash is None
            and bool(self.turns)
            and all(t.passed for t in self.turns)
            and all(e.passed for e in self.greeting_evaluations)
            and all(e.passed for e in self.evaluations)
        )

    @property
    def verdict(self) -> Verdict:
        """The run's outcome, one of `Verdict`.

        ``crashed`` when the agent crashed in it (`crashes`), whatever else happened.
        ``failed`` as soon as the agent demonstrably did something wrong in it (a turn's own
        error, a check that said no), even if something else errored too: that run is decided.
        Otherwise ``error`` when anything errored (the run's own ``errored`` error, an errored
        turn, a check that could not decide): such a run says nothing about the agent and is
        left out of the score.
        """
        turns_errored = any(t.errored for t in self.turns)
        agent_failed = any(t.error is not None and not t.errored for t in self.turns) or (
            self.error is not None and not self.errored
        )
        return _verdict(
            self.passed,
            self.errored or turns_errored,
            agent_failed,
            [
                *self.greeting_evaluations,
                *(e for t in self.turns for e in t.evaluations),
                *self.evaluations,
            ],
            crashed=bool(self.crashes),
        )

    @property
    def error_reason(self) -> str | None:
        """Why the run is an ERROR (its own error, the errored turn's, or the first errored
        check's), or None when it is not one."""
        if self.verdict != "error":
            return None
        if self.errored and self.error:
            return self.error
        for turn in self.turns:
            if turn.errored and turn.error:
                return f"turn {turn.index + 1}: {turn.error}"
        return _errored_check_reason(self.errored_evaluations[0])

    @property
    def errored_evaluations(self) -> list[EvalResult]:
        """Every check of the run that errored, greeting first, in turn order, then the checks
        of the whole conversation."""
        return [
            e
            for e in (
                *self.greeting_evaluations,
                *(e for t in self.turns for e in t.evaluations),
                *self.evaluations,
            )
            if e.errored
        ]

    @property
    def run_index(self) -> int:
        """``index``, by the earlier package's name."""
        return self.index

    @run_index.setter
    def run_index(self, value: int) -> None:
        self.index = value

    @property
    def turn_results(self) -> list[TurnResult]:
        """``turns``, by the earlier package's name."""
        return self.turns

    @turn_results.setter
    def turn_results(self, value: list[TurnResult]) -> None:
        self.turns = value

    def _fail_by_caller(self, why: str) -> None:
        self.error = self.error or why

    @property
    def agent_usage(self) -> Usage | None:
        """Tokens the agent spent over the run."""
        return sum_usage(t.usage for t in self.turns)

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens the judges spent over the run (the turns' and the whole conversation's)."""
        return sum_usage(
            [*(t.judge_usage for t in self.turns), *(e.usage for e in self.evaluations)]
        )

    @property
    def caller_usage(self) -> Usage | None:
        """Tokens a simulated caller spent over the run (None for a transcript's run)."""
        return self.simulation.usage if self.simulation is not None else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


@dataclass
class TranscriptResult:
    """Aggregated result across all runs of a transcript.

    Args:
        passed: True if score >= threshold and no run is an ERROR.
        score: Fraction of the evaluated runs that passed (0.0-1.0); ERROR runs (`Verdict`)
            are left out.
        threshold: Required pass fraction.
        runs: Individual run results.
        transcript_id: Id of the transcript.
        planned_runs: Runs asked for; more than ``len(runs)`` when early stop saved some.
        tags: The transcript's tags.
        duration_s: Wall time of all runs.
        checks: Verdicts on the whole result (``latency_p95_ms_max``); the result passes only
            when every one passed too.
        variant: The audio variant the transcript ran as (``phone``), or None.
        base_id: The transcript's id before expansion (``booking`` for ``booking[phone]``),
            or None when it was not expanded.
        crashes_fail: True (the default, ``crashes_fail_gates``) when a run that crashed
            fails the eval whatever the pass rate, and its verdict is ``crashed``; False when
            a crash is an ordinary FAIL of its run.
    """

    passed: bool
    score: float
    threshold: float
    runs: list[RunResult]
    transcript_id: str = ""
    planned_runs: int | None = None
    tags: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    checks: list[EvalResult] = field(default_factory=list)
    variant: str | None = None
    base_id: str | None = None
    crashes_fail: bool = True

    @property
    def crashed_runs(self) -> list[RunResult]:
        """The runs in which the agent crashed (``verdict == "crashed"``), in order."""
        return [r for r in self.runs if r.verdict == "crashed"]

    @property
    def crash_reason(self) -> str | None:
        """``1 of 3 run(s) crashed: run 2, turn 1: RuntimeError: boom (at agent.py:12 in
        on_enter)``, or None when no run crashed."""
        crashed = self.crashed_runs
        if not crashed:
            return None
        first = crashed[0]
        return (
            f"{len(crashed)} of {len(self.runs)} run(s) crashed: run {first.index + 1}, "
            f"{first.crash_reason}"
        )

    @property
    def passed_run_count(self) -> int:
        """Number of runs that passed."""
        return sum(r.passed for r in self.runs)

    @property
    def saved_runs(self) -> int:
        """Runs not started because the verdict could no longer change (early stop)."""
        if self.planned_runs is None:
            return 0
        return max(0, self.planned_runs - len(self.runs))

    @property
    def errored_run_count(self) -> int:
        """Runs that could not evaluate the agent (``verdict == "error"``)."""
        return sum(r.verdict == "error" for r in self.runs)

    @property
    def evaluated_runs(self) -> list[RunResult]:
        """The runs that evaluated the agent (passed or failed), in order."""
        return [r for r in self.runs if r.verdict != "error"]

    @property
    def evaluated_run_count(self) -> int:
        """Runs that evaluated the agent (passed or failed): what the score is a fraction of."""
        return len(self.runs) - self.errored_run_count

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval on the pass rate (over the evaluated runs)."""
        return wilson_interval(self.passed_run_count, self.evaluated_run_count)

    @property
    def turn_latencies_s(self) -> list[float]:
        """Every measured voice-turn latency (turns that streamed audio), across the runs that
        evaluated the agent: an ERROR run is left out of the latency as it is of the score."""
        return [
            t.latency_s
            for r in self.evaluated_runs
            for t in r.turns
            if t.latency_s is not None and t.audio is not None
        ]

    @property
    def p95_latency_s(self) -> float | None:
        """95th percentile of turn latency (nearest rank), or None when nothing was measured."""
        return percentile(self.turn_latencies_s, 95)

    @property
    def p50_latency_s(self) -> float | None:
        """Median turn latency (nearest rank), or None when nothing was measured."""
        return percentile(self.turn_latencies_s, 50)

    def turn_latency_percentiles(self) -> list[tuple[int, int, float, float]]:
        """Per voice turn over all runs: ``(turn_index, measured, p50_s, p95_s)``, in turn order,
        for the turns with at least one measured latency."""
        by_turn: dict[int, list[float]] = {}
        for run in self.evaluated_runs:
            for turn in run.turns:
                if turn.latency_s is not None and turn.audio is not None:
                    by_turn.setdefault(turn.index, []).append(turn.latency_s)
        out = []
        for index in sorted(by_turn):
            values = by_turn[index]
            p50, p95 = percentile(values, 50), percentile(values, 95)
            assert p50 is not None and p95 is not None
            out.append((index, len(values), p50, p95))
        return out

    @property
    def turn_wers(self) -> list[float]:
        """The word error rate of every voice turn that reported what it heard, across the
        runs that evaluated the agent."""
        return [t.wer for r in self.evaluated_runs for t in r.turns if t.wer is not None]

    @property
    def mean_wer(self) -> float | None:
        """The mean word error rate of the voice turns, or None when none reported one."""
        values = self.turn_wers
        return sum(values) / len(values) if values else None

    @property
    def agent_usage(self) -> Usage | None:
        """Tokens the agent spent over all runs."""
        return sum_usage(r.agent_usage for r in self.runs)

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens the judges spent over all runs."""
        return sum_usage(r.judge_usage for r in self.runs)

    @property
    def caller_usage(self) -> Usage | None:
        """Tokens a simulated caller spent over all runs (None for a transcript)."""
        return sum_usage(r.caller_usage for r in self.runs)

    @property
    def verdict(self) -> Verdict:
        """``error`` when any run could not evaluate the agent or a check of the whole result
        could not decide (the eval is incomplete: its score would be about other runs than
        asked for); ``crashed`` when a run crashed (unless `crashes_fail` is off), whatever
        the pass rate; else ``passed`` or ``failed``."""
        if self.errored_run_count or any(c.errored for c in self.checks):
            return "error"
        if self.crashes_fail and self.crashed_runs:
            return "crashed"
        return "passed" if self.passed else "failed"

    @property
    def errored(self) -> bool:
        """True when the verdict is ``error`` (`Verdict`): reports show ERROR, the test is a
        pytest error, gates neither count nor absorb it."""
        return self.verdict == "error"

    @property
    def error_reason(self) -> str | None:
        """Why the eval is an ERROR (how many runs could not evaluate the agent and the first
        one's reason), or None when it is not one."""
        if not self.errored:
            return None
        errored = [r for r in self.runs if r.verdict == "error"]
        if not errored:
            return _errored_check_reason(next(c for c in self.checks if c.errored))
        first = errored[0]
        return (
            f"{len(errored)} of {len(self.runs)} run(s) could not evaluate the agent (ERROR, "
            f"left out of the score): run {first.index + 1}: {first.error_reason}"
        )

    def threshold_message(self) -> str:
        """``LLM eval failed: score=0.67 < threshold=0.80 (2/3 runs passed)``: the earlier
        package's words, with as many decimals as it takes to see the score below the
        threshold; ``LLM eval ERROR: ...`` with the reason when the agent could not be
        evaluated."""
        if self.errored:
            return (
                f"LLM eval ERROR: {self.error_reason} ({self.passed_run_count}/"
                f"{self.evaluated_run_count} evaluated runs passed)"
            )
        if self.verdict == "crashed":
            return (
                f"LLM eval CRASHED: {self.crash_reason} (a crash fails the eval whatever the "
                f"pass rate; score={self.score:.2f}, {self.passed_run_count}/{len(self.runs)} "
                "runs passed)"
            )
        failed = [c for c in self.checks if not c.passed]
        if failed and self.score + 1e-9 >= self.threshold:
            # Enough runs passed; a transcript-level check (latency_p95_ms_max...) did not.
            return (
                "LLM eval failed: "
                + "; ".join(f"{c.name}: {c.reasoning}" for c in failed)
                + f" (score={self.score:.2f}, {self.passed_run_count}/{len(self.runs)} "
                "runs passed)"
            )
        score, threshold = score_and_threshold_text(self.score, self.threshold)
        return (
            f"LLM eval failed: score={score} < threshold={threshold} "
            f"({self.passed_run_count}/{len(self.runs)} runs passed)"
        )

    def assert_threshold(self) -> None:
        """Raise AssertionError if score is below threshold."""
        __tracebackhide__ = True
        # Noted on the result (not a field, so never serialized): the plugin asserts a result
        # the test did not assert itself when the test ends.
        self.__dict__["_threshold_asserted"] = True
        if not self.passed:
            raise AssertionError(self.threshold_message())

    @property
    def threshold_asserted(self) -> bool:
        """True once `assert_threshold` was called on this result."""
        return bool(self.__dict__.get("_threshold_asserted", False))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (what travels inside pytest reports); derived values such as
        the interval are not stored, they are recomputed."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TranscriptResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)
