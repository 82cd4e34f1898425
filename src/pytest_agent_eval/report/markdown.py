"""The markdown report: summary, groups, cost, then every transcript, run and turn.

Every piece of text that came from an agent, a user or a judge goes through `md_escape`, so a
reply holding ``*``, ``|`` or ``<script>`` shows as written and cannot break a table or inject
markup; escape and control sequences (ANSI colours, OSC links) are dropped. Line breaks inside
a value become ``<br>`` so each value stays on one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from .._sanitize import strip_controls
from ..gates import GateResult
from ..models import RunResult, TurnResult, Usage
from ._format import (
    AGENT_SPEECH_LABEL,
    fmt_agent_speech,
    fmt_interval,
    fmt_latency,
    fmt_rate,
    fmt_runs,
    fmt_score,
    fmt_seconds,
    fmt_tokens,
    fmt_tool_call,
    fmt_usage,
    fmt_usage_per_run,
    shown_markers,
    verdict_label,
)
from .records import EvalRecord, ReportData

__all__ = [
    "INTERRUPTED",
    "NOTHING_RAN",
    "interrupted_lines",
    "md_escape",
    "md_table",
    "render_markdown",
    "render_summary_markdown",
]

INTERRUPTED = "Interrupted: the session was stopped (Ctrl-C) before every eval ran."
"""The first words of every report of an interrupted session."""

NOTHING_RAN = "No eval test ran in this session."
"""The sentence a report holds instead of results when every eval was skipped or deselected."""

_ESCAPES = {
    "&": "&amp;",
    "<": "&lt;",
    ">": "&gt;",
    "\r": "",
    "\n": "<br>",
    **{c: "\\" + c for c in "\\`*_[]|~$#"},
}
_ICON = {"passed": "✅", "failed": "❌", "error": "⚠️", "skipped": "⏭️"}


def md_escape(text: object) -> str:
    """Escape text for inline markdown (GitHub flavour), keeping it on one line, without
    terminal control sequences."""
    return "".join(_ESCAPES.get(c, c) for c in strip_controls(str(text)))


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
    if data.decision is not None:
        facts.append(f"exit status {data.decision.exitstatus}")
    return [" · ".join(facts), ""]


def _summary_section(data: ReportData) -> list[str]:
    latency, tokens = data.has_latency, data.has_tokens
    header = ["Transcript", "Test", "Runs", "Passed", "Score [95% CI]", "Threshold", "Verdict"]
    if latency:
        header.append("p95 latency")
    if tokens:
        header += ["Agent tokens", "Judge tokens"]
    rows: list[list[str]] = []
    for record in data.ran:
        res = record.result
        row = [
            md_escape(record.transcript_id),
            md_escape(record.nodeid),
            fmt_runs(res) if res else "–",
            str(res.passed_run_count) if res else "–",
            f"{fmt_score(res.score)} {fmt_interval(res.interval)}" if res else "–",
            fmt_score(res.threshold) if res else "–",
            f"{_ICON[record.verdict]} {verdict_label(record)}",
        ]
        if latency:
            row.append(fmt_latency(res))
        if tokens:
            runs = len(res.runs) if res else 0
            row.append(fmt_usage_per_run(res.agent_usage if res else None, runs))
            row.append(fmt_usage_per_run(res.judge_usage if res else None, runs))
        rows.append(row)
    return ["## Summary", "", *md_table(header, rows), ""]


def _groups_section(data: ReportData) -> list[str]:
    if not data.gates:
        return []
    header = [
        "Group",
        "Evals",
        "Passed",
        "Pass rate",
        "Threshold",
        "must_pass",
        "Enforced",
        "Verdict",
    ]
    rows = [_gate_row(g) for g in data.gates]
    lines = ["## Groups", "", *md_table(header, rows), ""]
    problems = [
        f"- {md_escape(gate.name)}: {md_escape(problem)}"
        for gate in data.gates
        for problem in gate.problems
    ]
    if problems:
        lines += [*problems, ""]
    if data.decision is not None:
        lines += ["Gates: " + md_escape(data.decision.summary()), ""]
    return lines


def _gate_row(gate: GateResult) -> list[str]:
    must = ", ".join(gate.config.must_pass) or "–"
    verdict = "✅ PASSED" if gate.passed else "❌ FAILED"
    return [
        md_escape(gate.name),
        str(gate.total),
        str(gate.passed_count),
        fmt_rate(gate.rate),
        f"{gate.config.threshold:.0%}",
        md_escape(must),
        "yes" if gate.config.enforce else "no",
        verdict,
    ]


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
    agent, judge = data.agent_usage, data.judge_usage
    if agent is None and judge is None:
        return []
    runs = data.run_count
    header = ["Tokens", "Input", "Output", "Total", "Requests"]
    rows = [_usage_row("Agent", agent), _usage_row("Judges", judge)]
    return [
        "## Cost",
        "",
        *md_table(header, rows),
        "",
        f"Over {runs} runs: agent {fmt_usage_per_run(agent, runs)}, "
        f"judges {fmt_usage_per_run(judge, runs)}.",
        "",
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
    if turn.heard is not None:
        lines.append(f"- Heard: {md_escape(turn.heard)}")
    for speech in turn.agent_speech:
        label = f"{AGENT_SPEECH_LABEL.capitalize()} ({fmt_agent_speech(speech)})"
        lines.append(f"- {md_escape(label)}: {md_escape(speech.text)}")
    lines.append(f"- Reply: {md_escape(turn.reply)}")
    if turn.audio_out:
        lines.append(f"- Reply audio: {md_escape(data.show_path(str(turn.audio_out)))}")
    if turn.tool_calls:
        calls = "; ".join(md_escape(fmt_tool_call(c)) for c in turn.tool_calls)
        lines.append(f"- Tool calls: {calls}")
    else:
        lines.append("- Tool calls: none")
    for ev in turn.evaluations:
        icon = "⚠️ errored" if ev.errored else ("✅" if ev.passed else "❌")
        name = md_escape(ev.name or "check")
        reason = f" — {md_escape(ev.reasoning)}" if ev.reasoning else ""
        lines.append(f"- {icon} {name}{reason}")
    if turn.error:
        lines.append(f"- ⚠️ Error: {md_escape(turn.error)}")
    return [*lines, ""]


def _run_lines(run: RunResult, data: ReportData) -> list[str]:
    verdict = "✅ passed" if run.passed else "❌ failed"
    facts = [f"#### Run {run.index + 1}: {verdict}", fmt_seconds(run.duration_s)]
    if run.agent_usage is not None:
        facts.append(f"agent tokens {fmt_usage(run.agent_usage)}")
    if run.judge_usage is not None:
        facts.append(f"judge tokens {fmt_usage(run.judge_usage)}")
    lines = [" · ".join(facts), ""]
    if run.error:
        lines += [f"⚠️ Run error: {md_escape(run.error)}", ""]
    for turn in run.turns:
        lines += _turn_lines(turn, data)
    return lines


def _record_lines(record: EvalRecord, data: ReportData) -> list[str]:
    res = record.result
    lines = [
        f"### {_ICON[record.verdict]} {md_escape(record.transcript_id)}: {verdict_label(record)}",
        "",
        f"- Test: {md_escape(record.nodeid)}",
    ]
    if record.path:
        lines.append(f"- File: {md_escape(data.show_path(record.path))}")
    if record.tags:
        lines.append("- Tags: " + ", ".join(md_escape(t) for t in record.tags))
    markers = shown_markers(record)
    if markers:
        lines.append("- Markers: " + ", ".join(md_escape(m) for m in markers))
    if res is None:
        lines += ["- The eval did not produce a result (the test errored before it ran).", ""]
        return lines
    saved = f", {res.saved_runs} saved by early stop" if res.saved_runs else ""
    lines += [
        f"- Score {fmt_score(res.score)} {fmt_interval(res.interval)} against threshold "
        f"{fmt_score(res.threshold)}: {res.passed_run_count} of {len(res.runs)} runs passed"
        f"{saved}, {fmt_seconds(res.duration_s)}",
    ]
    if res.p95_latency_s is not None:
        lines.append(f"- p95 turn latency {fmt_seconds(res.p95_latency_s)}")
    if res.agent_usage is not None or res.judge_usage is not None:
        lines.append(
            f"- Tokens: agent {fmt_usage_per_run(res.agent_usage, len(res.runs))}, "
            f"judges {fmt_usage_per_run(res.judge_usage, len(res.runs))}"
        )
    lines.append("")
    for run in res.runs:
        lines += _run_lines(run, data)
    return lines


def interrupted_lines(data: ReportData) -> list[str]:
    """The interrupted notice and the evals that never ran, as plain text lines."""
    if not data.interrupted:
        return []
    lines = [INTERRUPTED]
    if data.not_run:
        lines.append(f"{len(data.not_run)} eval(s) never ran or never finished:")
        lines.extend(data.not_run)
    return lines


def _interrupted_section(data: ReportData) -> list[str]:
    lines = interrupted_lines(data)
    if not lines:
        return []
    head, *rest = lines
    out = [f"> ⚠️ **{md_escape(head)}**", ""]
    if rest:
        out += [md_escape(rest[0]), "", *(f"- {md_escape(n)}" for n in rest[1:]), ""]
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
    lines += _groups_section(data)
    lines += _cost_section(data)
    return "\n".join(lines).rstrip("\n") + "\n\n"


def render_markdown(data: ReportData) -> str:
    """The whole markdown report."""
    text = render_summary_markdown(data)
    if data.nothing_ran:
        return text
    lines = ["## Transcripts", ""]
    for record in data.ran:
        lines += _record_lines(record, data)
    return text + "\n".join(lines).rstrip("\n") + "\n"
