"""The markdown report: summary, groups, cost, then every transcript, run and turn.

Every piece of text that came from an agent, a user or a judge goes through `md_escape`, which
changes only what could break the report: ``|`` (a table cell), line breaks (``<br>``, so each
value stays on one line), ``<`` (HTML) and an ``&`` that would start an entity. Everything else
is written as it was, so ids, tool names and replies are found by ``grep`` (``simple_test``,
not ``simple\\_test``); a ``*word*`` in a reply may show emphasized on GitHub, never as markup
that hides or injects anything. Escape and control sequences (ANSI colours, OSC links) are
dropped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from .._gates import GateResult
from .._records import EvalRecord
from .._sanitize import strip_controls
from ..models import EvalResult, RunResult, TurnResult, Usage
from ._baseline import BaselineComparison
from ._causes import cause_counts, cause_rows, evidence_lines
from ._format import (
    AGENT_SPEECH_LABEL,
    BASELINE_HEADER,
    INTERRUPTED,
    NO_RESULT,
    NOTHING_RAN,
    agent_rows,
    baseline_rows,
    cost_lines,
    fmt_agent_speech,
    fmt_barge_in,
    fmt_latency,
    fmt_planned_runs,
    fmt_record_score,
    fmt_result_interval,
    fmt_seconds,
    fmt_threshold,
    fmt_tokens,
    fmt_tool_call,
    fmt_usage,
    fmt_usage_parts,
    fmt_usage_per_run,
    fmt_variant,
    greeting_shown,
    heard_rows,
    interrupted_lines,
    latency_fact,
    latency_lines,
    no_tool_calls,
    score_fact,
    session_facts,
    session_notice,
    shown_markers,
    side_by_side,
    simulation_rows,
    verdict_label,
)
from ._records import ReportData
from ._turn_taking import CONFORMANCE_HEADER, conformance_rows, miss_lines

__all__ = [
    "INTERRUPTED",
    "NOTHING_RAN",
    "baseline_section",
    "comparison_section",
    "interrupted_lines",
    "md_escape",
    "md_escape_lines",
    "md_table",
    "render_markdown",
    "render_summary_markdown",
    "side_by_side_section",
]

_ESCAPES = {"<": "&lt;", "|": "\\|", "\r": "", "\n": "<br>"}
_ESCAPE_TABLE = str.maketrans(_ESCAPES)
# An "&" only needs escaping where it would start a character reference (&amp; &#39; &#x27;).
_ENTITY_START = re.compile(r"&(?=#[0-9]+;|#[xX][0-9a-fA-F]+;|[A-Za-z][A-Za-z0-9]*;)")
_ICON = {"passed": "✅", "failed": "❌", "crashed": "💥", "error": "⚠️", "skipped": "⏭️"}


def md_escape(text: object) -> str:
    """Text for a GitHub-flavoured markdown line or table cell: on one line, unable to break the
    table or inject HTML, without terminal control sequences, and otherwise verbatim."""
    escaped = _ENTITY_START.sub("&amp;", strip_controls(str(text)))
    return escaped.translate(_ESCAPE_TABLE)


def md_escape_lines(lines: Iterable[str]) -> list[str]:
    """Each line escaped, as a bullet."""
    return [f"- {md_escape(line)}" for line in lines]


def md_table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """A GitHub table; cells must already be escaped."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _headline(data: ReportData) -> list[str]:
    ran = data.ran
    facts = [f"**{data.passed_count} of {len(ran)} evals passed**"]
    if data.skipped_count:
        facts.append(f"{data.skipped_count} skipped")
    if data.generated_at is not None:
        facts.append("generated " + data.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip())
    if data.duration_s is not None:
        facts.append(f"session {fmt_seconds(data.duration_s)}")
    if data.exit_status is not None:
        facts.append(f"exit status {data.exit_status}")
    return [" · ".join(facts), "", *md_escape_lines(session_facts(data)), ""]


def _summary_section(data: ReportData) -> list[str]:
    """``## Summary``: the earlier package's six columns first (Transcript, Runs, Passed, Score,
    Threshold, Status), as scripts read them by position, then the interval, the test and the
    measurements."""
    latency, tokens = data.has_latency, data.has_tokens
    header = ["Transcript", "Runs", "Passed", "Score", "Threshold", "Status", "95% CI", "Test"]
    if latency:
        header.append("p50/p95 latency")
    judge_tokens = data.judge_usage is not None
    if tokens:
        header += ["Agent tokens", "Judge tokens"] if judge_tokens else ["Agent tokens"]
    rows: list[list[str]] = []
    for record in data.ran:
        res = record.result
        row = [
            md_escape(record.label),
            fmt_planned_runs(record),
            str(res.passed_run_count) if res else "–",
            fmt_record_score(res) if res else "–",
            fmt_threshold(record),
            f"{_ICON[record.verdict]} {verdict_label(record)}",
            fmt_result_interval(res) if res else "–",
            md_escape(record.nodeid),
        ]
        if latency:
            row.append(fmt_latency(res))
        if tokens:
            runs = len(res.runs) if res else 0
            row.append(fmt_usage_per_run(res.agent_usage if res else None, runs))
            if judge_tokens:
                row.append(fmt_usage_per_run(res.judge_usage if res else None, runs))
        rows.append(row)
    return ["## Summary", "", *md_table(header, rows), ""]


def _groups_section(data: ReportData) -> list[str]:
    """``## Groups``: the earlier package's table (Group, Passed, Total, Rate, Threshold,
    Status), then ``must_pass``, enforcement and why a group failed, one bullet each."""
    if not data.gates:
        return ["## Groups", "", md_escape(data.gates_note), ""] if data.gates_note else []
    header = ["Group", "Passed", "Total", "Rate", "Threshold", "Status"]
    rows = [_gate_row(g) for g in data.gates]
    lines = ["## Groups", "", *md_table(header, rows), ""]
    notes: list[str] = []
    for gate in data.gates:
        name = md_escape(gate.name)
        if gate.config.must_pass:
            notes.append(f"- {name} must_pass: " + md_escape(", ".join(gate.config.must_pass)))
        if gate.config.enforce:
            notes.append(f"- {name} is enforced: when it fails, the run fails")
        # The terminal's words, line for line: failures, errored members, each must_pass
        # entry, warnings.
        notes += [
            f"- {name}: {md_escape(line.text.strip())}"
            for line in gate.lines()[1:]
            if not line.text.strip().startswith("enforced:")
        ]
    if notes:
        lines += [*notes, ""]
    if data.decision is not None:
        lines += ["Gates: " + md_escape(data.decision.summary()), ""]
    if data.gates_note:
        lines += [md_escape(data.gates_note), ""]
    return lines


def _gate_row(gate: GateResult) -> list[str]:
    rate = "-" if gate.rate is None else f"{gate.rate:.2f}"
    return [
        md_escape(gate.name),
        str(gate.passed_count),
        str(gate.total),
        rate,
        f"{gate.config.threshold:.2f}",
        {"PASSED": "✅ PASS", "FAILED": "❌ FAIL", "SKIPPED": "⏭ SKIPPED"}[gate.status],
    ]


def side_by_side_section(data: ReportData) -> list[str]:
    """``## Agents side by side``: each transcript a parametrized agent ran, one column per
    variant."""
    params, compared = side_by_side(data)
    if not compared:
        return []
    header = ["Transcript", *(md_escape(p) for p in params)]
    rows = [
        [md_escape(transcript), *(fmt_variant(variants.get(p)) for p in params)]
        for transcript, variants in compared
    ]
    return ["## Agents side by side", "", *md_table(header, rows), ""]


def baseline_section(data: ReportData) -> list[str]:
    """``## Baseline``: this session against ``--agent-eval-baseline``."""
    if data.baseline_error:
        return ["## Baseline", "", "⚠️ Not compared: " + md_escape(data.baseline_error), ""]
    comparison = data.baseline
    if comparison is None:
        return []
    return comparison_section(comparison, "## Baseline")


def comparison_section(comparison: BaselineComparison, heading: str) -> list[str]:
    """A comparison in markdown under ``heading``: against what, the headline, the table, new
    and removed; for the session's baseline and for ``agent-eval compare --markdown``."""
    when = f" ({md_escape(comparison.generated_at)})" if comparison.generated_at else ""
    lines = [
        heading,
        "",
        f"Against {md_escape(comparison.path)}{when}: **{md_escape(comparison.headline)}**",
        "",
    ]
    rows = [[md_escape(c) for c in row] for row in baseline_rows(comparison)]
    if rows:
        lines += [*md_table(BASELINE_HEADER, rows), ""]
    if comparison.new:
        lines += ["New: " + ", ".join(md_escape(n) for n in comparison.new), ""]
    if comparison.removed:
        lines += ["Removed: " + ", ".join(md_escape(n) for n in comparison.removed), ""]
    return lines


def _usage_row(label: str, usage: Usage | None) -> list[str]:
    if usage is None:
        return [label, "–", "–", "–", "–"]
    return [
        label,
        fmt_tokens(usage.input_tokens),
        fmt_tokens(usage.output_tokens),
        fmt_tokens(usage.total_tokens),
        fmt_tokens(usage.requests),
    ]


def _cost_section(data: ReportData) -> list[str]:
    agent, judge, caller = data.agent_usage, data.judge_usage, data.caller_usage
    if agent is None and judge is None and caller is None:
        return []
    runs = data.run_count
    header = ["Tokens", "Input", "Output", "Total", "Requests"]
    rows = [_usage_row("Agent", agent), _usage_row("Judges", judge)]
    if caller is not None:
        rows.append(_usage_row("Callers", caller))
    return [
        "## Cost",
        "",
        *md_table(header, rows),
        "",
        f"Over {runs} runs: {fmt_usage_parts(agent, judge, caller, runs)}.",
        "",
        *(f"{md_escape(line)}\n" for line in cost_lines(data)),
    ]


def _turn_lines(turn: TurnResult, data: ReportData) -> list[str]:
    facts = [f"**Turn {turn.index + 1}**", fmt_seconds(turn.duration_s)]
    if turn.latency_s is not None:
        facts.append(f"latency {fmt_seconds(turn.latency_s)}")
    if turn.first_audio_latency_s is not None:
        facts.append(f"first audio {fmt_seconds(turn.first_audio_latency_s)}")
    if turn.usage is not None:
        facts.append(f"agent tokens {fmt_usage(turn.usage)}")
    if turn.judge_usage is not None:
        facts.append(f"judge tokens {fmt_usage(turn.judge_usage)}")
    lines = [" · ".join(facts), "", f"- User: {md_escape(turn.user)}"]
    if turn.audio:
        lines.append(f"- Audio: {md_escape(data.show_path(turn.audio))}")
    if turn.conditions:
        lines.append(f"- Audio conditions: {md_escape(turn.conditions)}")
    if turn.audio_in:
        lines.append(f"- Streamed audio: {md_escape(data.show_path(str(turn.audio_in)))}")
    for label, text in heard_rows(turn):
        lines.append(f"- {label}: {md_escape(text)}")
    if turn.barge_in is not None:
        lines.append(f"- Barge-in: {md_escape(fmt_barge_in(turn.barge_in))}")
    for speech in turn.agent_speech:
        label = f"{AGENT_SPEECH_LABEL.capitalize()} ({fmt_agent_speech(speech)})"
        lines.append(f"- {md_escape(label)}: {md_escape(speech.text)}")
    lines.append(f"- Reply: {md_escape(turn.reply)}")
    for label, text in agent_rows(turn):
        lines.append(f"- {label}: {md_escape(text)}")
    if turn.audio_out:
        lines.append(f"- Reply audio: {md_escape(data.show_path(str(turn.audio_out)))}")
    if turn.tool_calls:
        calls = "; ".join(md_escape(fmt_tool_call(c)) for c in turn.tool_calls)
        lines.append(f"- Tool calls: {calls}")
    else:
        lines.append(f"- Tool calls: {no_tool_calls(turn)}")
    lines += _evaluation_lines(turn.evaluations)
    if turn.crash is not None:
        lines.append(f"- 💥 Crashed: {md_escape(turn.crash.describe())}")
    if turn.error:
        lines.append(f"- ⚠️ Error: {md_escape(turn.error)}")
    return [*lines, ""]


def _evaluation_lines(evaluations: list[EvalResult]) -> list[str]:
    lines = []
    for ev in evaluations:
        icon = "⚠️ errored" if ev.errored else ("✅" if ev.passed else "❌")
        name = md_escape(ev.label)
        reason = f" — {md_escape(ev.reasoning)}" if ev.reasoning else ""
        lines.append(f"- {icon} {name}{reason}")
    return lines


def _greeting_lines(run: RunResult) -> list[str]:
    """What the agent said and did before turn 1, and the ``greeting:`` verdicts."""
    if not greeting_shown(run):
        return []
    lines = ["**Greeting** (before turn 1)", ""]
    greeting = run.greeting
    if greeting is None:
        lines.append("- Not observed by this adapter")
    elif not greeting.speech and not greeting.tool_calls:
        lines.append("- The agent said nothing before turn 1")
    else:
        for speech in greeting.speech:
            label = f"{AGENT_SPEECH_LABEL.capitalize()} ({fmt_agent_speech(speech)})"
            lines.append(f"- {md_escape(label)}: {md_escape(speech.text)}")
        if greeting.tool_calls:
            calls = "; ".join(md_escape(fmt_tool_call(c)) for c in greeting.tool_calls)
            lines.append(f"- Tool calls: {calls}")
    return [*lines, *_evaluation_lines(run.greeting_evaluations), ""]


def _run_lines(run: RunResult, data: ReportData) -> list[str]:
    verdict = {
        "passed": "✅ passed",
        "failed": "❌ failed",
        "crashed": "💥 CRASHED",
        "error": "⚠️ ERROR",
    }[run.verdict]
    facts = [f"#### Run {run.index + 1}: {verdict}", fmt_seconds(run.duration_s)]
    if run.agent_usage is not None:
        facts.append(f"agent tokens {fmt_usage(run.agent_usage)}")
    if run.judge_usage is not None:
        facts.append(f"judge tokens {fmt_usage(run.judge_usage)}")
    lines = [" · ".join(facts), ""]
    if run.crash is not None:
        lines += [f"💥 Crashed: {md_escape(run.crash.describe())}", ""]
    if run.error:
        lines += [f"⚠️ Run error: {md_escape(run.error)}", ""]
    lines += _greeting_lines(run)
    for turn in run.turns:
        lines += _turn_lines(turn, data)
    lines += _conversation_lines(run)
    if run.attribution is not None:  # why it failed (docs/attribution.md)
        lines += [f"**Cause:** {md_escape(run.attribution.describe())}", ""]
        lines += [f"- {md_escape(line)}" for line in evidence_lines(run.attribution)]
        lines.append("")
    return lines


def _causes_section(data: ReportData) -> list[str]:
    """``## Failure causes``: the attributed runs counted by cause, when attribution ran."""
    causes = cause_counts(data.ran)
    if not causes:
        return []
    lines = ["## Failure causes", "", *md_table(["Cause", "Failed runs"], cause_rows(causes))]
    return [*lines, ""]


def _conversation_lines(run: RunResult) -> list[str]:
    """A simulated run's end: who ended the call and why, the turns, the caller's cost, and
    each criterion's verdict with its reason."""
    rows = simulation_rows(run)
    if not rows and not run.evaluations:
        return []
    lines = ["**Conversation** (simulated caller)", ""]
    lines += [f"- {label}: {md_escape(text)}" for label, text in rows]
    return [*lines, *_evaluation_lines(run.evaluations), ""]


def _record_lines(record: EvalRecord, data: ReportData) -> list[str]:
    res = record.result
    lines = [
        f"### {_ICON[record.verdict]} {md_escape(record.label)}: {verdict_label(record)}",
        "",
        f"- Test: {md_escape(record.nodeid)}",
    ]
    if record.description:
        lines.append(f"- Description: {md_escape(record.description)}")
    if record.path:
        lines.append(f"- File: {md_escape(data.show_path(record.path))}")
    if record.tags:
        lines.append("- Tags: " + ", ".join(md_escape(t) for t in record.tags))
    markers = shown_markers(record)
    if markers:
        lines.append("- Markers: " + ", ".join(md_escape(m) for m in markers))
    if record.reason:
        lines.append(f"- ⚠️ Error: {md_escape(record.reason)}")
    if record.crash_reason:
        lines.append(f"- 💥 Crashed: {md_escape(record.crash_reason)}")
    lines += [f"- Note: {md_escape(note)}" for note in record.notes]
    if res is None:
        lines += [f"- {NO_RESULT[record.verdict == 'passed']}", ""]
        return lines
    lines.append(f"- {score_fact(res)}")
    if res.variant is not None:
        lines.append(f"- Variant: {md_escape(res.variant)}")
    for check in res.checks:
        icon = "⚠️ errored" if check.errored else ("✅" if check.passed else "❌")
        lines.append(f"- {icon} {md_escape(check.label)} — {md_escape(check.reasoning)}")
    latency = latency_lines(res)
    if latency:
        lines.append(f"- {latency_fact(res)}")
        lines += [f"  - {md_escape(line)}" for line in latency[1:]]
    if res.mean_wer is not None:
        lines.append(
            f"- Mean WER {res.mean_wer:.2f} over {len(res.turn_wers)} voice turn(s) (what the "
            "agent's speech recognizer heard against what the user said)"
        )
    if res.agent_usage is not None or res.judge_usage is not None or res.caller_usage is not None:
        usage = fmt_usage_parts(res.agent_usage, res.judge_usage, res.caller_usage, len(res.runs))
        lines.append(f"- Tokens: {usage}")
    lines.append("")
    for run in res.runs:
        lines += _run_lines(run, data)
    return lines


def _interrupted_section(data: ReportData) -> list[str]:
    notice = session_notice(data)
    if notice is None:
        return []
    head, lists = notice
    out = [f"> ⚠️ **{md_escape(head)}**", ""]
    for title, items in lists:
        out += [md_escape(title), "", *(f"- {md_escape(n)}" for n in items), ""]
    return out


def render_summary_markdown(data: ReportData) -> str:
    """The headline, summary table, groups and cost, without per-turn details."""
    lines = ["# Agent eval report", "", *_interrupted_section(data)]
    if data.nothing_ran:
        skipped = len(data.records)
        why = f" {skipped} eval test(s) were skipped." if skipped else ""
        return "\n".join([*lines, NOTHING_RAN + why, ""])
    lines += _headline(data)
    lines += _summary_section(data)
    lines += side_by_side_section(data)
    lines += _groups_section(data)
    lines += _causes_section(data)
    lines += baseline_section(data)
    lines += _cost_section(data)
    return "\n".join(lines).rstrip("\n") + "\n\n"


def render_markdown(data: ReportData) -> str:
    """The whole markdown report."""
    text = render_summary_markdown(data)
    if data.nothing_ran:
        return text
    lines = _turn_taking_section(data)
    lines += ["## Transcripts", ""]
    for record in data.ran:
        lines += _record_lines(record, data)
    return text + "\n".join(lines).rstrip("\n") + "\n"


def _turn_taking_section(data: ReportData) -> list[str]:
    """The turn-taking conformance table (docs/turn-taking.md), when such an item ran."""
    rows = conformance_rows(data.ran)
    if not rows:
        return []
    return [
        "## Turn-taking conformance",
        "",
        *md_table(CONFORMANCE_HEADER, rows),
        "",
        *miss_lines(data.ran),
    ]
