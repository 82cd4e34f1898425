"""The machine-readable results file: written by one session, read back as another's baseline.

``--agent-eval-results PATH`` (or ``results_path``) writes one JSON document per session, with
a ``schema_version`` that changes only when a field changes meaning or goes away (fields may be
added within a version). ``--agent-eval-baseline PATH`` reads such a file back
(`load_baseline`); the comparison itself is `report._baseline`, and `baseline_rows` words it
for every report.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .._records import EvalRecord
from .._serialize import to_json
from ..models import Crash, RunResult, ToolCall, TurnResult, Usage
from ._baseline import BaselineError
from ._format import BASELINE_HEADER, baseline_rows
from ._records import ReportData

__all__ = [
    "BASELINE_HEADER",
    "RATE_DECIMALS",
    "RESULTS_SCHEMA_VERSION",
    "SECONDS_DECIMALS",
    "baseline_rows",
    "load_baseline",
    "results_document",
]

RESULTS_SCHEMA_VERSION = 1
"""The version of the results file's schema (docs/reports.md describes every field)."""


def _usage(usage: Usage | None) -> dict[str, int | None] | None:
    if usage is None:
        return None
    return {
        "input": usage.input_tokens,
        "output": usage.output_tokens,
        "total": usage.total_tokens,
        "requests": usage.requests,
    }


RATE_DECIMALS = 4
"""Scores and interval ends in the results file: 4 decimals (``0.6667``), enough to tell any
two pass rates of up to 10,000 runs apart."""
SECONDS_DECIMALS = 3
"""Durations and latencies in the results file: milliseconds."""


def _round(value: float | None, decimals: int) -> float | None:
    return None if value is None else round(value, decimals)


def _eval_entry(record: EvalRecord) -> dict[str, Any]:
    res = record.result
    entry: dict[str, Any] = {
        "key": record.key,
        "nodeid": record.nodeid,
        "transcript_id": record.transcript_id,
        "param": record.param,
        "label": record.label,
        "description": record.description,
        "tags": list(record.tags),
        "verdict": record.verdict,
        "reason": record.reason,
        "crash": record.crash_reason,
        "notes": list(record.notes),
        "threshold": res.threshold if res is not None else record.threshold,
        "planned_runs": (res.planned_runs or len(res.runs)) if res else record.planned_runs,
        "runs": None,
        "passed_runs": None,
        "score": None,
        "ci": None,
        "p95_latency_s": None,
        "agent_tokens": None,
        "judge_tokens": None,
        "duration_s": record.duration_s,
        "captures": None,
    }
    if res is not None:
        entry.update(
            runs=len(res.runs),
            passed_runs=res.passed_run_count,
            score=_round(res.score, RATE_DECIMALS),
            ci=[_round(end, RATE_DECIMALS) for end in res.interval],
            p95_latency_s=_round(res.p95_latency_s, SECONDS_DECIMALS),
            agent_tokens=_usage(res.agent_usage),
            judge_tokens=_usage(res.judge_usage),
        )
        simulated = [run.simulation for run in res.runs if run.simulation is not None]
        if simulated:
            entry["simulation"] = _simulation_entry(res, simulated)
        entry["captures"] = [_run_capture(run) for run in res.runs]
    if record.turn_taking is not None:  # docs/turn-taking.md, "In the reports"
        entry["turn_taking"] = to_json(record.turn_taking)
    return entry


def _run_capture(run: RunResult) -> dict[str, Any]:
    """What one run did, turn by turn: enough to compare two sessions' runs without parsing a
    report (docs/reports.md, "Per-turn captures")."""
    greeting = run.greeting
    return {
        "run": run.index + 1,
        "verdict": run.verdict,
        "error": run.error,
        "crash": _crash_capture(run.crash),
        "duration_s": _round(run.duration_s, SECONDS_DECIMALS),
        "greeting": None
        if greeting is None
        else {
            "text": greeting.text,
            "tool_calls": [_tool_call_capture(c) for c in greeting.tool_calls],
        },
        "turns": [_turn_capture(turn) for turn in run.turns],
        "attribution": None
        if run.attribution is None
        else {**to_json(run.attribution), "summary": run.attribution.describe()},
    }


def _turn_capture(turn: TurnResult) -> dict[str, Any]:
    handoffs = turn.handoffs
    speed = turn.metadata.get("speed")
    return {
        "turn": turn.index + 1,
        "user": turn.user,
        "audio": turn.audio,
        "conditions": turn.conditions,
        "verdict": turn.verdict,
        "error": turn.error,
        "crash": _crash_capture(turn.crash),
        "reply": turn.reply,
        "heard": turn.heard,
        "agent": turn.active_agent,
        "handoffs": None
        if handoffs is None
        else [{"from": h.from_agent, "to": h.to_agent} for h in handoffs],
        "tool_calls": [_tool_call_capture(c) for c in turn.tool_calls],
        "tool_calls_unobserved": turn.tool_calls_unobserved,
        "latency_s": _round(turn.latency_s, SECONDS_DECIMALS),
        "first_audio_latency_s": _round(turn.first_audio_latency_s, SECONDS_DECIMALS),
        "duration_s": _round(turn.duration_s, SECONDS_DECIMALS),
        "speed": speed if isinstance(speed, int | float) and not isinstance(speed, bool) else None,
        "timeline": to_json(turn.timeline),
        "checks": [
            {
                "name": check.name,
                "key": check.key,
                "location": check.location,
                "passed": check.passed,
                "errored": check.errored,
                "reason": check.reasoning,
            }
            for check in turn.evaluations
        ],
    }


def _crash_capture(crash: Crash | None) -> dict[str, Any] | None:
    if crash is None:
        return None
    return {"type": crash.type, "message": crash.message, "where": crash.where}


def _tool_call_capture(call: ToolCall) -> dict[str, Any]:
    return {
        "name": call.name,
        "args": to_json(call.args),
        "outcome": call.outcome,
        "output": to_json(call.output),
        "error": call.error,
    }


def _simulation_entry(res: Any, simulated: list[Any]) -> dict[str, Any]:
    """A simulation's facts over its runs (only on a simulation's entry): what the caller
    cost, and how each run's call ended."""
    ended: dict[str, int] = {}
    for record in simulated:
        ended[record.ended_by] = ended.get(record.ended_by, 0) + 1
    return {
        "caller_model": simulated[0].model,
        "caller_requests": sum(r.requests for r in simulated),
        "caller_cached_turns": sum(r.cached_turns for r in simulated),
        "cached_verdicts": sum(r.cached_verdicts for r in simulated),
        # Which runs replayed something from the caller cache, and when it was recorded: a
        # replay is the models as they answered then.
        "replayed_runs": [
            {"run": run, "recorded_at": r.recorded_at}
            for run, r in enumerate(simulated, start=1)
            if r.cached_turns or r.cached_verdicts
        ],
        "caller_tokens": _usage(res.caller_usage),
        "ended": ended,
        "turns": [r.turns for r in simulated],
    }


def results_document(data: ReportData) -> dict[str, Any]:
    """The results file's content: the session's facts and one entry per eval (skipped ones
    too, with verdict ``skipped``)."""
    return {
        "schema_version": RESULTS_SCHEMA_VERSION,
        "package_version": data.package_version,
        "frameworks": dict(data.frameworks),
        "generated_at": data.generated_at.isoformat() if data.generated_at else None,
        "duration_s": _round(data.duration_s, SECONDS_DECIMALS),
        "complete": data.complete,
        "stopped": data.stopped,
        "exit_status": data.exit_status,
        "selection": list(data.selection),
        "agent_models": list(data.agent_models),
        "judge_models": list(data.judge_models),
        "seeds": {what: value for what, value in data.seeds},
        "load_errors": [{"nodeid": nodeid, "error": error} for nodeid, error in data.load_errors],
        "evals": [_eval_entry(r) for r in data.records],
        "shard": dict(data.shard) if data.shard is not None else None,
        "merged_from": [dict(m) for m in data.merged_from],
    }


def load_baseline(path: Path) -> dict[str, Any]:
    """Read an earlier results file.

    Raises:
        BaselineError: naming the file and what to do.
    """
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BaselineError(
            f"baseline {path}: cannot be read ({exc.strerror or exc}); give the results file "
            "an earlier session wrote with --agent-eval-results"
        ) from None
    except ValueError as exc:
        raise BaselineError(f"baseline {path}: not JSON ({exc})") from None
    if not isinstance(document, dict) or not isinstance(document.get("evals"), list):
        raise BaselineError(f"baseline {path}: not a results file (no 'evals' list)")
    version = document.get("schema_version")
    if version != RESULTS_SCHEMA_VERSION:
        raise BaselineError(
            f"baseline {path}: schema_version {version!r}, this version reads "
            f"{RESULTS_SCHEMA_VERSION}; write a new baseline with --agent-eval-results"
        )
    return document
