"""Cost of the typed serializer: a result to plain JSON and back, as each eval's record travels.

Usage:
    python bench/records.py [--runs 5] [--turns 2] [--repeat 2000]

Builds a `TranscriptResult` of ``--runs`` runs of ``--turns`` turns (a reply, one tool call with
arguments and output, two verdicts, usage) and times `to_dict`, `from_dict` and `json.dumps` of
the whole `EvalRecord`, best of five batches of CPU time. Prints microseconds per eval and per
turn, so the figure can be set against the runner's per-turn overhead (bench/runner_overhead.py).
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Callable

from pytest_agent_eval._records import EvalRecord
from pytest_agent_eval.models import (
    EvalResult,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
    Usage,
)


def make_result(runs: int, turns: int) -> TranscriptResult:
    return TranscriptResult(
        passed=True,
        score=1.0,
        threshold=0.8,
        runs=[
            RunResult(
                index=r,
                turns=[
                    TurnResult(
                        index=t,
                        user="Book a table for two tomorrow at 10am.",
                        reply="Booked! Reference BK-1234.",
                        tool_calls=[
                            ToolCall("book", {"party": 2, "when": "tomorrow"}, output={"ok": True})
                        ],
                        evaluations=[EvalResult(True, "fine", "reply"), EvalResult(True, "ok")],
                        duration_s=0.01,
                        usage=Usage(100, 20, 1),
                    )
                    for t in range(turns)
                ],
                duration_s=0.02,
            )
            for r in range(runs)
        ],
        transcript_id="booking",
        planned_runs=runs,
    )


def best_us(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(5):
        start = time.process_time()
        for _ in range(repeat):
            fn()
        times.append((time.process_time() - start) / repeat)
    return min(times) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--turns", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=2000)
    args = parser.parse_args()
    record = EvalRecord(
        nodeid="tests/evals/booking.yaml::booking",
        transcript_id="booking",
        result=make_result(args.runs, args.turns),
    )
    data = record.to_dict()
    text = json.dumps(data)
    turns = args.runs * args.turns
    rows = [
        ("to_dict (record -> JSON types)", best_us(record.to_dict, args.repeat)),
        (
            "from_dict (JSON types -> record)",
            best_us(lambda: EvalRecord.from_dict(data), args.repeat),
        ),
        ("json.dumps + json.loads", best_us(lambda: json.loads(json.dumps(data)), args.repeat)),
    ]
    print(
        f"## Records: one eval of {args.runs} runs x {args.turns} turns ({len(text):,} bytes of JSON)"
    )
    for label, us in rows:
        print(f"{label:<36} {us:8.1f} us/eval  {us / turns:6.1f} us/turn")


if __name__ == "__main__":
    main()
