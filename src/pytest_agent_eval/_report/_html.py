"""The HTML report: one self-contained file with filters, audio players and a small chart.

Opening it needs no network: the CSS, the script and the SVG chart are inline. Audio is embedded
as ``data:`` URIs, each distinct file once (runs replay the same fixture, so a small script points
every player at the shared copy). A file bigger than `AUDIO_EMBED_LIMIT_BYTES` is linked instead,
relative to the report, so the report stays openable from a CI artifact while not growing without
bound; an audio file missing when the report is written is named in place of its player.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from pathlib import Path

from .._gates import GateResult
from .._records import EvalRecord
from .._sanitize import strip_controls
from ..models import EvalResult, RunResult, TranscriptResult, TurnResult, Usage
from ..voice._fixtures import decoded_audio_mime
from ._causes import cause_counts, cause_rows, evidence_lines
from ._format import (
    AGENT_SPEECH_LABEL,
    BASELINE_HEADER,
    NO_RESULT,
    NOTHING_RAN,
    agent_rows,
    baseline_rows,
    cost_lines,
    fmt_agent_speech,
    fmt_barge_in,
    fmt_latency,
    fmt_planned_runs,
    fmt_rate,
    fmt_record_score,
    fmt_result_interval,
    fmt_score,
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
    latency_fact,
    latency_lines,
    no_tool_calls,
    score_fact,
    session_facts,
    session_notice,
    shorten,
    shown_markers,
    side_by_side,
    simulation_rows,
    verdict_label,
)
from ._records import ReportData
from ._timeline_svg import render_timeline_svg
from ._turn_taking import conformance_html

__all__ = [
    "AUDIO_EMBED_BUDGET_BYTES",
    "AUDIO_EMBED_LIMIT_BYTES",
    "AudioStore",
    "render_chart_svg",
    "render_html",
]

AUDIO_EMBED_LIMIT_BYTES = 8 * 1024 * 1024
"""Audio files up to this size are embedded; a typical voice turn is 50-500 kB of WAV."""

AUDIO_EMBED_BUDGET_BYTES = 64 * 1024 * 1024
"""Most audio embedded in one report, all files together; past it, files are linked, so a
large suite with reply audio keeps a report a browser opens quickly."""

CHART_LABEL_CHARS = 28
"""Transcript ids are shortened to this in the chart; the table holds the full id."""

_CHART_ROW_PX = 24
_CHART_BAR_PX = 180
_CHART_LABEL_PX = 200


def _score_cell(res: TranscriptResult | None) -> str:
    """The summary's score cell: ``0.67 [0.21–0.94]``; ``–`` without a score."""
    if res is None or not res.evaluated_run_count:
        return "–"
    return f"{fmt_record_score(res)} {fmt_result_interval(res)}"


def _e(value: object) -> str:
    return escape(strip_controls(str(value)), quote=True)


def _t(value: object) -> str:
    """Escaped for element text, where quotes need no escaping: tool-call arguments are JSON,
    and ``&quot;`` for each of their quotes made up 7% of a 2,000-transcript report."""
    return escape(strip_controls(str(value)), quote=False)


@dataclass
class AudioStore:
    """Turns audio paths into player sources, embedding each distinct file once.

    Args:
        rootdir: Where relative audio paths are resolved from.
        report_dir: The folder of the report, for links to files too big to embed.
        embed_limit_bytes: Files larger than this are linked, not embedded.
        embed_budget_bytes: Once this much audio is embedded, further files are linked.
    """

    rootdir: Path
    report_dir: Path
    embed_limit_bytes: int = AUDIO_EMBED_LIMIT_BYTES
    embed_budget_bytes: int = AUDIO_EMBED_BUDGET_BYTES
    embedded_bytes: int = field(default=0, init=False)
    data: dict[str, str] = field(default_factory=dict, init=False)
    """Embedded files: reference -> ``data:`` URI."""
    _refs: dict[Path, str] = field(default_factory=dict, init=False, repr=False)

    def player(self, path_text: str, label: str) -> str:
        """An ``<audio controls>`` element for the file, or a note naming a missing file."""
        path = Path(path_text)
        if not path.is_absolute():
            path = self.rootdir / path
        title = f"{label}: {path_text}"
        if not path.is_file():
            return (
                f'<span class="missing">{_e(label)}: audio file not found: {_e(path_text)}</span>'
            )
        size = path.stat().st_size
        ref = self._refs.get(path)
        over_budget = self.embedded_bytes + size > self.embed_budget_bytes
        if ref is None and (size > self.embed_limit_bytes or over_budget):
            href = Path(os.path.relpath(path, self.report_dir)).as_posix()
            return (
                f'<audio controls preload="none" src="{_e(href)}" title="{_e(title)}"></audio>'
                f'<a class="audio-link" href="{_e(href)}">{_e(path.name)}</a>'
            )
        if ref is None:
            # Only real audio is embedded: an ``audio:`` path naming any other file (an
            # environment dump, a key file renamed .wav) is decoded first and refused.
            mime, why = decoded_audio_mime(path)
            if mime is None:
                return (
                    f'<span class="missing">{_e(label)}: not embedded: {_e(path_text)} {_e(why)}'
                    "</span>"
                )
            ref = self._refs[path] = f"a{len(self._refs)}"
            self.embedded_bytes += size
            payload = base64.b64encode(path.read_bytes()).decode("ascii")
            self.data[ref] = f"data:{mime};base64,{payload}"
        return (
            f'<audio controls preload="metadata" data-audio="{ref}" title="{_e(title)}"></audio>'
            f'<span class="audio-name">{_e(path.name)}</span>'
        )


# ``content-visibility: auto`` on each transcript: a browser styles and lays out only the
# transcripts near the screen, so a report of 2,000 opens about twice as fast (docs/benchmarks.md);
# the text stays in the document, found by find-in-page and read by screen readers.
_CSS = """
:root{--ok:#1a7f37;--bad:#cf222e;--warn:#9a6700;--mute:#57606a;--line:#d0d7de;--bg2:#f6f8fa}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1f2328}
main{max-width:1200px;margin:0 auto;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line)}
.headline{color:var(--mute)}
table{border-collapse:collapse;width:100%;margin:8px 0}
th,td{border:1px solid var(--line);padding:4px 8px;text-align:left;vertical-align:top}
th{background:var(--bg2)}
td.num{text-align:right;font-variant-numeric:tabular-nums}
.badge{display:inline-block;padding:0 6px;border-radius:10px;font-weight:600;font-size:12px}
.badge.passed{background:#dafbe1;color:var(--ok)}
.badge.failed{background:#ffebe9;color:var(--bad)}
.badge.crashed{background:var(--bad);color:#fff}
.badge.error{background:#fff8c5;color:var(--warn)}
.badge.skipped{background:#eaeef2;color:var(--muted,#57606a)}
.controls{display:flex;gap:16px;align-items:center;margin:8px 0}
.controls input[type=search]{padding:3px 6px;min-width:220px}
details.transcript{border:1px solid var(--line);border-radius:6px;margin:10px 0;padding:0 12px;
content-visibility:auto;contain-intrinsic-size:auto 40px}
details.transcript>summary{cursor:pointer;padding:8px 0;font-weight:600}
details.run{margin:6px 0 6px 8px}details.run>summary{cursor:pointer}
.turn{border-left:3px solid var(--line);margin:8px 0 8px 8px;padding:4px 10px}
.turn.bad{border-left-color:var(--bad)}
.turn dl{display:grid;grid-template-columns:110px 1fr;gap:2px 10px;margin:4px 0}
.turn dt{color:var(--mute)}.turn dd{margin:0;white-space:pre-wrap;word-break:break-word}
.checks{list-style:none;padding:0;margin:2px 0}
.checks li.ok::before{content:"✔ ";color:var(--ok)}
.checks li.no::before{content:"✘ ";color:var(--bad)}
.checks li.err::before{content:"⚠ ";color:var(--warn)}
.error-text{color:var(--bad)}.missing{color:var(--warn)}
.audio-name,.meta{color:var(--mute);font-size:12px;margin-left:6px}
.timeline-figure{margin:4px 0}.timeline text{font:10px system-ui,sans-serif;fill:#555}
.timeline .tl-tick{text-anchor:middle}
audio{height:30px;vertical-align:middle}
[hidden]{display:none!important}
figure{margin:8px 0}
figure.chart-box{max-height:60vh;overflow:auto}
"""

_SCRIPT_TEMPLATE = """
(function(){
  var data = JSON.parse(document.getElementById('audio-data').textContent);
  document.querySelectorAll('audio[data-audio]').forEach(function(el){
    var src = data[el.getAttribute('data-audio')]; if (src) { el.src = src; }
  });
  var failedOnly = document.getElementById('filter-failed');
  var all = document.getElementById('filter-all');
  var search = document.getElementById('filter-search');
  function apply(){
    var q = (search.value || '').toLowerCase();
    var shown = 0;
    document.querySelectorAll('[data-verdict]').forEach(function(el){
      var hide = (failedOnly.checked && el.getAttribute('data-verdict') === 'passed') ||
        (q && el.getAttribute('data-name').indexOf(q) < 0);
      el.hidden = hide;
      if (!hide && el.tagName === 'TR') { shown++; }
    });
    document.getElementById('filter-count').textContent = shown + ' shown';
    var row = %d, at = 0, chart = document.querySelector('svg.chart');
    document.querySelectorAll('g.chart-row').forEach(function(g){
      var hide = (failedOnly.checked && g.getAttribute('data-chart-verdict') === 'passed') ||
        (q && g.getAttribute('data-chart-name').indexOf(q) < 0);
      g.style.display = hide ? 'none' : '';
      if (!hide) { g.setAttribute('transform', 'translate(0 ' + (row * at++) + ')'); }
    });
    if (chart) {
      var height = row * (at + 1) + 4, width = chart.getAttribute('width');
      chart.setAttribute('height', height);
      chart.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    }
  }
  [failedOnly, all].forEach(function(el){ el.addEventListener('change', apply); });
  search.addEventListener('input', apply);
  apply();
})();
"""


_SCRIPT = _SCRIPT_TEMPLATE.replace("%d", str(_CHART_ROW_PX))


def _verdict_class(record: EvalRecord) -> str:
    return "passed" if record.verdict == "passed" else record.verdict


def _badge(record: EvalRecord) -> str:
    return f'<span class="badge {_verdict_class(record)}">{verdict_label(record)}</span>'


def render_chart_svg(records: Sequence[EvalRecord]) -> str:
    """An inline SVG: pass rate (with the threshold marked) and p95 latency per transcript."""
    rows = [(r, r.result) for r in records if r.result is not None]
    latencies = [res.p95_latency_s for _, res in rows if res.p95_latency_s is not None]
    max_latency = max(latencies, default=0.0)
    lat_x = _CHART_LABEL_PX + _CHART_BAR_PX + 70
    width = lat_x + (_CHART_BAR_PX + 70 if latencies else 0)
    height = _CHART_ROW_PX * (len(rows) + 1) + 4
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="Pass rate and p95 latency per transcript">',
        "<style>text{font:12px system-ui,sans-serif;fill:#1f2328}.h{font-weight:600}</style>",
        f'<text class="h" x="{_CHART_LABEL_PX}" y="14">pass rate (| = threshold)</text>',
    ]
    if latencies:
        out.append(f'<text class="h" x="{lat_x}" y="14">p95 turn latency</text>')
    for i, (record, res) in enumerate(rows):
        # Every row is drawn at the first row's place and moved by its transform, which the
        # filters rewrite: hidden rows leave no gap.
        y = _CHART_ROW_PX
        color = "#1a7f37" if res.passed else "#cf222e"
        bar = _CHART_BAR_PX * res.score
        tick = _CHART_LABEL_PX + _CHART_BAR_PX * res.threshold
        label = shorten(record.label, CHART_LABEL_CHARS)
        out += [
            f'<g class="chart-row" data-transcript="{_e(record.label)}" '
            f'data-chart-verdict="{_verdict_class(record)}" '
            f'data-chart-name="{_e(record.label.lower() + " " + record.nodeid.lower())}" '
            f'transform="translate(0 {_CHART_ROW_PX * i})">',
            f"<title>{_e(record.label)}: {res.passed_run_count}/{len(res.runs)} runs "
            f"passed, threshold {fmt_score(res.threshold)}</title>",
            f'<text x="0" y="{y + 14}">{_e(label)}</text>',
            f'<rect x="{_CHART_LABEL_PX}" y="{y + 3}" width="{_CHART_BAR_PX}" height="14" '
            'fill="#eaeef2"/>',
            f'<rect class="rate" x="{_CHART_LABEL_PX}" y="{y + 3}" width="{bar:.1f}" '
            f'height="14" fill="{color}"/>',
            f'<line x1="{tick:.1f}" x2="{tick:.1f}" y1="{y}" y2="{y + 20}" stroke="#1f2328" '
            'stroke-width="2"/>',
            f'<text x="{_CHART_LABEL_PX + _CHART_BAR_PX + 8}" y="{y + 14}">'
            f"{fmt_rate(res.score)}</text>",
        ]
        if latencies and res.p95_latency_s is not None and max_latency > 0:
            lat_w = _CHART_BAR_PX * res.p95_latency_s / max_latency
            out += [
                f'<rect class="latency" x="{lat_x}" y="{y + 3}" width="{lat_w:.1f}" '
                'height="14" fill="#0969da"/>',
                f'<text x="{lat_x + lat_w + 6:.1f}" y="{y + 14}">'
                f"{_e(fmt_seconds(res.p95_latency_s))}</text>",
            ]
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def _summary_table(data: ReportData) -> str:
    latency, tokens = data.has_latency, data.has_tokens
    head = ["Transcript", "Runs", "Passed", "Score [95% CI]", "Threshold", "Verdict"]
    if latency:
        head.append("p50/p95 latency")
    judge_tokens = data.judge_usage is not None
    if tokens:
        head += ["Agent tokens", "Judge tokens"] if judge_tokens else ["Agent tokens"]
    rows: list[str] = []
    for n, record in enumerate(data.ran):
        res = record.result
        cells = [
            f'<td><a href="#t{n}">{_e(record.label)}</a>'
            f'<div class="meta">{_e(record.nodeid)}</div></td>',
            f'<td class="num">{fmt_planned_runs(record)}</td>',
            f'<td class="num">{res.passed_run_count if res else "–"}</td>',
            f'<td class="num">{_score_cell(res)}</td>',
            f'<td class="num">{fmt_threshold(record)}</td>',
            f"<td>{_badge(record)}</td>",
        ]
        if latency:
            cells.append(f'<td class="num">{_e(fmt_latency(res))}</td>')
        if tokens:
            runs = len(res.runs) if res else 0
            agent = fmt_usage_per_run(res.agent_usage if res else None, runs)
            judge = fmt_usage_per_run(res.judge_usage if res else None, runs)
            cells.append(f'<td class="num">{_e(agent)}</td>')
            if judge_tokens:
                cells.append(f'<td class="num">{_e(judge)}</td>')
        rows.append(
            f'<tr class="transcript-row {_verdict_class(record)}" '
            f'data-verdict="{_verdict_class(record)}" '
            f'data-name="{_e(record.label.lower() + " " + record.nodeid.lower())}">'
            + "".join(cells)
            + "</tr>"
        )
    thead = "".join(f"<th>{_e(h)}</th>" for h in head)
    return (
        f'<table id="summary-table"><thead><tr>{thead}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _gates_section(data: ReportData) -> str:
    note = f'<p class="decision">{_e(data.gates_note)}</p>' if data.gates_note else ""
    if not data.gates:
        return f'<section id="groups"><h2>Groups</h2>{note}</section>' if note else ""
    rows = "".join(_gate_row(g) for g in data.gates)
    decision = (
        f'<p class="decision">Gates: {_e(data.decision.summary())}</p>' if data.decision else ""
    ) + note
    return (
        '<section id="groups"><h2>Groups</h2><table id="groups-table"><thead><tr>'
        "<th>Group</th><th>Evals</th><th>Passed</th><th>Pass rate</th><th>Threshold</th>"
        "<th>must_pass</th><th>Enforced</th><th>Verdict</th><th>Why</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>{decision}</section>"
    )


def _gate_row(gate: GateResult) -> str:
    cls = {"PASSED": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[gate.status]
    return (
        f'<tr class="{cls}"><td>{_e(gate.name)}</td><td class="num">{gate.total}</td>'
        f'<td class="num">{gate.passed_count}</td><td class="num">{fmt_rate(gate.rate)}</td>'
        f'<td class="num">{gate.config.threshold:.0%}</td>'
        f"<td>{_e(', '.join(gate.config.must_pass) or '–')}</td>"
        f"<td>{'yes' if gate.config.enforce else 'no'}</td>"
        f'<td><span class="badge {cls}">{gate.status}</span></td>'
        f"<td>{_e('; '.join(gate.problems))}</td></tr>"
    )


def _side_by_side_html(data: ReportData) -> str:
    params, compared = side_by_side(data)
    if not compared:
        return ""
    head = "<th>Transcript</th>" + "".join(f"<th>{_e(p)}</th>" for p in params)
    body = "".join(
        f"<tr><td>{_e(transcript)}</td>"
        + "".join(f"<td>{_e(fmt_variant(variants.get(p)))}</td>" for p in params)
        + "</tr>"
        for transcript, variants in compared
    )
    return (
        '<section id="side-by-side"><h2>Agents side by side</h2><table id="side-by-side-table">'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>"
    )


def _baseline_html(data: ReportData) -> str:
    if data.baseline_error:
        return (
            '<section id="baseline"><h2>Baseline</h2><p class="missing">Not compared: '
            f"{_e(data.baseline_error)}</p></section>"
        )
    comparison = data.baseline
    if comparison is None:
        return ""
    when = f" ({_e(comparison.generated_at)})" if comparison.generated_at else ""
    head = "".join(f"<th>{_e(h)}</th>" for h in BASELINE_HEADER)
    body = "".join(
        f'<tr class="change-{_e(row[3].split()[0])}">'
        + "".join(f"<td>{_e(cell)}</td>" for cell in row)
        + "</tr>"
        for row in baseline_rows(comparison)
    )
    extra = ""
    if comparison.new:
        extra += f"<p>New: {_e(', '.join(comparison.new))}</p>"
    if comparison.removed:
        extra += f"<p>Removed: {_e(', '.join(comparison.removed))}</p>"
    return (
        f'<section id="baseline"><h2>Baseline</h2><p>Against {_e(comparison.path)}{when}: '
        f"<b>{_e(comparison.headline)}</b></p>"
        f'<table id="baseline-table"><thead><tr>{head}</tr></thead><tbody>{body}</tbody>'
        f"</table>{extra}</section>"
    )


def _usage_cells(usage: Usage | None) -> str:
    if usage is None:
        return '<td class="num">–</td>' * 4
    values: tuple[int | None, ...] = (
        usage.input_tokens,
        usage.output_tokens,
        usage.total_tokens,
        usage.requests,
    )
    return "".join(f'<td class="num">{fmt_tokens(v)}</td>' for v in values)


def _cost_section(data: ReportData) -> str:
    agent, judge, caller = data.agent_usage, data.judge_usage, data.caller_usage
    if agent is None and judge is None and caller is None:
        return ""
    runs = data.run_count
    callers = f"<tr><td>Callers</td>{_usage_cells(caller)}</tr>" if caller is not None else ""
    return (
        '<section id="cost"><h2>Cost</h2><table id="cost-table"><thead><tr><th>Tokens</th>'
        "<th>Input</th><th>Output</th><th>Total</th><th>Requests</th></tr></thead><tbody>"
        f"<tr><td>Agent</td>{_usage_cells(agent)}</tr>"
        f"<tr><td>Judges</td>{_usage_cells(judge)}</tr>{callers}</tbody></table>"
        f"<p>Over {runs} runs: {_e(fmt_usage_parts(agent, judge, caller, runs))}.</p>"
        + "".join(f'<p class="cost">{_e(line)}</p>' for line in cost_lines(data))
        + "</section>"
    )


def _turn_html(turn: TurnResult, audio: AudioStore) -> str:
    facts = [fmt_seconds(turn.duration_s)]
    if turn.latency_s is not None:
        facts.append(f"latency {fmt_seconds(turn.latency_s)}")
    if turn.first_audio_latency_s is not None:
        facts.append(f"first audio {fmt_seconds(turn.first_audio_latency_s)}")
    if turn.usage is not None:
        facts.append(f"agent tokens {fmt_usage(turn.usage)}")
    if turn.judge_usage is not None:
        facts.append(f"judge tokens {fmt_usage(turn.judge_usage)}")
    rows = [("User", _t(turn.user))]
    if turn.audio:
        label = "Clean fixture" if turn.audio_in or turn.conditions else "User audio"
        rows.append((label, audio.player(turn.audio, "user audio")))
    if turn.conditions:
        rows.append(("Audio conditions", _e(turn.conditions)))
    if turn.audio_in:
        rows.append(("Streamed audio", audio.player(str(turn.audio_in), "streamed audio")))
    for label, text in heard_rows(turn):
        rows.append((_e(label), _t(text)))
    if turn.barge_in is not None:
        rows.append(("Barge-in", _e(fmt_barge_in(turn.barge_in))))
    if turn.timeline is not None:
        rows.append(("Timeline", render_timeline_svg(turn.timeline)))
    for speech in turn.agent_speech:
        detail = f'<span class="meta">({_e(fmt_agent_speech(speech))})</span>'
        rows.append((_e(AGENT_SPEECH_LABEL.capitalize()), f"{_e(speech.text)} {detail}"))
    rows.append(("Reply", _t(turn.reply)))
    for label, text in agent_rows(turn):
        rows.append((_e(label), _e(text)))
    if turn.audio_out:
        rows.append(("Reply audio", audio.player(str(turn.audio_out), "reply audio")))
    calls = "<br>".join(_t(fmt_tool_call(c)) for c in turn.tool_calls)
    rows.append(("Tool calls", calls or _e(no_tool_calls(turn))))
    if turn.evaluations:
        rows.append(("Checks", _checks_html(turn.evaluations)))
    if turn.crash is not None:
        rows.append(("Crashed", f'<span class="error-text">{_t(turn.crash.describe())}</span>'))
    if turn.error:
        rows.append(("Error", f'<span class="error-text">{_t(turn.error)}</span>'))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    cls = "turn" if turn.passed else "turn bad"
    return (
        f'<div class="{cls}"><b>Turn {turn.index + 1}</b>'
        f'<span class="meta">{_e(" · ".join(facts))}</span><dl>{body}</dl></div>'
    )


def _checks_html(evaluations: list[EvalResult]) -> str:
    items = []
    for ev in evaluations:
        cls = "err" if ev.errored else ("ok" if ev.passed else "no")
        extra = " (errored)" if ev.errored else ""
        reason = f": {_t(ev.reasoning)}" if ev.reasoning else ""
        items.append(f'<li class="{cls}"><b>{_e(ev.label)}</b>{extra}{reason}</li>')
    return f'<ul class="checks">{"".join(items)}</ul>'


def _greeting_html(run: RunResult) -> str:
    """What the agent said and did before turn 1, and the ``greeting:`` verdicts."""
    if not greeting_shown(run):
        return ""
    rows: list[tuple[str, str]] = []
    greeting = run.greeting
    if greeting is None:
        rows.append(("Greeting", "not observed by this adapter"))
    elif not greeting.speech and not greeting.tool_calls:
        rows.append(("Greeting", "the agent said nothing before turn 1"))
    else:
        for speech in greeting.speech:
            detail = f'<span class="meta">({_e(fmt_agent_speech(speech))})</span>'
            rows.append((_e(AGENT_SPEECH_LABEL.capitalize()), f"{_e(speech.text)} {detail}"))
        if greeting.tool_calls:
            calls = "<br>".join(_e(fmt_tool_call(c)) for c in greeting.tool_calls)
            rows.append(("Tool calls", calls))
    if run.greeting_evaluations:
        rows.append(("Checks", _checks_html(run.greeting_evaluations)))
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    bad = not all(e.passed for e in run.greeting_evaluations)
    return (
        f'<div class="{"turn bad" if bad else "turn"}"><b>Greeting</b>'
        f'<span class="meta">before turn 1</span><dl>{body}</dl></div>'
    )


def _conversation_html(run: RunResult) -> str:
    """A simulated run's end: who ended the call and why, the turns, the caller's cost, and
    each criterion's verdict with its reason."""
    rows = [(_e(label), _t(text)) for label, text in simulation_rows(run)]
    if run.evaluations:
        rows.append(("Criteria", _checks_html(run.evaluations)))
    if not rows:
        return ""
    body = "".join(f"<dt>{k}</dt><dd>{v}</dd>" for k, v in rows)
    bad = not all(e.passed for e in run.evaluations) or (
        run.simulation is not None and run.simulation.not_judged is not None
    )
    return (
        f'<div class="{"turn bad" if bad else "turn"}"><b>Conversation</b>'
        f'<span class="meta">simulated caller</span><dl>{body}</dl></div>'
    )


def _run_html(run: RunResult, audio: AudioStore) -> str:
    verdict = run.verdict
    facts = [fmt_seconds(run.duration_s)]
    if run.agent_usage is not None:
        facts.append(f"agent tokens {fmt_usage(run.agent_usage)}")
    if run.judge_usage is not None:
        facts.append(f"judge tokens {fmt_usage(run.judge_usage)}")
    error = f'<p class="error-text">Run error: {_e(run.error)}</p>' if run.error else ""
    if run.crash is not None:
        error = f'<p class="error-text">Crashed: {_e(run.crash.describe())}</p>' + error
    turns = _greeting_html(run) + "".join(_turn_html(t, audio) for t in run.turns)
    turns += _conversation_html(run) + _cause_html(run, audio)
    return (
        f'<details class="run {verdict}"{"" if run.passed else " open"}><summary>Run '
        f'{run.index + 1} <span class="badge {verdict}">{verdict}</span>'
        f'<span class="meta">{_e(" · ".join(facts))}</span></summary>{error}{turns}</details>'
    )


def _cause_html(run: RunResult, audio: AudioStore) -> str:
    """Why the run failed and the evidence, when attribution ran (docs/attribution.md), with
    each audio rerun's audio to hear beside the run's own (in its turns above)."""
    if run.attribution is None:
        return ""
    items = "".join(f"<li>{_e(line)}</li>" for line in evidence_lines(run.attribution))
    rows = [
        (f"{e.counterfactual} rerun, {what}", audio.player(path, f"{e.counterfactual} {what}"))
        for e in run.attribution.evidence
        for what, path in (("streamed audio", e.audio_in), ("reply audio", e.audio_out))
        if path is not None
    ]
    heard = "".join(f"<dt>{_e(k)}</dt><dd>{v}</dd>" for k, v in rows)
    players = f'<dl class="rerun-audio">{heard}</dl>' if heard else ""
    return (
        f'<div class="cause"><p><strong>Cause:</strong> {_e(run.attribution.describe())}</p>'
        f"<ul>{items}</ul>{players}</div>"
    )


def _causes_html(data: ReportData) -> str:
    """The attributed runs counted by cause, when attribution ran."""
    causes = cause_counts(data.ran)
    if not causes:
        return ""
    rows = "".join(
        f'<tr><td>{_e(cause)}</td><td class="num">{_e(n)}</td></tr>'
        for cause, n in cause_rows(causes)
    )
    return (
        '<section id="causes"><h2>Failure causes</h2><table><thead><tr><th>Cause</th>'
        f"<th>Failed runs</th></tr></thead><tbody>{rows}</tbody></table></section>"
    )


def _record_html(n: int, record: EvalRecord, audio: AudioStore, data: ReportData) -> str:
    res = record.result
    facts = [f"Test: {_e(record.nodeid)}"]
    if record.description:
        facts.append(f"Description: {_e(record.description)}")
    if record.reason:
        facts.append(f'<span class="error-reason">Error: {_e(record.reason)}</span>')
    if record.crash_reason:
        facts.append(f'<span class="error-reason">Crashed: {_e(record.crash_reason)}</span>')
    facts += [f"Note: {_e(note)}" for note in record.notes]
    if record.path:
        facts.append(f"File: {_e(data.show_path(record.path))}")
    if record.tags:
        facts.append("Tags: " + _e(", ".join(record.tags)))
    markers = shown_markers(record)
    if markers:
        facts.append("Markers: " + _e(", ".join(markers)))
    if res is None:
        facts.append(NO_RESULT[record.verdict == "passed"])
        body = ""
    else:
        facts.append(_e(score_fact(res)))
        if res.variant is not None:
            facts.append(f"Variant: {_e(res.variant)}")
        for check in res.checks:
            status = "errored" if check.errored else ("passed" if check.passed else "failed")
            facts.append(f"{_e(check.label)} {status}: {_e(check.reasoning)}")
        latency = latency_lines(res)
        if latency:
            facts.append(_e(latency_fact(res)))
            facts += [_e(line) for line in latency[1:]]
        if res.mean_wer is not None:
            facts.append(f"Mean WER {res.mean_wer:.2f} over {len(res.turn_wers)} voice turn(s)")
        usages = (res.agent_usage, res.judge_usage, res.caller_usage)
        if any(usage is not None for usage in usages):
            facts.append(f"Tokens: {_e(fmt_usage_parts(*usages, len(res.runs)))}")
        body = "".join(_run_html(run, audio) for run in res.runs)
    verdict = _verdict_class(record)
    open_attr = "" if verdict == "passed" else " open"
    name = _e(record.label.lower() + " " + record.nodeid.lower())
    items = "".join(f"<li>{f}</li>" for f in facts)
    return (
        f'<details class="transcript {verdict}" id="t{n}" data-verdict="{verdict}" '
        f'data-name="{name}"{open_attr}><summary>{_badge(record)} {_e(record.label)}'
        f"</summary><ul>{items}</ul>{body}</details>"
    )


def _headline(data: ReportData) -> str:
    ran = data.ran
    skipped = data.skipped_count
    facts = [f"<b>{data.passed_count} of {len(ran)} evals passed</b>"]
    if skipped:
        facts.append(f"{skipped} skipped")
    if data.generated_at is not None:
        stamp = data.generated_at.strftime("%Y-%m-%d %H:%M:%S %Z").strip()
        facts.append(f"generated {_e(stamp)}")
    if data.duration_s is not None:
        facts.append(f"session {_e(fmt_seconds(data.duration_s))}")
    if data.exit_status is not None:
        facts.append(f"exit status {data.exit_status}")
    session = "".join(f"<li>{_e(fact)}</li>" for fact in session_facts(data))
    return (
        '<p class="headline">'
        + " · ".join(facts)
        + f'</p><ul id="session-facts" class="meta">{session}</ul>'
    )


def render_html(data: ReportData, *, rootdir: Path, report_dir: Path) -> str:
    """The whole report as one HTML document.

    Args:
        data: What to show.
        rootdir: Where relative audio paths are resolved from.
        report_dir: The folder the report will be written to (for linked audio).
    """
    audio = AudioStore(rootdir=rootdir, report_dir=report_dir)
    if data.nothing_ran:
        skipped = data.skipped_count
        why = f" {skipped} eval test(s) were skipped." if skipped else ""
        main = f'<p class="headline" id="nothing-ran">{_e(NOTHING_RAN + why)}</p>'
        script = ""
    else:
        ran = data.ran
        failed = len(ran) - data.passed_count
        controls = (
            '<div class="controls" role="group" aria-label="Filter transcripts">'
            '<label><input type="radio" name="filter" id="filter-all" value="all" checked> '
            f"All ({len(ran)})</label>"
            '<label><input type="radio" name="filter" id="filter-failed" value="failed"> '
            f"Failed only ({failed})</label>"
            '<input type="search" id="filter-search" placeholder="Filter by name" '
            'aria-label="Filter by name"><span id="filter-count" class="meta"></span></div>'
        )
        details = "".join(_record_html(n, r, audio, data) for n, r in enumerate(ran))
        main = (
            _headline(data)
            + f'<section id="summary"><h2>Summary</h2>{controls}{_summary_table(data)}'
            + f'<figure class="chart-box">{render_chart_svg(ran)}</figure></section>'
            + _side_by_side_html(data)
            + _gates_section(data)
            + conformance_html(ran, audio.player)
            + _causes_html(data)
            + _baseline_html(data)
            + _cost_section(data)
            + f'<section id="transcripts"><h2>Transcripts</h2>{details}</section>'
        )
        # "</" cannot appear inside the JSON: base64 and our keys never contain it.
        script = (
            f'<script type="application/json" id="audio-data">{json.dumps(audio.data)}</script>'
            f"<script>{_SCRIPT}</script>"
        )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>Agent eval report</title><style>{_CSS}</style></head>"
        f"<body><main><h1>Agent eval report</h1>{_interrupted_html(data)}{main}</main>"
        f"{script}</body></html>\n"
    )


def _interrupted_html(data: ReportData) -> str:
    notice = session_notice(data)
    if notice is None:
        return ""
    head, lists = notice
    body = f"<strong>{_e(head)}</strong>"
    for title, items in lists:
        body += f"<p>{_e(title)}</p><ul>{''.join(f'<li>{_e(n)}</li>' for n in items)}</ul>"
    return f'<section id="interrupted" class="missing" role="alert">{body}</section>'
