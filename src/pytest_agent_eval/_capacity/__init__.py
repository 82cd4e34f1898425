"""``agent-eval capacity``: how many concurrent sessions of the user's own agent one core holds.

The private parts, one concern each: `_plan` (steps, budgets, gate; the pyproject table),
`_agent` (the agent and transcripts, loaded as the eval suite loads them), `_ramp` (K sessions
in real time per step), `_session` (one session's conversations, each ending filed under its
cause), `_children` (a process per session), `_worker` (worker mode: livekit-server and the
user's worker on loopback), `_measure` (psutil and the loop-lag probe), `_knee` (the steps
judged, the knee as sessions per core) and `_report` (JSON, HTML, the terminal table).

Exit codes: 0 done (and the gate, if any, passed), 1 below ``--min-sessions-per-core``,
2 bad input, 130 interrupted (Ctrl-C; the partial report is written first).
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from .._async import run_sync
from .._config import load_settings, parse_speed
from ..errors import AgentEvalError, ConfigError

if TYPE_CHECKING:
    from ..models import Transcript
    from ._agent import LoadedAgent as LoadedAgent
    from ._worker import WorkerLab
from ._knee import RepeatResult, StepSummary, find_knee, onsets
from ._plan import CapacityPlan, parse_plan_table, parse_steps, ramp_steps
from ._ramp import StepEvent, run_ramp
from ._report import (
    component_shares,
    machine,
    render_html,
    render_table,
    results_json,
    write_html,
    write_json,
)

__all__ = ["Output", "main", "run_plan"]

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
    parser.add_argument(
        "--worker",
        type=Path,
        help="worker mode: your LiveKit worker file, run as `python FILE start` behind a "
        "livekit-server on loopback, K callers in K rooms",
    )
    parser.add_argument("--agent-name", help="worker mode: the agent_name the worker registers")
    parser.add_argument(
        "--load-threshold",
        type=float,
        help="worker mode: the worker's load_threshold (0 to 1), to judge the calls it took by "
        "(default: what the worker logs; never logged, the calls go unjudged)",
    )
    parser.add_argument(
        "--process-per-session",
        action="store_true",
        default=None,
        help="each conversation in a process of its own (a bot per call, as Pipecat "
        "deployments run), CPU and memory over all of them",
    )
    parser.add_argument(
        "--cpu-by-component",
        action="store_true",
        default=None,
        help="meter each step's CPU by component (VAD, STT, LLM, TTS, your code, the "
        "framework); the meter's own CPU lowers the knee a little, so it is off by default",
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
        help="steps halving the gap between the last K within budget and the first over (default 4)",
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
    parser.add_argument(
        "--answer-timeout-s",
        type=float,
        help="a turn unanswered this long: the conversation stopped answering (default 30)",
    )
    parser.add_argument(
        "--fault-rate",
        type=float,
        help="share of the scripted stand-ins' provider requests failing with a 429 or a "
        "timeout, e.g. 0.05 (default 0)",
    )
    parser.add_argument(
        "--fault-timeout-s", type=float, help="how long an injected timeout hangs (default 10)"
    )
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
        "answer_timeout_s",
        "fault_rate",
        "fault_timeout_s",
        "agent",
        "agent_name",
        "load_threshold",
    ):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    if args.worker is not None:
        values["worker"] = args.worker.resolve()
    if args.process_per_session:
        values["process_per_session"] = True
    if args.cpu_by_component:
        values["cpu_by_component"] = True
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


def _progress(output: Output, event: StepEvent) -> None:
    if event.result is None:
        output.err(f"capacity: K={event.k} repeat {event.repeat + 1}/{event.repeats} ...")
        return
    r = event.result
    output.err(
        f"capacity: K={r.k} repeat {r.repeat + 1}/{event.repeats}: {len(r.latencies_s)} turns, "
        f"{len(r.failures)} failures, {len(r.unanswered)} stopped answering, "
        f"{sum(r.faults_injected.values())} faults injected, {r.measure.cores_used:.2f} cores"
    )


class Output:
    """Where a run writes: its table and report lines (``console``, stdout by default), its
    progress and errors (``err``, stderr by default). The pytest session gives its own."""

    def __init__(self, console: Any = None, err: Callable[[str], None] | None = None) -> None:
        if console is None:
            from rich.console import Console

            console = Console(stderr=False)
        self.console = console
        self.err = err or (lambda text: print(text, file=sys.stderr, flush=True))

    def out(self, text: str) -> None:
        self.console.print(text, markup=False, highlight=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``agent-eval capacity``; returns its exit code."""
    args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    try:
        from ._agent import load_plan_transcripts
        from ._measure import process_handle

        plan = build_plan(args)
        process_handle()  # psutil present, before any agent loads
        settings, _ = load_settings(plan.rootdir)
        transcripts = load_plan_transcripts(plan.transcripts, settings)
    except AgentEvalError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run_plan(plan, transcripts)


@contextlib.contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (a CI job cancelled, ``kill``) ends the run as Ctrl-C does: through the code
    that stops the worker, its job processes and the server, and writes what was measured.
    Python's default for SIGTERM ends the process on the spot, leaving them running (they run
    in sessions of their own, out of the terminal's reach). Only the main thread can set it."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_plan(
    plan: CapacityPlan,
    transcripts: Sequence[Transcript],
    output: Output | None = None,
    imported: Mapping[Path, ModuleType] | None = None,
) -> int:
    """Run ``plan`` over ``transcripts`` (the agent loaded, or the worker started, here),
    write its reports and return the command's exit code. ``imported``: conftest modules
    already imported (pytest's), used as they are. SIGTERM is Ctrl-C meanwhile."""
    with _terminate_as_interrupt():
        return _run_plan(plan, transcripts, output, imported)


def _run_plan(
    plan: CapacityPlan,
    transcripts: Sequence[Transcript],
    output: Output | None,
    imported: Mapping[Path, ModuleType] | None,
) -> int:
    output = output or Output()
    try:
        from ._agent import load_agent
        from ._measure import process_handle

        process_handle()
        watch: int | None = None
        lab: WorkerLab | None = None
        if plan.worker is not None:
            loaded, lab = _start_worker(plan, output)
            watch = lab.worker_pid
        else:
            loaded = load_agent(plan.rootdir, list(transcripts), plan.agent, imported)
    except AgentEvalError as exc:
        output.err(f"error: {exc}")
        return 2
    except KeyboardInterrupt:  # while the worker started: it is stopped already
        output.err("capacity: interrupted before the first step")
        return 130
    host = machine()
    results: list[RepeatResult] = []
    interrupted = False
    try:
        progress = partial(_progress, output)
        # Ctrl-C wakes the loop whichever thread the kernel gives it to (`run_sync`).
        run_sync(run_ramp(plan, loaded.adapter, transcripts, results, progress, watch))
    except KeyboardInterrupt:
        interrupted = True
    except AgentEvalError as exc:
        output.err(f"error: {exc}")
        return 2
    except SystemExit:
        raise
    except BaseException as exc:  # the user's adapter (its prepare), a pytest.skip
        output.err(f"error: the agent could not be run: {type(exc).__name__}: {exc}")
        return 2
    finally:
        loaded.close()
    judged = None if lab is None else lab.threshold(plan.load_threshold)
    if lab is not None:
        # Every repeat judged once, now, by the threshold known at the end of the run.
        results[:] = [judge_repeat(r, lab, plan.load_threshold) for r in results]
        if judged is None:
            output.out(
                "taken past load_threshold: unjudged: pass --load-threshold (the worker never "
                "logged its threshold)"
            )
    ids = [t.id for t in transcripts]
    return _report(plan, results, loaded.source, ids, host, interrupted, judged, output)


def judge_repeat(result: RepeatResult, lab: WorkerLab, given: float | None) -> RepeatResult:
    """``result`` with the calls its worker took past load_threshold during it (see
    `WorkerLab.taken_past_threshold`)."""
    import dataclasses

    if result.span is None:
        return result
    past = lab.taken_past_threshold(result.span, given, set(result.joined_rooms))
    return dataclasses.replace(result, past_threshold=past)


def _start_worker(plan: CapacityPlan, output: Output) -> tuple[LoadedAgent, WorkerLab]:
    """Worker mode: our livekit-server and the user's worker, and rooms to call it through."""
    import shutil
    import tempfile

    from ..adapters.livekit import LiveKitRoomAdapter
    from ._agent import LoadedAgent
    from ._worker import WorkerLab

    assert plan.worker is not None and plan.agent_name is not None
    workdir = Path(tempfile.mkdtemp(prefix="agent-eval-capacity-"))
    lab = WorkerLab(plan.worker, workdir=workdir)

    def stop() -> None:
        lab.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    output.err(f"capacity: starting livekit-server and {plan.worker.name} ...")
    try:
        lab.start()
        adapter = LiveKitRoomAdapter(
            plan.agent_name,
            url=lab.url,
            api_key=lab.api_key,
            api_secret=lab.api_secret,
            timeout_s=plan.answer_timeout_s,
        )
    except BaseException:
        stop()
        raise
    source = f"worker {plan.worker} (agent_name {plan.agent_name!r})"
    return LoadedAgent(adapter, source, stop), lab


def _only_faults(step: StepSummary) -> bool:
    """No turn answered at this step, and only injected faults ended its conversations."""
    return (
        step.p95_latency_ms is None
        and bool(step.fault_failures)
        and not step.failures
        and not step.unanswered
        and not step.refused
        and not step.timed_out
    )


def _report(
    plan: CapacityPlan,
    results: list[RepeatResult],
    agent: str,
    transcripts: list[str],
    host: dict[str, Any],
    interrupted: bool,
    load_threshold: tuple[float, str] | None = None,
    output: Output | None = None,
) -> int:
    output = output or Output()
    steps, knee = find_knee(results, plan.p95_latency_ms, plan.loop_lag_ms)
    past = next((s for s in steps if s.past_threshold), None)
    gate_failed = (
        None
        if plan.min_sessions_per_core is None or interrupted
        else knee.sessions_per_core < plan.min_sessions_per_core
    )
    if past is not None and not interrupted:
        gate_failed = True
    data = results_json(
        plan,
        steps,
        knee,
        agent=agent,
        transcripts=transcripts,
        host=host,
        interrupted=interrupted,
        gate_failed=gate_failed,
        load_threshold=load_threshold,
    )
    assert plan.json_path is not None and plan.html_path is not None
    write_json(plan.json_path, data)
    write_html(plan.html_path, render_html(data, steps, plan, knee))
    output.console.print(render_table(steps, knee, plan))
    for what, k in onsets(steps).items():
        if k is not None:
            output.out(f"{what.replace('_', ' ')} began at K={k}")
    for step in steps:
        if step.process_start_s is not None and step.process_start_cpu_s is not None:
            output.out(
                f"K={step.k}: each session's process: {step.rss_per_session_mb:.0f} MB resident "
                f"at its peak, {step.process_start_s:.1f} s to start "
                f"({step.process_start_cpu_s:.1f} CPU s: imports, the agent, its models)"
            )
        if step.cpu_by_component_s:
            output.out(f"K={step.k}: CPU by component: {component_shares(step)}")
        if step.failures:
            output.out(f"K={step.k}: first failure: {step.failures[0]}")
        if step.refused:
            output.out(f"K={step.k}: refused: {step.refused[0]}")
        if step.past_threshold:
            output.out(f"K={step.k}: taken past load_threshold: {step.past_threshold[0]}")
        if step.unanswered:
            output.out(f"K={step.k}: stopped answering: {step.unanswered[0]}")
        if step.fault_failures:
            output.out(f"K={step.k}: ended by an injected fault: {step.fault_failures[0]}")
        if step.log_warnings:
            message, count = next(iter(step.log_warnings.items()))
            output.out(f"K={step.k}: logged {count}x: {message}")
    output.out(f"results: {plan.json_path}\nhtml: {plan.html_path}")
    if interrupted:
        output.err("capacity: interrupted; the reports hold the steps that finished")
        return 130
    blocked = next((s for s in steps if s.k == knee.first_over), None)
    if blocked is not None and _only_faults(blocked):
        # Nothing was evaluated at this K: an error of the run, never a verdict on the agent.
        output.err(
            f"error: capacity could not evaluate the agent at K={blocked.k}: injected faults "
            f"ended every conversation ({len(blocked.fault_failures)}); lower --fault-rate"
        )
        return 2
    if past is not None:
        output.err(
            f"capacity gate failed: the worker took {len(past.past_threshold)} call(s) past its "
            f"load_threshold, beginning at K={past.k}: its load_fnc reports less load than its "
            "processes carry; make load_fnc report what they carry (LiveKit's default load_fnc "
            "measures CPU), or pass --load-threshold if the worker's threshold is not the one "
            "judged by"
        )
        return 1
    if gate_failed and plan.min_sessions_per_core is not None:
        output.err(
            f"capacity gate failed: {knee.sessions_per_core:.2f} sessions per core < "
            f"--min-sessions-per-core {plan.min_sessions_per_core:g}"
        )
        return 1
    return 0
