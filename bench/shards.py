"""Shards at scale: balance with and without durations, the merge's time and memory, the merged
HTML report in Chromium.

Usage:
    python bench/shards.py [--transcripts 2000] [--shards 4] [--repeat 3] [--keep DIR]

Generates a suite of N YAML transcripts (3 runs each, 1 to 5 turns, seeded) whose agent waits
a per-transcript time per turn, as a hosted model would: lognormal around 6 ms, and 3% of the
transcripts 20 times slower (the long voice conversations of a real suite). The planner sees
the runs and turns, never those times. Then, as CI would, each shard in its own ``pytest``
process, one after the other (so they do not slow each other down on a small machine):

1. the first run, without durations: N shards balanced by planned turns, then the merge;
2. the next run, with the merged results as durations (what the CI recipe does).

Prints for each run every shard's evals, planned load, measured test time (its evals' call
times, what the plan balances) and process wall time (the same collection of every transcript
included), and the balance: slowest shard / mean. For the merge (``agent-eval merge`` writing
the markdown, HTML, results file and JUnit, in its own process): wall time and peak RSS, the
shard files' size; then the merged HTML's size and its load in headless Chromium, measured as
bench/html_report.py does (Navigation Timing ``loadEventEnd``, best of ``--repeat``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from html_report import CHROMIUM, CHROMIUM_ARGS, measure

CONFTEST = """
import asyncio
import re

import pytest
from pytest_agent_eval import AgentReply

WAIT = re.compile(r"\\[(\\d+) ms\\]")


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        text = history[-1].content
        await asyncio.sleep(int(WAIT.search(text).group(1)) / 1000)
        return AgentReply("sorry" if "[bad]" in text else "Booked, see you then.", [])

    return agent
"""

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["tests/evals"]

[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
threshold = 0.8
"""


def make_suite(root: Path, n: int, seed: int = 11) -> None:
    """``n`` transcripts: 1-5 turns, 3 runs, a hidden wait per turn; one in ten fails."""
    rng = random.Random(seed)
    (root / "pyproject.toml").write_text(textwrap.dedent(PYPROJECT))
    evals = root / "tests" / "evals"
    evals.mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    for i in range(n):
        wait = rng.lognormvariate(1.8, 0.6) * (20 if rng.random() < 0.03 else 1)
        turns = rng.randint(1, 5)
        bad = i % 10 == 9
        lines = [f"id: t{i:05d}", "tags: [gate:booking]", "runs: 3", "threshold: 0.6", "turns:"]
        for t in range(turns):
            mark = " [bad]" if bad and t == turns - 1 else ""
            lines += [
                f'  - user: "Turn {t + 1}: book a table for {2 + i % 5} at {7 + t}pm{mark} [{round(wait)} ms]"',
                "    expect:",
                "      reply_contains_any: [booked]",
            ]
        (evals / f"t{i:05d}.yaml").write_text("\n".join(lines) + "\n")


def run_shard(root: Path, k: int, count: int, durations: Path | None) -> dict[str, float]:
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "--agent-eval-live",
        f"--agent-eval-shard={k}/{count}",
        f"--agent-eval-results=shard-{k}.json",
    ]
    if durations is not None:
        args.append(f"--agent-eval-shard-durations={durations}")
    start = time.perf_counter()
    done = subprocess.run(args, cwd=root, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode not in (0, 1):
        raise SystemExit(f"shard {k} failed ({done.returncode}):\n{done.stdout[-3000:]}")
    document = json.loads((root / f"shard-{k}.json").read_text())
    shard = document["shard"]
    return {
        "evals": len(shard["evals"]),
        "planned": shard["loads"][k - 1],
        "tests_s": sum(e["duration_s"] or 0.0 for e in document["evals"]),
        "wall_s": wall,
        "mb": (root / f"shard-{k}.json").stat().st_size / 1e6,
        "balanced_by": shard["balanced_by"],
    }


def balance(values: list[float]) -> float:
    return max(values) / (sum(values) / len(values))


def print_run(title: str, shards: list[dict[str, float]]) -> None:
    print(f"\n{title} (balanced by {shards[0]['balanced_by']})")
    print("| shard | evals | planned load | test time | wall | results file |")
    print("|---|---|---|---|---|---|")
    for k, s in enumerate(shards, 1):
        unit = "s" if s["balanced_by"] == "durations" else "turns"
        print(
            f"| {k} | {s['evals']:.0f} | {s['planned']:,.1f} {unit} | {s['tests_s']:.1f} s | "
            f"{s['wall_s']:.1f} s | {s['mb']:.1f} MB |"
        )
    print(
        f"balance (slowest / mean): test time {balance([s['tests_s'] for s in shards]):.3f}, "
        f"wall {balance([s['wall_s'] for s in shards]):.3f}"
    )


def run_merge(root: Path, count: int, out: str) -> tuple[float, float, int]:
    """The merge in its own process: wall seconds, peak RSS in MB, exit status."""
    args = [
        sys.executable,
        "-m",
        "pytest_agent_eval",
        "merge",
        *(f"shard-{k}.json" for k in range(1, count + 1)),
        f"--expect-shards={count}",
        "-q",
        f"--agent-eval-report={out}/merged.md",
        f"--agent-eval-html={out}/merged.html",
        f"--agent-eval-results={out}/merged.json",
        f"--junitxml={out}/junit.xml",
    ]
    start = time.perf_counter()
    process = subprocess.Popen(args, cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode not in (0, 1):
        raise SystemExit(f"merge failed ({process.returncode}): {process.stderr.read()!r}")  # type: ignore[union-attr]
    return wall, usage.ru_maxrss / 1024, process.returncode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--transcripts", type=int, default=2000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="build the suite in this folder")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = args.keep or Path(tmp) / "suite"
        root.mkdir(parents=True, exist_ok=True)
        make_suite(root, args.transcripts)
        n = args.shards
        print(f"{args.transcripts:,} transcripts x 3 runs in {n} shards")

        first = [run_shard(root, k, n, None) for k in range(1, n + 1)]
        print_run("first run", first)
        wall, rss, status = run_merge(root, n, "first")
        print(f"merge: {wall:.2f} s wall, peak RSS {rss:.0f} MB, exit status {status}")

        durations = root / "first" / "merged.json"
        second = [run_shard(root, k, n, durations) for k in range(1, n + 1)]
        print_run("next run, durations from the first run's merge", second)
        walls = []
        for _ in range(args.repeat):
            wall, rss, status = run_merge(root, n, "second")
            walls.append(wall)
        print(
            f"merge: {min(walls):.2f} s wall (best of {args.repeat}; "
            f"{', '.join(f'{w:.2f}' for w in walls)}), peak RSS {rss:.0f} MB, exit status {status}"
        )
        html = root / "second" / "merged.html"
        from playwright.sync_api import sync_playwright

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
            m = measure(browser, html, args.repeat)
            browser.close()
        print(
            f"merged HTML: {html.stat().st_size / 1e6:.1f} MB, load event {m['load_ms'] / 1000:.2f} s "
            f"(DOMContentLoaded {m['dcl_ms'] / 1000:.2f} s), 'Failed only' {m['filter_ms']:.0f} ms"
        )


if __name__ == "__main__":
    main()
