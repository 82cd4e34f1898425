"""Sessions per core of the example agents, with ``agent-eval capacity`` as a user runs it.

Copies examples/voice-livekit (examples/voice-pipecat with ``--pipecat``; with ``--worker``,
examples/voice-livekit-room, whose ``agent.py`` runs as a deployed LiveKit worker behind a
livekit-server on loopback, K callers in K rooms) to a temporary folder, synthesizes its
voice fixtures offline, and runs the command there in a subprocess: K concurrent sessions in
real time, K = 1, 2, 4, ... up to ``--max-sessions``, ``--repeats`` times each.
``--latency P50,P95`` (seconds) gives the scripted LLM a provider's time to first token (a
LiveKit factory module is written next to the agent and passed as ``--agent``).

    .venv/bin/python bench/capacity.py [--max-sessions 64] [--repeats 3] [--refine 4]
        [--latency 0.4,0.9] [--p95-latency-ms 5000]
        [--fault-rate 0.05] [--runs 3] [--pipecat | --worker] [--process-per-session]
        [--cpu-by-component] [--keep DIR]

``--runs N`` runs the whole command N times and prints each run's knee and the spread of
sessions per core over the runs ((max - min) / mean) and the largest deviation of a run from
their mean (the issue's "within +-10%"): the repeatability the figure has on this
machine at its load.

Prints the command's table and the knee, the interval, the machine and its load: the figure
depends on what else the machine runs (docs/benchmarks.md says when it was measured under load).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

LATENCY_AGENT = '''\
"""The example's agent, its scripted LLM waiting a provider's latency (bench/capacity.py)."""

from booking_agent import RULES, VAD, RestaurantAgent
from livekit.agents import AgentSession

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    eval_session_kwargs,
)


def make_session():
    session = AgentSession(
        stt=FixtureTextSTT(),
        vad=VAD,
        llm=ScriptedLLM(RULES, latency=({p50}, {p95})),
        **eval_session_kwargs(),
    )
    return session, RestaurantAgent()


def make_adapter():
    return LiveKitAdapter(make_session, timeout_s=20.0)
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-sessions", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--refine", type=int, help="refining steps after the first step over")
    parser.add_argument("--latency", help="P50,P95 seconds of the scripted LLM (LiveKit only)")
    parser.add_argument("--p95-latency-ms", help="the latency budget (default the command's: 2000)")
    parser.add_argument("--fault-rate", help="share of provider requests failing (429/timeout)")
    parser.add_argument("--runs", type=int, default=1, help="whole runs, for the spread")
    parser.add_argument("--pipecat", action="store_true", help="the Pipecat example instead")
    parser.add_argument(
        "--worker",
        action="store_true",
        help="the LiveKit example as a deployed worker (examples/voice-livekit-room's agent.py)",
    )
    parser.add_argument(
        "--process-per-session", action="store_true", help="each conversation in its own process"
    )
    parser.add_argument(
        "--cpu-by-component", action="store_true", help="meter each step's CPU by component"
    )
    parser.add_argument("--keep", type=Path, help="run in this folder and keep it")
    args = parser.parse_args()
    if args.worker and (args.pipecat or args.latency or args.process_per_session):
        parser.error("--worker runs the LiveKit worker example alone")
    name = "voice-livekit"
    if args.pipecat or args.worker:
        name = "voice-pipecat" if args.pipecat else "voice-livekit-room"
    root = args.keep or Path(tempfile.mkdtemp(prefix="capacity-bench-"))
    ignore = shutil.ignore_patterns("__pycache__", ".agent_eval_cache")
    work = root / name
    shutil.copytree(ROOT / "examples" / name, work, dirs_exist_ok=True, ignore=ignore)
    if args.worker:  # its agent.py imports the in-process example's agent from beside it
        shutil.copytree(
            ROOT / "examples" / "voice-livekit", root / "voice-livekit", dirs_exist_ok=True,
            ignore=ignore,
        )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "evals"],
        cwd=work, check=True, capture_output=True,
    )  # fmt: skip
    command = [
        sys.executable, "-m", "pytest_agent_eval", "capacity",
        "--max-sessions", str(args.max_sessions), "--repeats", str(args.repeats),
        "--json", str(work / "capacity.json"), "--html", str(work / "capacity.html"),
    ]  # fmt: skip
    if args.refine is not None:
        command += ["--refine", str(args.refine)]
    if args.latency:
        if args.pipecat:
            parser.error("--latency is for the LiveKit example")
        p50, _, p95 = args.latency.partition(",")
        (work / "latency_agent.py").write_text(LATENCY_AGENT.format(p50=float(p50), p95=float(p95)))
        command += ["--agent", "latency_agent:make_adapter"]
    if args.fault_rate:
        command += ["--fault-rate", args.fault_rate]
    if args.p95_latency_ms:
        command += ["--p95-latency-ms", args.p95_latency_ms]
    if args.worker:
        command += ["--worker", "agent.py", "--agent-name", "booking-agent"]
    if args.process_per_session:
        command.append("--process-per-session")
    if args.cpu_by_component:
        command.append("--cpu-by-component")
    knees: list[dict[str, object]] = []
    code = 0
    for run in range(args.runs):
        print(f"run {run + 1}/{args.runs}: load average before:", os.getloadavg(), flush=True)
        done = subprocess.run(command, cwd=work, check=False)
        code = code or done.returncode
        data = json.loads((work / "capacity.json").read_text())
        knees.append(
            {**data["knee"], "load_1m_at_start": data["machine"]["load_average_1m_at_start"]}
        )
        print(json.dumps({"knee": data["knee"], "machine": data["machine"]}, indent=2))
        print("load average after:", os.getloadavg(), flush=True)
    if args.runs > 1:
        values = [float(k["sessions_per_core"]) for k in knees]  # type: ignore[arg-type]
        mean = sum(values) / len(values)
        spread = (max(values) - min(values)) / mean if mean else float("nan")
        # The "within +-10%": the run farthest from the mean, as a share of it.
        deviation = max(abs(v - mean) for v in values) / mean if mean else float("nan")
        summary = {"runs": knees, "spread": round(spread, 3), "max_deviation": round(deviation, 3)}
        print(json.dumps(summary, indent=2))
    if args.keep is None:
        shutil.rmtree(root, ignore_errors=True)
    else:
        print(f"reports: {work}/capacity.json, {work}/capacity.html")
    return code


if __name__ == "__main__":
    sys.exit(main())
