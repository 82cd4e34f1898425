"""``agent-eval capacity``: how many concurrent sessions of the user's own agent one core holds.

The private parts, one concern each: `_plan` (steps, budgets, gate; the pyproject table),
`_agent` (the agent and transcripts, loaded as the eval suite loads them), `_ramp` (K sessions
in real time per step), `_measure` (psutil and the loop-lag probe), `_knee` (the steps judged,
the knee as sessions per core) and `_report` (JSON, HTML, the terminal table).

Exit codes: 0 done (and the gate, if any, passed), 1 below ``--min-sessions-per-core``,
2 bad input, 130 interrupted (Ctrl-C; the partial report is written first).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .._config import load_settings, parse_speed
from ..errors import AgentEvalError, ConfigError
from ._knee import RepeatResult, find_knee
from ._plan import CapacityPlan, parse_plan_table, parse_steps, ramp_steps
from ._ramp import StepEvent, run_ramp
from ._report import (
    machine,
    render_html,
    render_table,
    results_json,
    write_html,
    write_json,
)

__all__ = ["main"]

DEFAULT_JSON = "agent-eval-capacity.json"
DEFAULT_HTML = "agent-eval-capacity.html"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="agent-eval capacity",
        description=(
            "Run your transcripts against your own agent with K concurrent sessions in one "
            "process, in real time, K ramping 1, 2, 4, ...; report the knee (the largest K "
            "within the latency and loop-lag budgets) as sessions per core. Settings: "
            "[tool.agent_eval.capacity] in pyproject.toml; options here win."
        ),
    )
    parser.add_argument(
        "transcripts", nargs="*", type=Path, help="YAML files or folders (default: yaml_dirs)"
    )
    parser.add_argument(
        "--rootdir", type=Path, default=None, help="the project (default: the current folder)"
    )
    parser.add_argument(
        "--agent",
        help="MODULE:ATTR of an adapter or a factory (default: the llm_eval_agent fixture)",
    )
    steps = parser.add_mutually_exclusive_group()
    steps.add_argument("--steps", help="the values of K, e.g. 1,2,4,8")
    steps.add_argument(
        "--max-sessions", type=int, help="ramp 1, 2, 4, ... up to this K (default 16)"
    )
    parser.add_argument("--repeats", type=int, help="runs of each step (default 3)")
    parser.add_argument(
        "--refine",
        type=int,
        help="steps halving the gap between the last K within budget and the first over (default 2)",
    )
    parser.add_argument(
        "--p95-latency-ms",
        type=float,
        help="budget: p95 end of speech to first audio (default 2000)",
    )
    parser.add_argument(
        "--loop-lag-ms", type=float, help="budget: p95 event-loop lag (default 100)"
    )
    parser.add_argument("--min-sessions-per-core", type=float, help="gate: exit 1 below this")
    parser.add_argument("--step-timeout-s", type=float, help="time bound of one step (default 300)")
    parser.add_argument("--speed", help="streaming speed: realtime (default) or a factor")
    parser.add_argument(
        "--all-steps", action="store_true", help="go on past the first step over budget"
    )
    parser.add_argument("--json", type=Path, help=f"results file (default {DEFAULT_JSON})")
    parser.add_argument("--html", type=Path, help=f"HTML report (default {DEFAULT_HTML})")
    return parser


def _pyproject_table(rootdir: Path) -> dict[str, Any]:
    path = rootdir / "pyproject.toml"
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    table = data.get("tool", {}).get("agent_eval", {}).get("capacity", {})
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.agent_eval.capacity] must be a table")
    return parse_plan_table(table, rootdir=rootdir, source=f"{path} [tool.agent_eval.capacity]")


def build_plan(args: argparse.Namespace) -> CapacityPlan:
    """The plan from pyproject's table and the options (which win)."""
    rootdir = (args.rootdir or Path.cwd()).resolve()
    if not rootdir.is_dir():
        raise ConfigError(f"capacity: --rootdir {rootdir} is not a folder")
    values = _pyproject_table(rootdir)
    if args.steps is not None:
        values["steps"] = parse_steps(args.steps, "--steps")
    elif args.max_sessions is not None:
        values["steps"] = ramp_steps(args.max_sessions)
    for name in (
        "repeats",
        "refine",
        "p95_latency_ms",
        "loop_lag_ms",
        "min_sessions_per_core",
        "step_timeout_s",
        "agent",
    ):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    if args.speed is not None:
        values["speed"] = parse_speed(args.speed, "--speed")
    if args.json is not None:
        values["json_path"] = args.json
    if args.html is not None:
        values["html_path"] = args.html
    values.setdefault("json_path", rootdir / DEFAULT_JSON)
    values.setdefault("html_path", rootdir / DEFAULT_HTML)
    for option, key in (("--json", "json_path"), ("--html", "html_path")):
        if Path(values[key]).is_dir():  # found now, not after the whole ramp has run
            raise ConfigError(f"{option} {values[key]} is a folder; give a file path")
    return CapacityPlan(
        rootdir=rootdir,
        transcripts=tuple(p.resolve() for p in args.transcripts),
        stop_at_breach=not args.all_steps,
        **values,
    )


def _progress(event: StepEvent) -> None:
    if event.result is None:
        print(
            f"capacity: K={event.k} repeat {event.repeat + 1}/{event.repeats} ...",
            file=sys.stderr,
            flush=True,
        )
        return
    r = event.result
    print(
        f"capacity: K={r.k} repeat {r.repeat + 1}/{event.repeats}: {len(r.latencies_s)} turns, "
        f"{len(r.failures)} failures, {r.measure.cores_used:.2f} cores",
        file=sys.stderr,
        flush=True,
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agent-eval capacity``; returns its exit code."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        from ._agent import load_agent, load_plan_transcripts
        from ._measure import process_handle

        plan = build_plan(args)
        process_handle()  # psutil present, before any agent loads
        settings, _ = load_settings(plan.rootdir)
        transcripts = load_plan_transcripts(plan.transcripts, settings)
        loaded = load_agent(plan.rootdir, transcripts, plan.agent)
    except AgentEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    host = machine()
    results: list[RepeatResult] = []
    interrupted = False
    try:
        asyncio.run(run_ramp(plan, loaded.adapter, transcripts, results, _progress))
    except KeyboardInterrupt:
        interrupted = True
    except AgentEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except SystemExit:
        raise
    except BaseException as exc:  # the user's adapter (its prepare), a pytest.skip
        print(f"error: the agent could not be run: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        loaded.close()
    return _report(plan, results, loaded.source, [t.id for t in transcripts], host, interrupted)


def _report(
    plan: CapacityPlan,
    results: list[RepeatResult],
    agent: str,
    transcripts: list[str],
    host: dict[str, Any],
    interrupted: bool,
) -> int:
    from rich.console import Console

    steps, knee = find_knee(results, plan.p95_latency_ms, plan.loop_lag_ms)
    gate_failed = (
        None
        if plan.min_sessions_per_core is None or interrupted
        else knee.sessions_per_core < plan.min_sessions_per_core
    )
    data = results_json(
        plan,
        steps,
        knee,
        agent=agent,
        transcripts=transcripts,
        host=host,
        interrupted=interrupted,
        gate_failed=gate_failed,
    )
    assert plan.json_path is not None and plan.html_path is not None
    write_json(plan.json_path, data)
    write_html(plan.html_path, render_html(data, steps, plan, knee))
    console = Console(stderr=False)
    console.print(render_table(steps, knee, plan))
    for step in steps:
        if step.failures:
            console.print(f"K={step.k}: first failure: {step.failures[0]}", markup=False)
        if step.log_warnings:
            message, count = next(iter(step.log_warnings.items()))
            console.print(f"K={step.k}: logged {count}x: {message}", markup=False)
    print(f"results: {plan.json_path}\nhtml: {plan.html_path}")
    if interrupted:
        print("capacity: interrupted; the reports hold the steps that finished", file=sys.stderr)
        return 130
    if gate_failed:
        print(
            f"capacity gate failed: {knee.sessions_per_core:.2f} sessions per core < "
            f"--min-sessions-per-core {plan.min_sessions_per_core:g}",
            file=sys.stderr,
        )
        return 1
    return 0
