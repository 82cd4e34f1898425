"""Room mode, measured: server and worker start-up, the start of a run, and per-turn latencies.

Starts the room lab of the tests (livekit-server in a loopback-only network namespace; needs
root and the server binary, see docs/livekit-room.md), the room example's worker, and runs the
example's booking transcript through LiveKitRoomAdapter several times, one run at a time.

    .venv/bin/python bench/room_turns.py [--runs 3]

Prints the lab's start-up times, then per turn the audio length, the median and range of the
turn's wall time, of the latency from the end of the caller's input to the first reply text,
and to the first audible reply audio.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "room"))

from room_lab import RoomLab, why_labs_cannot_run  # noqa: E402

EXAMPLE = REPO / "examples" / "voice-livekit-room"


def _turns(folder: Path) -> list[dict[str, Any]]:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    shutil.copytree(EXAMPLE / "evals", folder / "evals", ignore=shutil.ignore_patterns("audio"))
    transcript = load_transcript_file(folder / "evals" / "booking.yaml")
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return [
        {"user": t.user, "audio": str(t.audio) if t.audio is not None else None}
        for t in transcript.turns
    ]


def _span(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):6.2f} s  ({min(values):.2f}-{max(values):.2f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if (why := why_labs_cannot_run()) is not None:
        print(f"cannot run: {why}")
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        turns = _turns(folder)
        started = time.perf_counter()
        with RoomLab(folder) as lab:
            lab.start_worker("booking-worker", EXAMPLE / "agent.py")
            ready_s = time.perf_counter() - started
            outs = []
            for _ in range(args.runs):
                outs.append(lab.call("converse", agent_name="booking-agent", turns=turns))
            leaks = lab.leaks()
        timings = lab.timings
    print(f"namespace set up          {timings['namespace_s']:.2f} s")
    print(f"server start to port open {timings['server_start_s']:.2f} s")
    print(f"worker start to registered {timings['booking-worker_registered_s']:.2f} s")
    print(f"lab ready (all of the above) {ready_s:.2f} s")
    print(
        f"worker stop {timings['booking-worker_stop_s']:.2f} s, server stop {timings['server_stop_s']:.2f} s"
    )
    print(
        f"start of a run (room, caller, dispatch, agent listening): {_span([o['start_s'] for o in outs])}"
    )
    print(f"packets towards non-loopback addresses: {len(leaks)}")
    print()
    print(f"{'turn':<5} {'input':<14} {'wall':<24} {'to first text':<24} {'to first audio':<24}")
    for index, turn in enumerate(turns):
        replies = [o["replies"][index] for o in outs]
        meta = replies[0].metadata["livekit"]
        kind = f"audio {meta['audio_duration_s']:.1f} s" if turn["audio"] else "text"
        wall = _span([r.metadata["livekit"]["turn_wall_s"] for r in replies])
        text = _span([r.latency_s for r in replies if r.latency_s is not None])
        audio = _span([r.first_audio_latency_s for r in replies if r.first_audio_latency_s])
        print(f"{index + 1:<5} {kind:<14} {wall:<24} {text:<24} {audio:<24}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
