"""The compact per-run, per-turn account of a transcript result, for pytest failures."""

from __future__ import annotations

from .._text import clip, clip_middle, format_tool_call
from ..models import EvalResult, RunResult, TranscriptResult, TurnResult, score_and_threshold_text
from ._format import (
    AGENT_SPEECH_LABEL,
    fmt_agent_speech,
    fmt_barge_in,
    greeting_shown,
    heard_rows,
    latency_lines,
    simulation_rows,
)

__all__ = ["failure_headline", "format_account", "format_score_line"]

_MAX_TEXT = 160
"""Replies and transcriptions are cut past this; the account sits in a terminal."""
_MAX_TOOL_ARGS = 80
"""Tool arguments are cut shorter here than in the reports."""
_MAX_REASON = 600
"""A check's reason is cut past this, in its middle: its end says what was seen."""
_MAX_ERROR = 1500
"""An error is cut past this, in its middle: its end says how to fix it (our own errors end
with the fix), so it is never cut before its fix."""


def format_score_line(result: TranscriptResult) -> str:
    """``score=0.67 (95% CI 0.21-0.94) threshold=0.80, 2/3 runs passed`` plus early-stop note."""
    low, high = result.interval
    score, threshold = score_and_threshold_text(result.score, result.threshold)
    if not result.evaluated_run_count:
        line = (
            f"score=– (no run evaluated the agent) threshold={threshold}, "
            f"0/{len(result.runs)} runs passed"
        )
    else:
        line = (
            f"score={score} (95% CI {low:.2f}-{high:.2f}) "
            f"threshold={threshold}, {result.passed_run_count}/{len(result.runs)} runs passed"
        )
    if result.saved_runs:
        line += (
            f"; early stop: {result.saved_runs} of {result.planned_runs} runs not started "
            "(verdict already settled)"
        )
    return line


def _format_turn(turn: TurnResult, *, verbose: bool) -> list[str]:
    mark = {"passed": "ok", "failed": "FAIL", "crashed": "CRASHED", "error": "ERROR"}[turn.verdict]
    lines = [f"    turn {turn.index + 1} [{mark}] user: {clip(turn.user, 80)!r}"]
    if turn.crash is not None:
        lines.append(f"      crashed: {clip_middle(turn.crash.describe(), _MAX_ERROR)}")
    if turn.error:
        lines.append(f"      error: {clip_middle(turn.error, _MAX_ERROR)}")
        return lines
    if not turn.passed or verbose:
        if turn.conditions:
            lines.append(f"      audio conditions: {clip(turn.conditions, 200)}")
        for speech in turn.agent_speech:
            label = f"{AGENT_SPEECH_LABEL} ({fmt_agent_speech(speech)})"
            lines.append(f"      {label}: {clip(speech.text, _MAX_TEXT)!r}")
        lines.append(f"      reply: {clip(turn.reply, _MAX_TEXT)!r}")
        for label, text in heard_rows(turn):
            lines.append(f"      {label[0].lower()}{label[1:]}: {clip(text, _MAX_TEXT)!r}")
        if turn.barge_in is not None:
            lines.append(f"      barge-in: {clip(fmt_barge_in(turn.barge_in), 300)}")
        if turn.tool_calls:
            calls = ", ".join(
                format_tool_call(c, limit=_MAX_TOOL_ARGS, with_output=False)
                for c in turn.tool_calls
            )
            lines.append(f"      tools: {calls}")
    lines.extend(_format_evaluations(turn.evaluations, verbose=verbose))
    return lines


def _format_greeting(run: RunResult, *, verbose: bool) -> list[str]:
    """What the agent said before turn 1, and the transcript's ``greeting:`` verdicts."""
    if not greeting_shown(run):
        return []
    evaluations = run.greeting_evaluations
    if any(e.errored for e in evaluations):
        mark = "ERROR"
    elif all(e.passed for e in evaluations):
        mark = "ok"
    else:
        mark = "FAIL"
    greeting = run.greeting
    if greeting is None:
        head = f"    greeting [{mark}]: not observed by this adapter"
    elif not greeting.speech and not greeting.tool_calls:
        head = f"    greeting [{mark}]: the agent said nothing before turn 1"
    else:
        head = f"    greeting [{mark}]"
    lines = [head]
    if greeting is not None:
        for speech in greeting.speech:
            label = f"{AGENT_SPEECH_LABEL} ({fmt_agent_speech(speech)})"
            lines.append(f"      {label}: {clip(speech.text, _MAX_TEXT)!r}")
        if greeting.tool_calls:
            calls = ", ".join(
                format_tool_call(c, limit=_MAX_TOOL_ARGS, with_output=False)
                for c in greeting.tool_calls
            )
            lines.append(f"      tools: {calls}")
    lines.extend(_format_evaluations(evaluations, verbose=verbose))
    return lines


def _format_evaluations(evaluations: list[EvalResult], *, verbose: bool) -> list[str]:
    lines: list[str] = []
    for evaluation in evaluations:
        if evaluation.passed and not verbose:
            continue
        status = "errored" if evaluation.errored else ("pass" if evaluation.passed else "fail")
        reasoning = evaluation.reasoning
        # Judges already start their reasoning with "judge errored: "; say it once.
        reasoning = reasoning.removeprefix(f"{evaluation.name} {status}: ")
        lines.append(f"      - {evaluation.label} {status}: {clip_middle(reasoning, _MAX_REASON)}")
    return lines


def _format_conversation(run: RunResult, *, verbose: bool) -> list[str]:
    """A simulated run's end: who ended the call and why, the turns, and the criteria that did
    not pass (all of them with ``verbose``)."""
    rows = simulation_rows(run)
    if not rows and not run.evaluations:
        return []
    shown = {"Ended", "Turns", "Criteria"} if not verbose else None
    lines = ["    conversation:"]
    for label, text in rows:
        if shown is None or label in shown:
            lines.append(f"      {label.lower()}: {clip(text, 300)}")
    lines.extend(_format_evaluations(run.evaluations, verbose=verbose))
    return lines


def _format_run(run: RunResult, *, verbose: bool) -> list[str]:
    status = {"passed": "passed", "failed": "FAILED", "crashed": "CRASHED", "error": "ERROR"}[
        run.verdict
    ]
    lines = [f"  run {run.index + 1}: {status} ({run.duration_s:.2f}s)"]
    if not run.passed or verbose:
        lines.extend(_format_greeting(run, verbose=verbose))
        for turn in run.turns:
            lines.extend(_format_turn(turn, verbose=verbose))
        lines.extend(_format_conversation(run, verbose=verbose))
    # After the turns: a failed close is usually a consequence of a failed turn above.
    if run.crash is not None:
        lines.append(f"    crashed: {clip_middle(run.crash.describe(), _MAX_ERROR)}")
    if run.error:
        lines.append(f"    error: {clip_middle(run.error, _MAX_ERROR)}")
    if run.attribution is not None:  # why it failed (docs/attribution.md)
        lines.append(f"    cause: {clip_middle(run.attribution.describe(), _MAX_ERROR)}")
    return lines


def format_account(result: TranscriptResult, *, verbose: bool = False) -> str:
    """Every run with its failed turns: what the user said, the reply, tools, failed checks.

    Passing runs are one line each unless ``verbose``. A run that failed exactly like an
    earlier one is folded into a single "same as run N" line, so ten identical failures
    read as one.
    """
    lines = [format_score_line(result)]
    for check in result.checks:
        status = "errored" if check.errored else ("pass" if check.passed else "fail")
        if verbose or not check.passed:
            lines.append(f"  {check.label} {status}: {clip_middle(check.reasoning, _MAX_REASON)}")
    lines.extend(f"  {line}" for line in latency_lines(result))
    first_with: dict[tuple[str, ...], int] = {}
    for run in result.runs:
        head, *body = _format_run(run, verbose=verbose)
        signature = tuple(body)
        if body and not run.passed and signature in first_with:
            lines.append(f"{head} same as run {first_with[signature]}")
            continue
        first_with.setdefault(signature, run.index + 1)
        lines.append(head)
        lines.extend(body)
    return "\n".join(lines)


def _short_label(evaluation: EvalResult) -> str:
    """``reply_contains_all (line 11)``: the key without its turn (the line says where; the
    test's node id names the file), or the full key when it has no line, or the evaluator's
    name."""
    if evaluation.key and evaluation.location:
        leaf = evaluation.key.rsplit(".expect.", 1)[-1].rsplit(".", 1)[-1]
        return f"{leaf} (line {evaluation.location.rsplit(':', 1)[-1]})"
    return evaluation.label


def _said(evaluation: EvalResult) -> str:
    """``label: reason``, the reason without a judge's own ``judge errored: `` (said once)."""
    status = "errored" if evaluation.errored else "fail"
    reason = evaluation.reasoning.removeprefix(f"{evaluation.name} {status}: ")
    return f"{_short_label(evaluation)}: {clip(reason, _MAX_REASON)}"


def failure_headline(result: TranscriptResult) -> str | None:
    """The first thing that failed, as one line that starts with what failed: the line pytest's
    short summary shows (cut to the terminal's width), so it names the check first
    (``reply_contains_all (line 11): reply is missing ['sunny'] ...``). None when
    nothing in the result failed."""
    crashed = result.crash_reason
    if crashed is not None:
        # Other news than a wrong answer, and what decided the verdict: named first.
        return f"CRASHED: {clip_middle(crashed, _MAX_ERROR)}"
    for run in sorted(result.runs, key=lambda r: r.index):
        if run.passed:
            continue
        for evaluation in run.greeting_evaluations:
            if not evaluation.passed:
                return _said(evaluation)
        for turn in run.turns:
            if turn.error:
                return f"turn {turn.index + 1}: {clip_middle(turn.error, _MAX_ERROR)}"
            for evaluation in turn.evaluations:
                if not evaluation.passed:
                    return _said(evaluation)
        for evaluation in run.evaluations:
            if not evaluation.passed:
                return _said(evaluation)
        if run.error:
            return f"run {run.index + 1}: {clip_middle(run.error, _MAX_ERROR)}"
    for check in result.checks:
        if not check.passed:
            return _said(check)
    return None
