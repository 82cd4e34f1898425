"""Wall time of LiveKit voice turns: per turn and per 3-turn transcript, next to the audio length.

Runs the example's restaurant agent (examples/voice-livekit) in a real AgentSession with Silero
VAD and the scripted LLM, at max speed and in real time, hearing the fixtures through the
fixture-text STT and through offline Whisper tiny.en. Fixtures are synthesized offline first.

    .venv/bin/python bench/voice_turns.py [--runs 5] [--realtime-runs 2]

Prints, per configuration and turn: the audio length, the median wall time of the turn, the
overhead (wall time minus the audio's play time at that speed; at max speed the audio takes no
time, so all of the wall time is overhead), and the median latency from the end of the user's
speech to the first reply text.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit"


def _example_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("booking_agent", EXAMPLE / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["booking_agent"] = module
    spec.loader.exec_module(module)  # on the main thread, as LiveKit plugins require
    return module


def _transcript(folder: Path) -> Any:
    from pytest_agent_eval.loader import load_transcript_file
    from pytest_agent_eval.synthesize.run import ensure_fixtures

    shutil.copytree(EXAMPLE / "evals", folder / "evals", ignore=shutil.ignore_patterns("audio"))
    transcript = load_transcript_file(folder / "evals" / "booking.yaml")
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return transcript


async def _run_once(adapter: Any, transcript: Any, index: int) -> tuple[float, list[Any]]:
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput

    start = time.perf_counter()
    await adapter.prepare(transcript)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=transcript, run_index=index)
    )
    replies = []
    try:
        for i, turn in enumerate(transcript.turns):
            audio = Path(turn.audio) if turn.audio is not None else None
            replies.append(await conversation.respond(TurnInput(turn=turn, index=i, audio=audio)))
    finally:
        await conversation.aclose()
    return time.perf_counter() - start, replies


def _median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


async def _bench(
    agent: ModuleType, transcript: Any, stt: str, speed: float, runs: int, threads: int
) -> None:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT

    def factory() -> Any:
        whisper = WhisperSTT(cpu_threads=threads) if stt == "whisper" else None
        return agent.make_session(stt=whisper)

    adapter = LiveKitAdapter(factory, speed=speed, timeout_s=60.0)
    await _run_once(adapter, transcript, -1)  # warm-up: imports, model loads, fixture cache
    totals: list[float] = []
    per_turn: list[list[Any]] = []
    for index in range(runs):
        total, replies = await _run_once(adapter, transcript, index)
        totals.append(total)
        per_turn.append(replies)
    label = f"{stt} STT, {'max speed' if speed == 0 else f'{speed:g}x real time'}"
    audio_total = 0.0
    for i, turn in enumerate(transcript.turns):
        replies = [run[i] for run in per_turn]
        meta = replies[0].metadata["livekit"]
        audio_s = float(meta.get("audio_duration_s", 0.0))
        audio_total += audio_s
        wall = _median([r.metadata["livekit"]["turn_wall_s"] for r in replies])
        played = audio_s / speed if speed > 0 else 0.0
        latency = _median([r.latency_s for r in replies if r.latency_s is not None])
        kind = "audio" if turn.audio is not None else "text "
        print(
            f"| {label} | {i + 1} ({kind}) | {audio_s:5.2f} s | {wall:6.3f} s | "
            f"{wall - played:6.3f} s | {latency:6.3f} s |"
        )
    total = _median(totals)
    played = audio_total / speed if speed > 0 else 0.0
    print(
        f"| {label} | **3-turn transcript** | {audio_total:5.2f} s | {total:6.3f} s | "
        f"{total - played:6.3f} s | |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="measured runs at max speed")
    parser.add_argument("--realtime-runs", type=int, default=2, help="measured runs at 1x")
    parser.add_argument("--stt", choices=["fixture-text", "whisper"], action="append")
    parser.add_argument("--whisper-threads", type=int, default=0, help="0: CTranslate2 default")
    args = parser.parse_args(argv)
    agent = _example_agent()
    with tempfile.TemporaryDirectory() as tmp:
        transcript = _transcript(Path(tmp))
        print("| configuration | turn | audio | wall (median) | overhead | latency to 1st text |")
        print("|---|---|---|---|---|---|")
        for stt in args.stt or ["fixture-text", "whisper"]:
            for speed, runs in ((0.0, args.runs), (1.0, args.realtime_runs)):
                if runs > 0:
                    asyncio.run(_bench(agent, transcript, stt, speed, runs, args.whisper_threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
