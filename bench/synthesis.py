"""Voice-fixture synthesis: cold throughput, and a warm ``--check`` over 1,000 fixtures.

Usage:
    python bench/synthesis.py [--utterances 200] [--fixtures 1000]

Part 1 writes one transcript of N distinct utterances (agent-style sentences with numbers,
times and names) and synthesizes every fixture from nothing with the offline default (hibari),
three ways: one job, two jobs in worker processes (what ``--jobs 2`` does), and two jobs in
threads (for comparison; hibari's Python-side DSP and G2P hold the GIL). Each run starts with
cold engines in a fresh subprocess, as a user's first run does, and reports seconds of audio
made per wall-clock second.

Part 2 makes M up-to-date fixtures cheaply (one synthesized WAV copied M times, each with a
sidecar whose key matches its turn), then times the real command line,
``python -m pytest_agent_eval.synthesize_audio --check``, which loads the YAML, computes every
key, stats every WAV and reads every sidecar.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUBJECTS = [
    "Book me a table for {n} tomorrow at {h}am.",
    "I'd like to move my flight to Friday, March {d}rd.",
    "Please transfer ${n}50 from checking to savings.",
    "Is the pharmacy on Main Street open until {h}:30 pm?",
    "No, the order number is 482{n}3, not 482{d}1.",
    "Set a reminder for Dr. Smith's appointment on the {d}th.",
    "I need to reschedule my {h}:45 appointment to next Tuesday.",
    "Please deliver it to {n}42 Evergreen Terrace, Springfield.",
    "Can I speak to a human agent about invoice {n}{d}, please?",
    "Actually, make that {n} people instead of {d}.",
]


def utterances(count: int) -> list[str]:
    out: list[str] = []
    i = 0
    while len(out) < count:
        template = SUBJECTS[i % len(SUBJECTS)]
        text = template.format(n=2 + i % 7, d=1 + (i // 7) % 9, h=1 + (i // 3) % 11)
        out.append(text if i < len(SUBJECTS) * 7 * 9 else f"{text} Take {i}.")
        i += 1
    return out


def write_transcript(folder: Path, texts: list[str], audio_dir: str = "audio") -> Path:
    lines = ["id: bench", "turns:"]
    for i, text in enumerate(texts):
        lines += [f'  - user: "{text}"', f"    audio: {audio_dir}/u{i:04d}.wav"]
    path = folder / "bench.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


COLD_RUN = """
import sys, time
from pathlib import Path
from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
if sys.argv[3] == "thread":
    from pytest_agent_eval.voice._tts._hibari import HibariBackend
    HibariBackend.execution = "thread"
start = time.perf_counter()
summary = ensure_fixtures([load_transcript_file(Path(sys.argv[1]))], jobs=int(sys.argv[2]))
wall = time.perf_counter() - start
summary.raise_for_failures()
print(len(summary.synthesized), summary.audio_seconds, wall)
"""


def cold(texts: list[str], jobs: int, mode: str) -> tuple[int, float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        yaml = write_transcript(Path(tmp), texts)
        out = subprocess.run(
            [sys.executable, "-c", COLD_RUN, str(yaml), str(jobs), mode],
            check=True, capture_output=True, text=True,
        ).stdout.split()  # fmt: skip
        return int(out[0]), float(out[1]), float(out[2])


def warm_check(count: int) -> None:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import Planner, ensure_fixtures
    from pytest_agent_eval.synthesize._plan import sidecar_for
    from pytest_agent_eval.voice._fixtures import write_sidecar

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        texts = utterances(count)
        write_transcript(folder, texts[:1], audio_dir="seed")
        ensure_fixtures([load_transcript_file(folder / "bench.yaml")], jobs=1).raise_for_failures()
        seed_wav = folder / "seed" / "u0000.wav"
        seed_bytes = seed_wav.read_bytes()
        shutil.rmtree(folder / "seed")

        yaml = write_transcript(folder, texts)
        plan = Planner().plan([load_transcript_file(yaml)])
        sha = hashlib.sha256(seed_bytes).hexdigest()
        (folder / "audio").mkdir()
        for spec in plan.specs:
            spec.wav.write_bytes(seed_bytes)
            write_sidecar(
                spec.wav,
                sidecar_for(spec, wav_bytes=len(seed_bytes), wav_sha256=sha, duration_s=2.0),
            )
        cmd = [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "--check", "bench.yaml"]
        subprocess.run(cmd, cwd=folder, check=True, capture_output=True)  # warm the page cache
        times = []
        for _ in range(3):
            start = time.perf_counter()
            proc = subprocess.run(cmd, cwd=folder, capture_output=True, text=True)
            times.append(time.perf_counter() - start)
            assert proc.returncode == 0, proc.stdout + proc.stderr
        baseline = []
        for _ in range(3):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", "import pytest_agent_eval.synthesize._cli"], check=True
            )
            baseline.append(time.perf_counter() - start)
        best, start_cost = min(times), min(baseline)
        print(
            f"warm --check over {count} fixtures: {best:.2f} s wall (best of 3), of which "
            f"{start_cost:.2f} s is interpreter start and imports; "
            f"{(best - start_cost) / count * 1e3:.2f} ms per fixture"
        )
        print(f"  output: {proc.stdout.strip()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--utterances", type=int, default=200)
    parser.add_argument("--fixtures", type=int, default=1000)
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cores")

    texts = utterances(args.utterances)
    results = {}
    for jobs, mode in ((1, "process"), (2, "process"), (2, "thread")):
        n, audio_s, wall = cold(texts, jobs, mode)
        results[(jobs, mode)] = audio_s / wall
        print(
            f"cold, {n} utterances, jobs={jobs} ({mode}): {audio_s:.0f} s of audio in "
            f"{wall:.1f} s = {audio_s / wall:.0f} s of audio per second"
        )
    base = results[(1, "process")]
    print(
        f"speed-up with 2 jobs: processes {results[(2, 'process')] / base:.2f}x, "
        f"threads {results[(2, 'thread')] / base:.2f}x"
    )
    warm_check(args.fixtures)


if __name__ == "__main__":
    main()
