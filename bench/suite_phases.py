"""Where a voice suite's seconds go: a whole pytest run sampled by py-spy, every sample put in a
phase, per thread.

Runs each project's suite (by default the three voice examples: LiveKit in process, LiveKit on a
realtime model, Pipecat, each copied to a temporary folder) as one pytest process under py-spy,
sampling every thread, idle ones too, and sorts each sample into one phase by its stack:

- ``imports``: anything under an import (the process start, and imports deferred to a turn);
- ``waiting``: a thread parked in a wait (a selector, a lock, a queue, a sleep): for the
  main thread of a run on the virtual clock, time the clock had nothing to run;
- ``agent VAD``, ``turn detector``, ``STT``: the agent's own speech models (Silero, smart-turn
  or LiveKit's turn detector, Whisper and the fixture-text stand-in);
- ``reply TTS``: our offline voice synthesizing the agent's replies;
- ``fixtures + conditions``: reading, resampling and degrading the caller's fixtures, and our
  scan of them;
- ``scripted LLM``: the scripted language and realtime models;
- ``session start/stop``: opening and closing a session or pipeline;
- ``evaluation``, ``reports``: our checks and report writers;
- ``framework, other``: the rest of LiveKit's or Pipecat's own work;
- ``pytest + runner``: everything else (pytest, our runner and plugin, asyncio's own work).

Each sample stands for 1/rate s of one thread, so a phase's seconds add up over threads and can
exceed the wall time; ``busy`` is everything but ``waiting``. The rules are file and function
patterns (``PHASES`` below): an attribution, not a measurement of each component in isolation.

    .venv/bin/python bench/suite_phases.py [--project DIR ...] [--runs 2] [--rate 200]
        [--py-spy PATH] [-- extra pytest args]

py-spy is not a dependency of the package: install it where you like (``pip install py-spy``)
and give its path with ``--py-spy`` if it is not on PATH. It needs to trace its child process
(root, or ptrace allowed).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXAMPLES = ("voice-livekit", "voice-livekit-realtime", "voice-pipecat")

# A frame as py-spy writes it: "function (path/to/file.py:123)".
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>.*?)(?::\d+)?\)$")

# Leaf functions of a parked thread.
_WAITS = re.compile(
    r"^(select|poll|epoll|_poll|wait|wait_for|sleep|acquire|get|_wait_for_tstate_lock|"
    r"accept|recv|recv_into|read|readinto|_recv|join)$"
)

# Phase, then the patterns any one of which, found in a frame's "file:function", puts the
# sample there. Checked from the innermost frame outwards: the first frame that matches any
# phase decides, in this order for one frame.
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("turn detector", ("smart_turn", "turn_detector", "end_of_turn", "eou")),
    ("agent VAD", ("silero", "/vad/", "vad.py", "_vad")),
    ("STT", ("whisper", "ctranslate2", "_stt.py", "/stt/", "stt.py")),
    ("reply TTS", ("pytest_agent_eval/voice/_tts", "hibari", "piper", "espeak", "/tts/", "tts.py")),
    (
        "fixtures + conditions",
        (
            "pytest_agent_eval/voice/_fixture",
            "pytest_agent_eval/voice/_effects",
            "pytest_agent_eval/voice/_degrade",
            "pytest_agent_eval/voice/_segments",
            "pytest_agent_eval/voice/_clip",
            "pytest_agent_eval/_conditions",
            "soundfile",
            "soxr",
            "pedalboard",
        ),
    ),
    ("scripted LLM", ("_scripted.py", "ScriptedLLM", "scripted_llm")),
    (
        "session start/stop",
        (
            "agent_session.py:AgentSession.start",
            "agent_session.py:AgentSession.aclose",
            "agent_session.py:AgentSession._aclose_impl",
            "pipeline/task.py:PipelineTask._cleanup",
            "pipeline/runner.py:PipelineRunner.cancel",
            ":_open_conversation",
            ":open_conversation",
        ),
    ),
    ("evaluation", ("pytest_agent_eval/evaluators", "pytest_agent_eval/_expectations")),
    ("reports", ("pytest_agent_eval/_report",)),
)
_FRAMEWORK = ("livekit/", "pipecat/", "pipecat_flows/", "onnxruntime")


@dataclass
class Profile:
    """Samples of one run, by thread and phase."""

    rate: int
    wall_s: float
    exit_code: int
    by_thread: dict[str, Counter[str]] = field(default_factory=lambda: defaultdict(Counter))
    imports: Counter[str] = field(default_factory=Counter)
    """Import samples by the top-level package whose module code was running."""

    def seconds(self, thread: str | None = None) -> Counter[str]:
        """Seconds per phase, for one thread or all."""
        total: Counter[str] = Counter()
        for name, phases in self.by_thread.items():
            if thread is None or name == thread:
                total.update(phases)
        return Counter({k: v / self.rate for k, v in total.items()})


def _thread_name(head: str) -> str:
    """``thread (123): ThreadPoolExecutor-0_1`` -> ``ThreadPoolExecutor-0_*``; a pool's
    threads are one row."""
    name = head.split(":", 1)[1].strip() if ":" in head else "unnamed"
    name = re.sub(r"_\d+$", "_*", name)
    return re.sub(r"-\d+(\b|_)", r"-*\1", name) if name.startswith("Thread-") else name


def phase_of(frames: list[str]) -> str:
    """The phase of one sample, given its frames from the outermost to the innermost."""
    parsed = []
    for frame in frames:
        match = _FRAME.match(frame)
        func, file = (match["func"], match["file"]) if match else (frame, "")
        parsed.append((func, file))
    if any(func == "_find_and_load" for func, _ in parsed):
        return "imports"
    leaf = parsed[-1][0].rsplit(".", 1)[-1] if parsed else ""
    if _WAITS.match(leaf) or (parsed and parsed[-1][1].endswith("futures/thread.py")):
        return "waiting"  # an idle pool thread blocks in C, under its Python _worker
    for func, file in reversed(parsed):
        where = f"{file}:{func}"
        for phase, patterns in PHASES:
            if any(p in where for p in patterns):
                return phase
    if any(any(f in file for f in _FRAMEWORK) for _, file in parsed):
        return "framework, other"
    return "pytest + runner"


def _imported_package(frames: list[str]) -> str:
    """The top-level package of the innermost module body running in an import sample."""
    for frame in reversed(frames):
        match = _FRAME.match(frame)
        if match and match["func"] == "<module>" and not match["file"].startswith("<"):
            return match["file"].split("/", 1)[0].removesuffix(".py")
    return "(import machinery)"


def parse_raw(text: str, rate: int, wall_s: float, exit_code: int) -> Profile:
    """py-spy's ``--format raw`` output (collapsed stacks, one line a stack and its count)."""
    profile = Profile(rate=rate, wall_s=wall_s, exit_code=exit_code)
    for line in text.splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        if frames and frames[0].startswith("process "):
            frames = frames[1:]
        if not frames or not frames[0].startswith("thread ("):
            continue
        phase = phase_of(frames[1:])
        profile.by_thread[_thread_name(frames[0])][phase] += int(count)
        if phase == "imports":
            profile.imports[_imported_package(frames[1:])] += int(count)
    return profile


def run_project(project: Path, *, py_spy: str, rate: int, runs: int, extra: list[str]) -> Profile:
    """Synthesize the project's fixtures, then sample one live pytest run of it."""
    python = sys.executable
    subprocess.run(
        [python, "-m", "pytest_agent_eval.synthesize_audio", "evals"],
        cwd=project,
        check=True,
        capture_output=True,
    )
    raw = project / "py-spy.txt"
    command = [
        py_spy,
        "record",
        "--format",
        "raw",
        "--threads",
        "--idle",
        "--subprocesses",
        "--rate",
        str(rate),
        "--output",
        str(raw),
        "--",
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        "--agent-eval-runs",
        str(runs),
        *extra,
    ]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=project, capture_output=True, text=True)
    wall = time.perf_counter() - started
    said = [line for line in done.stdout.splitlines() if line and not line.startswith("py-spy>")]
    tail = said[-1] if said else done.stderr.strip()[-300:]
    print(f"  {project.name}: pytest says: {tail}", file=sys.stderr)
    return parse_raw(raw.read_text(encoding="utf-8"), rate, wall, done.returncode)


def table(name: str, profile: Profile) -> str:
    """The markdown table of one project: phases as rows, the main thread, the others, all."""
    every = profile.seconds()
    main = profile.seconds("MainThread")
    busy = sum(v for k, v in every.items() if k != "waiting")
    lines = [
        f"### {name}: {profile.wall_s:.1f} s wall, {busy:.1f} s busy over all threads"
        + ("" if profile.exit_code == 0 else f" (pytest exit {profile.exit_code})"),
        "",
        "| phase | main thread s | other threads s | all s | share of busy |",
        "|---|---:|---:|---:|---:|",
    ]
    for phase, seconds in sorted(every.items(), key=lambda kv: -kv[1]):
        share = "" if phase == "waiting" else f"{seconds / busy:.0%}" if busy else ""
        lines.append(
            f"| {phase} | {main.get(phase, 0.0):.2f} | {seconds - main.get(phase, 0.0):.2f} "
            f"| {seconds:.2f} | {share} |"
        )
    if profile.imports:
        top = ", ".join(
            f"{package} {count / profile.rate:.1f}"
            for package, count in profile.imports.most_common(8)
        )
        lines += ["", f"imports by package, s: {top}"]
    threads = sorted(
        profile.by_thread.items(),
        key=lambda kv: -sum(v for k, v in kv[1].items() if k != "waiting"),
    )
    lines += ["", "| thread | busy s | waiting s |", "|---|---:|---:|"]
    for thread, phases in threads[:8]:
        busy_t = sum(v for k, v in phases.items() if k != "waiting") / profile.rate
        lines.append(f"| {thread} | {busy_t:.2f} | {phases.get('waiting', 0) / profile.rate:.2f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", action="append", type=Path, default=[])
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--rate", type=int, default=200, help="samples per second per thread")
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    parser.add_argument("--keep", type=Path, help="keep each project's py-spy samples here")
    parser.add_argument("extra", nargs="*", help="after --: more pytest arguments")
    args = parser.parse_args()
    if shutil.which(args.py_spy) is None and not Path(args.py_spy).exists():
        parser.error("py-spy not found: pip install py-spy, then give --py-spy PATH")
    projects = args.project or [REPO / "examples" / name for name in EXAMPLES]
    print(f"load average before: {os.getloadavg()[0]:.1f}; {os.cpu_count()} cores\n")
    with tempfile.TemporaryDirectory(prefix="suite-phases-") as tmp:
        for source in projects:
            copy = Path(tmp) / source.name
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
            profile = run_project(
                copy, py_spy=args.py_spy, rate=args.rate, runs=args.runs, extra=args.extra
            )
            print(table(source.name, profile), end="\n\n", flush=True)
            if args.keep:
                args.keep.mkdir(parents=True, exist_ok=True)
                shutil.copy(copy / "py-spy.txt", args.keep / f"{source.name}.txt")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
