"""Number and value formats shared by the terminal, markdown and HTML reports."""

from __future__ import annotations

from .._text import TOOL_ARGS_MAX_CHARS, shorten
from .._text import format_tool_call as fmt_tool_call
from ..models import AgentSpeech, AgentTurn, BargeIn, RunResult, TranscriptResult, Usage
from .records import EvalRecord

__all__ = [
    "AGENT_SPEECH_LABEL",
    "SCORE_DECIMALS",
    "TOOL_ARGS_MAX_CHARS",
    "fmt_agent_speech",
    "fmt_barge_in",
    "fmt_interval",
    "fmt_latency",
    "fmt_rate",
    "fmt_runs",
    "fmt_score",
    "fmt_seconds",
    "fmt_tokens",
    "fmt_tool_call",
    "fmt_usage",
    "fmt_usage_per_run",
    "fmt_wer",
    "greeting_shown",
    "heard_rows",
    "latency_lines",
    "shorten",
    "shown_markers",
    "verdict_label",
]

SCORE_DECIMALS = 2
"""Scores are fractions of a few runs; two decimals tell 2/3 from 3/4 without false precision."""


def fmt_score(value: float) -> str:
    """``0.67``."""
    return f"{value:.{SCORE_DECIMALS}f}"


def fmt_interval(interval: tuple[float, float]) -> str:
    """``[0.21–0.94]``."""
    low, high = interval
    return f"[{fmt_score(low)}–{fmt_score(high)}]"


def fmt_rate(value: float | None) -> str:
    """A percentage, or ``–``."""
    return "–" if value is None else f"{value:.0%}"


def fmt_seconds(value: float | None) -> str:
    """``0.42 s``, ``12.3 s``, or ``–``."""
    if value is None:
        return "–"
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def fmt_latency(result: TranscriptResult | None) -> str:
    """The median and p95 turn latency of a voice transcript (``0.40/0.60 s``), or ``–``."""
    if result is None or result.p95_latency_s is None:
        return "–"
    return f"{result.p50_latency_s or 0.0:.2f}/{fmt_seconds(result.p95_latency_s)}"


def latency_lines(result: TranscriptResult) -> list[str]:
    """Voice-turn latency over the runs, as sentences: the whole transcript, then each turn
    (``turn 1: p50 0.40 s, p95 0.60 s over 5 runs``); empty when nothing was measured."""
    if result.p95_latency_s is None:
        return []
    values = result.turn_latencies_s
    lines = [
        f"latency p50 {fmt_seconds(result.p50_latency_s)}, p95 "
        f"{fmt_seconds(result.p95_latency_s)} over {len(values)} voice turn(s)"
    ]
    for index, count, p50, p95 in result.turn_latency_percentiles():
        lines.append(
            f"turn {index + 1}: p50 {fmt_seconds(p50)}, p95 {fmt_seconds(p95)} over {count} run(s)"
        )
    return lines


def fmt_wer(wer: float | None) -> str:
    """``WER 0.12``, or "" when none was measured."""
    return "" if wer is None else f"WER {wer:.2f}"


def fmt_barge_in(barge: BargeIn) -> str:
    """One sentence on a barge-in: what was tested and what the agent did."""
    if barge.precondition is not None:
        return f"not tested: {barge.precondition}"
    at = (
        f" at {fmt_seconds(barge.reply_position_s)} into the reply"
        if barge.reply_position_s is not None
        else ""
    )
    if barge.stopped and barge.stop_latency_s is not None:
        said = f"; the session kept {barge.interrupted_text!r}" if barge.interrupted_text else ""
        resumed = (
            f" (it went quiet after {barge.quiet_after_s * 1000:.0f} ms, then resumed)"
            if barge.resumed and barge.quiet_after_s is not None
            else ""
        )
        return (
            f"interrupted{at}; the agent stopped {barge.stop_latency_s * 1000:.0f} ms after the "
            f"interrupting speech began{resumed}{said}"
        )
    if barge.resumed:
        return f"interrupted{at}; the agent went quiet, then resumed its reply"
    played = f" ({fmt_seconds(barge.played_s)} played)" if barge.played_s is not None else ""
    return f"interrupted{at}; the agent kept speaking{played}"


def fmt_runs(result: TranscriptResult) -> str:
    """``3`` or ``2 of 5`` (early stop saved the rest)."""
    ran = len(result.runs)
    if result.saved_runs:
        return f"{ran} of {result.planned_runs}"
    return str(ran)


def fmt_tokens(count: int) -> str:
    """``1,234``."""
    return f"{count:,}"


def fmt_usage(usage: Usage | None) -> str:
    """``1,234 (1,000 in / 234 out)``, or ``–`` when nothing was reported."""
    if usage is None:
        return "–"
    return (
        f"{fmt_tokens(usage.total_tokens)} "
        f"({fmt_tokens(usage.input_tokens)} in / {fmt_tokens(usage.output_tokens)} out)"
    )


def fmt_usage_per_run(usage: Usage | None, runs: int) -> str:
    """``1,230 (410/run)``: the total and the mean per run, or ``–``."""
    if usage is None:
        return "–"
    per_run = round(usage.total_tokens / runs) if runs else 0
    return f"{fmt_tokens(usage.total_tokens)} ({fmt_tokens(per_run)}/run)"


AGENT_SPEECH_LABEL = "agent-initiated"
"""How every report marks speech the agent started itself (a greeting, a ``say()``), so it is
never read as the reply to the user's turn."""


def fmt_agent_speech(speech: AgentSpeech) -> str:
    """``greeting, Receptionist, at 0.42 s``: why, who and when, for one agent-initiated line."""
    parts = [speech.cause]
    if speech.agent:
        parts.append(speech.agent)
    if speech.started_at_s is not None:
        parts.append(f"at {fmt_seconds(speech.started_at_s)}")
    if speech.latency_s is not None:
        parts.append(f"latency {fmt_seconds(speech.latency_s)}")
    return ", ".join(parts)


def heard_rows(turn: AgentTurn) -> list[tuple[str, str]]:
    """What the speech recognizer heard, as (label, text) rows: one ``Heard`` row, or one row
    per speech segment (``Heard, segment 1 of 2``) when the audio was cut in several, so a
    sentence split in the wrong place shows."""
    segments = turn.heard_segments
    wer = f" ({fmt_wer(turn.wer)})" if turn.wer is not None else ""
    if len(segments) > 1:
        n = len(segments)
        rows = [(f"Heard, segment {i} of {n}", text) for i, text in enumerate(segments, start=1)]
        if turn.wer is not None:
            rows[-1] = (f"{rows[-1][0]} (WER of all {n}: {turn.wer:.2f})", rows[-1][1])
        return rows
    return [] if turn.heard is None else [(f"Heard{wer}", turn.heard)]


def greeting_shown(run: RunResult) -> bool:
    """Whether a run's greeting deserves a place in a report: something was said or called
    before turn 1, or the transcript checked it."""
    greeting = run.greeting
    said = greeting is not None and bool(greeting.speech or greeting.tool_calls)
    return said or bool(run.greeting_evaluations)


def verdict_label(record: EvalRecord) -> str:
    """``PASS``, ``FAIL``, ``ERROR`` or ``SKIP``."""
    return {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}[record.verdict]


def shown_markers(record: EvalRecord) -> list[str]:
    """The markers worth showing: ``agent_eval`` itself is on every eval, so it is left out."""
    return [m for m in record.markers if m != "agent_eval"]
