"""Runner overhead through real pytest, and the agent calls early stop saves.

Usage:
    python bench/runner_overhead.py [--transcripts 1000] [--runs 5]

Part 1 generates N two-turn YAML transcripts and runs them, each ``--runs`` times, against an
instant agent through a real ``pytest`` subprocess; it prints the total wall time, the time per
run and per turn, and the same suite with evals not live (collection and validation only).

Part 2 runs a suite where a seeded agent passes each run with probability 0.5, with and without
``--agent-eval-early-stop``, and prints the share of agent calls saved.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

CONFTEST = """
import random
from pathlib import Path

import pytest

from pytest_agent_eval import AgentReply
from pytest_agent_eval.adapters.base import CallableAdapter

CALLS = {"n": 0}
RUN_COUNTER = {"n": 0}
PASS_PROBABILITY = {p}


def make_agent():
    # One independent, seeded draw per run: does this run's agent behave?
    RUN_COUNTER["n"] += 1
    good = random.Random(RUN_COUNTER["n"]).random() < PASS_PROBABILITY

    async def agent(history):
        CALLS["n"] += 1
        return AgentReply("ok, booked" if good else "sorry", [])

    return agent


@pytest.fixture
def llm_eval_agent():
    return CallableAdapter(factory=make_agent)


def pytest_sessionfinish(session):
    Path("calls.txt").write_text(str(CALLS["n"]))
"""

TRANSCRIPT = """\
id: t{i:04d}
turns:
  - user: "Book a table for {n} please"
    expect:
      reply_contains_any: ["booked", "confirmed"]
  - user: "Thanks"
    expect:
      reply_matches_any: ["ok|sure"]
"""


def make_project(root: Path, transcripts: int, runs: int, threshold: float, p: float) -> None:
    (root / "tests" / "evals").mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        textwrap.dedent(
            f"""\
            [tool.agent_eval]
            yaml_dirs = ["tests/evals"]
            runs = {runs}
            threshold = {threshold}
            """
        )
    )
    (root / "tests" / "conftest.py").write_text(CONFTEST.replace("{p}", repr(p)))
    for i in range(transcripts):
        (root / "tests" / "evals" / f"t{i:04d}.yaml").write_text(
            TRANSCRIPT.format(i=i, n=i % 8 + 1)
        )


def run_pytest(root: Path, *args: str) -> tuple[float, int]:
    started = time.perf_counter()
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            *args,
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    elapsed = time.perf_counter() - started
    if proc.returncode not in (0, 1):
        sys.stderr.write(proc.stdout[-3000:] + proc.stderr[-3000:])
        raise SystemExit(f"pytest exited {proc.returncode}")
    calls_file = root / "calls.txt"
    calls = int(calls_file.read_text()) if calls_file.exists() else 0
    return elapsed, calls


def overhead(transcripts: int, runs: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, transcripts, runs, threshold=0.8, p=1.0)
        collect_s, _ = run_pytest(root)  # not live: collection + validation + skip
        live_s, calls = run_pytest(root, "--agent-eval-live")
    total_runs = transcripts * runs
    print(f"## Runner overhead: {transcripts} transcripts x {runs} runs, 2 turns each")
    print(f"not live (collect + validate + skip): {collect_s:8.2f} s")
    print(f"live, instant agent:                  {live_s:8.2f} s total")
    print(f"agent calls:                          {calls:8d}")
    print(f"per run (whole pytest / runs):        {live_s / total_runs * 1000:8.3f} ms")
    print(
        f"per run, above collection:            {(live_s - collect_s) / total_runs * 1000:8.3f} ms"
    )
    print(
        f"per turn, above collection:           {(live_s - collect_s) / (total_runs * 2) * 1000:8.3f} ms"
    )


def early_stop(transcripts: int, runs: int, threshold: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_project(root, transcripts, runs, threshold=threshold, p=0.5)
        args = ["--agent-eval-live", f"--agent-eval-concurrency={concurrency}"]
        _, full = run_pytest(root, *args)
        _, stopped = run_pytest(root, *args, "--agent-eval-early-stop")
    saved = 1 - stopped / full if full else 0.0
    print(
        f"early stop, p=0.5, runs={runs}, threshold={threshold}, concurrency={concurrency}: "
        f"{full} -> {stopped} agent calls, {saved:.1%} saved"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transcripts", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    overhead(args.transcripts, args.runs)
    print()
    print("## Early stop")
    for runs, threshold, concurrency in (
        (5, 0.8, 1),
        (5, 0.8, 4),
        (10, 0.8, 4),
        (10, 0.5, 4),
        (20, 0.8, 4),
    ):
        early_stop(200, runs, threshold, concurrency)


if __name__ == "__main__":
    main()
