"""The capacity run's reports: the results JSON (written atomically), an HTML page with the
latency-versus-K chart, and the terminal table. Each says what the run cannot see."""

from __future__ import annotations

import html
import json
import os
import platform
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .._atomic import write_atomic
from ._knee import Knee, StepSummary, onsets
from ._plan import CapacityPlan

__all__ = [
    "NOT_SEEN",
    "NOT_SEEN_WORKER",
    "SCHEMA",
    "component_shares",
    "headline",
    "machine",
    "not_seen",
    "render_html",
    "render_table",
    "results_json",
]

SCHEMA = "agent-eval-capacity/1"

NOT_SEEN = (
    "What this does not measure: the carrier and the network (loopback only), the providers' "
    "own latency and rate limits (stand-ins replay latency and injected faults at most), other "
    "processes sharing the machine, and a worker's job processes (one process, in-process "
    "sessions)."
)

NOT_SEEN_WORKER = (
    "What this does not measure: the carrier and the network (loopback only), the providers' "
    "own latency and rate limits (stand-ins replay latency and injected faults at most), other "
    "processes sharing the machine, and a load_fnc's own measure: calls taken past "
    "load_threshold are judged by the worker's CPU load, LiveKit's default measure."
)


def not_seen(plan: CapacityPlan) -> str:
    """What the run's mode cannot see."""
    return NOT_SEEN_WORKER if plan.worker is not None else NOT_SEEN


def machine() -> dict[str, Any]:
    """The machine the figures belong to."""
    model = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                model = line.partition(":")[2].strip()
                break
    except OSError:
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {
        "cpu_model": model,
        "logical_cores": os.cpu_count(),
        "usable_cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "load_average_1m_at_start": round(load[0], 2) if load else None,
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def results_json(
    plan: CapacityPlan,
    steps: Sequence[StepSummary],
    knee: Knee,
    *,
    agent: str,
    transcripts: Sequence[str],
    host: dict[str, Any],
    interrupted: bool,
    gate_failed: bool | None,
    load_threshold: tuple[float, str] | None = None,
) -> dict[str, Any]:
    """Everything the run found, as the results file holds it. ``gate_failed`` is also True
    when a worker took calls past ``load_threshold`` (the value judged by, and its source)."""
    past = onsets(steps)["past_threshold"]
    return {
        "schema": SCHEMA,
        "complete": not interrupted,
        "agent": agent,
        "transcripts": list(transcripts),
        "machine": host,
        "plan": {
            "steps": list(plan.steps),
            "repeats": plan.repeats,
            "refine": plan.refine,
            "speed": plan.speed,
            "budget": {"p95_latency_ms": plan.p95_latency_ms, "loop_lag_ms": plan.loop_lag_ms},
            "min_sessions_per_core": plan.min_sessions_per_core,
            "step_timeout_s": plan.step_timeout_s,
            "answer_timeout_s": plan.answer_timeout_s,
            "fault_rate": plan.fault_rate,
            "fault_timeout_s": plan.fault_timeout_s,
        },
        "knee": {
            "k": knee.k,
            "sessions_per_core": round(knee.sessions_per_core, 3),
            "interval": [round(knee.low, 3), round(knee.high, 3)],
            "first_over_budget_k": knee.first_over,
            "bounded": knee.first_over is not None,
        },
        "began_at_k": onsets(steps),
        "gate": None
        if gate_failed is None
        else {
            "min_sessions_per_core": plan.min_sessions_per_core,
            "passed": not gate_failed,
            # Worker mode: the K where the worker began taking calls past load_threshold.
            **({} if load_threshold is None else {"taken_past_load_threshold_at_k": past}),
        },
        "worker_load_threshold": None
        if load_threshold is None
        else {"value": load_threshold[0], "from": load_threshold[1]},
        "steps": [{**asdict(s), "within_budget": s.within_budget} for s in steps],
        "mode": "worker"
        if plan.worker is not None
        else ("process per session" if plan.process_per_session else "in process"),
        "not_measured": not_seen(plan),
    }


def write_json(path: Path, data: dict[str, Any]) -> None:
    """The results file, written atomically (a reader never sees half of it)."""
    write_atomic(path, json.dumps(data, indent=2) + "\n")


def write_html(path: Path, page: str) -> None:
    """The HTML page, written atomically."""
    write_atomic(path, page)


def headline(knee: Knee) -> str:
    """``"4.00 sessions per core"``, or ``"at least ..."`` when no step went over budget (the
    ramp ended before the knee: raise --max-sessions to find it)."""
    bound = "" if knee.first_over is not None else "at least "
    return f"{bound}{knee.sessions_per_core:.2f} sessions per core"


def _faults(step: StepSummary) -> str:
    """``"3 (1)"``: faults injected, and conversations they ended; ``"-"`` without injection."""
    if step.provider_requests is None:
        return "-"
    return f"{sum(step.faults_injected.values())} ({len(step.fault_failures)})"


def component_shares(step: StepSummary) -> str:
    """The step's CPU by component as shares of the whole, largest first, and its seconds."""
    total = sum(step.cpu_by_component_s.values())
    if total <= 0:
        return "none measured"
    parts = sorted(step.cpu_by_component_s.items(), key=lambda item: -item[1])
    shares = ", ".join(f"{name} {100 * sec / total:.0f}%" for name, sec in parts)
    return f"{shares} (of {total:.1f} CPU s)"


def _fmt(value: float | None, digits: int = 0) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _chart(steps: Sequence[StepSummary], plan: CapacityPlan, knee: Knee) -> str:
    """An inline SVG: p50 and p95 latency and loop lag p95 against K, the budget as a line."""
    width, height, pad = 640, 320, 52
    ks = [s.k for s in steps] or [1]
    top = max(
        [plan.p95_latency_ms * 1.2]
        + [v for s in steps for v in (s.p95_latency_ms, s.loop_lag_p95_ms) if v is not None]
    )

    def x(k: int) -> float:
        index = ks.index(k)
        return pad + (width - 2 * pad) * (index / max(1, len(ks) - 1))

    def y(ms: float) -> float:
        return height - pad - (height - 2 * pad) * (ms / top)

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="latency versus concurrent sessions">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#444"/>',
        f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="#444"/>',
        f'<line x1="{pad}" y1="{y(plan.p95_latency_ms):.1f}" x2="{width - pad}" '
        f'y2="{y(plan.p95_latency_ms):.1f}" stroke="#c00" stroke-dasharray="6 4"/>',
        f'<text x="{width - pad}" y="{y(plan.p95_latency_ms) - 4:.1f}" text-anchor="end" '
        f'font-size="11" fill="#c00">p95 budget {plan.p95_latency_ms:g} ms</text>',
        f'<line x1="{pad}" y1="{y(plan.loop_lag_ms):.1f}" x2="{width - pad}" '
        f'y2="{y(plan.loop_lag_ms):.1f}" stroke="#2ca02c" stroke-dasharray="6 4"/>',
        f'<text x="{width - pad}" y="{y(plan.loop_lag_ms) - 4:.1f}" text-anchor="end" '
        f'font-size="11" fill="#2ca02c">loop lag budget {plan.loop_lag_ms:g} ms</text>',
        f'<text x="{width / 2}" y="{height - 8}" text-anchor="middle" font-size="12">'
        "concurrent sessions (K)</text>",
        f'<text x="12" y="{pad - 12}" font-size="12">ms</text>',
    ]
    for fraction in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<text x="{pad - 4}" y="{y(top * fraction) + 4:.1f}" text-anchor="end" '
            f'font-size="10">{top * fraction:.0f}</text>'
        )
    for k in ks:
        parts.append(
            f'<text x="{x(k):.1f}" y="{height - pad + 16}" text-anchor="middle" '
            f'font-size="11">{k}</text>'
        )
    series = (
        ("p50 latency", "p50_latency_ms", "#1f77b4"),
        ("p95 latency", "p95_latency_ms", "#ff7f0e"),
        ("loop lag p95", "loop_lag_p95_ms", "#2ca02c"),
    )
    for row, (label, attr, colour) in enumerate(series):
        points = [(x(s.k), y(getattr(s, attr))) for s in steps if getattr(s, attr) is not None]
        if points:
            path = " ".join(f"{px:.1f},{py:.1f}" for px, py in points)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>'
            )
            parts.extend(
                f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>' for px, py in points
            )
        parts.append(
            f'<text x="{pad + 8}" y="{pad + 14 * row}" font-size="11" fill="{colour}">'
            f"{html.escape(label)}</text>"
        )
    if knee.k in ks:
        parts.append(
            f'<line x1="{x(knee.k):.1f}" y1="{pad}" x2="{x(knee.k):.1f}" y2="{height - pad}" '
            'stroke="#888" stroke-dasharray="2 3"/>'
        )
        parts.append(
            f'<text x="{x(knee.k) + 4:.1f}" y="{pad + 10}" font-size="11" fill="#555">'
            f"knee K={knee.k}</text>"
        )
    parts.append("</svg>")
    return "\n".join(parts)


_COMPONENT_COLOURS = {
    "vad": "#1f77b4",
    "turn": "#aec7e8",
    "stt": "#ff7f0e",
    "llm": "#2ca02c",
    "tts": "#d62728",
    "agent": "#8c564b",
    "framework": "#7f7f7f",
    "ours": "#bcbd22",
    "other": "#17becf",
    "unattributed": "#dddddd",
}


def _component_chart(steps: Sequence[StepSummary]) -> str:
    """An inline SVG: for each K, a bar of the step's CPU split by component (shares of the
    step's metered CPU, its CPU seconds at the end); a sentence when nothing was metered."""
    metered = [s for s in steps if sum(s.cpu_by_component_s.values()) > 0]
    if not metered:
        return (
            "<p>CPU by component: not metered (run with <code>--cpu-by-component</code> to see "
            "where each step's CPU went).</p>"
        )
    names: list[str] = []
    for step in metered:
        names += [name for name in step.cpu_by_component_s if name not in names]
    width, left, right, bar, gap = 640, 52, 110, 18, 8
    top = 34
    height = top + len(metered) * (bar + gap) + 8
    span = width - left - right
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        'role="img" aria-label="CPU by component at each K">',
    ]
    x = float(left)
    for name in names:
        colour = _COMPONENT_COLOURS.get(name, "#999999")
        parts.append(f'<rect x="{x:.1f}" y="6" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 13:.1f}" y="15" font-size="11">{html.escape(name)}</text>')
        x += 13 + 7 * len(name) + 12
    for row, step in enumerate(metered):
        total = sum(step.cpu_by_component_s.values())
        y = top + row * (bar + gap)
        parts.append(
            f'<text x="{left - 6}" y="{y + bar - 5}" text-anchor="end" font-size="11">'
            f"K={step.k}</text>"
        )
        x = float(left)
        for name in names:
            seconds = step.cpu_by_component_s.get(name, 0.0)
            if seconds <= 0:
                continue
            share = seconds / total
            colour = _COMPONENT_COLOURS.get(name, "#999999")
            parts.append(
                f'<rect x="{x:.1f}" y="{y}" width="{span * share:.1f}" height="{bar}" '
                f'fill="{colour}" data-component="{html.escape(name)}" '
                f'data-share="{share:.4f}"><title>K={step.k}: {html.escape(name)} '
                f"{seconds:.2f} CPU s ({100 * share:.0f}%)</title></rect>"
            )
            x += span * share
        parts.append(
            f'<text x="{left + span + 6}" y="{y + bar - 5}" font-size="11">{total:.1f} CPU s</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def render_html(
    data: dict[str, Any], steps: Sequence[StepSummary], plan: CapacityPlan, knee: Knee
) -> str:
    """The HTML page: the knee, the chart, the steps' table, the machine, and the limits."""
    rows = "\n".join(
        "<tr>"
        + "".join(
            f"<td>{html.escape(str(v))}</td>"
            for v in (
                s.k,
                _fmt(s.p50_latency_ms),
                _fmt(s.p95_latency_ms),
                _fmt(s.loop_lag_p95_ms, 1),
                _fmt(s.cores_used, 2),
                _fmt(s.cpu_s_per_audio_s, 2),
                _fmt(s.rss_peak_mb),
                len(s.failures),
                len(s.unanswered),
                len(s.past_threshold),
                _faults(s),
                "yes" if s.within_budget else "; ".join(s.over_budget),
            )
        )
        + "</tr>"
        for s in steps
    )
    host = data["machine"]
    status = "" if data["complete"] else "<p><strong>Interrupted: a partial report.</strong></p>"
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Capacity: sessions per core</title>
<style>body{{font-family:sans-serif;max-width:56rem;margin:2rem auto}}
table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:.2rem .5rem}}</style>
</head><body>
<h1>Capacity: {headline(knee)}</h1>
{status}
<p>Knee: K = {knee.k} concurrent sessions within budget (p95 latency &le; {plan.p95_latency_ms:g} ms,
loop lag p95 &le; {plan.loop_lag_ms:g} ms); over the repeats {knee.low:.2f} to {knee.high:.2f}
sessions per core. Agent: {html.escape(data["agent"])}.</p>
{_chart(steps, plan, knee)}
<h2>Where the CPU went</h2>
{_component_chart(steps)}
<table><thead><tr><th>K</th><th>p50 ms</th><th>p95 ms</th><th>loop lag p95 ms</th>
<th>cores used</th><th>CPU s per audio s</th><th>RSS peak MB</th><th>failures</th><th>stopped answering</th>
<th>taken past load_threshold</th><th>injected faults (conversations ended)</th><th>within budget</th></tr></thead>
<tbody>
{rows}
</tbody></table>
<p>Machine: {html.escape(str(host["cpu_model"]))}, {host["usable_cores"]} usable cores,
load {host["load_average_1m_at_start"]} at start.</p>
<p>{html.escape(not_seen(plan))}</p>
</body></html>
"""


def render_table(steps: Sequence[StepSummary], knee: Knee, plan: CapacityPlan) -> Any:
    """A rich table of the steps, titled with the knee."""
    from rich.table import Table

    table = Table(
        title=(
            f"{headline(knee)} [{knee.low:.2f}-{knee.high:.2f} over the repeats] (knee K={knee.k})"
            + ("" if knee.first_over is not None else ": no step went over budget")
        )
    )
    worker = plan.worker is not None  # calls past load_threshold: a worker's only
    columns = (
        "K", "p50 ms", "p95 ms", "loop lag p95 ms", "cores", "RSS MB", "RSS/session MB",
        "fail", "stopped",
        *(("past threshold",) if worker else ()),
    )  # fmt: skip
    for column in (*columns, "faults", "budget"):
        table.add_column(column, justify="right" if column != "budget" else "left")
    for s in steps:
        table.add_row(
            str(s.k),
            _fmt(s.p50_latency_ms),
            _fmt(s.p95_latency_ms),
            _fmt(s.loop_lag_p95_ms, 1),
            _fmt(s.cores_used, 2),
            _fmt(s.rss_peak_mb),
            _fmt(s.rss_per_session_mb),
            str(len(s.failures)),
            str(len(s.unanswered)),
            *((str(len(s.past_threshold)),) if worker else ()),
            _faults(s),
            "ok" if s.within_budget else "over: " + "; ".join(s.over_budget),
        )
    return table
