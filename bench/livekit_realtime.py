"""Wall time of spoken turns with an agent on a realtime (speech-to-speech) model, against the
audio, at max speed and in real time.

Runs the example's front desk (examples/voice-livekit-realtime: `FrontDesk`, a handoff to
`ConciergeAgent`, on `ScriptedRealtimeModel` with its offline voice) over the example's three
spoken turns plus the greeting, in a real in-process ``AgentSession`` per conversation, as in a
test run. Three turn-detection wirings: the model's server VAD (the default), the session's VAD
(``turn_detection="vad"``), and a server VAD the session cannot switch off (as Gemini Live).

    .venv/bin/python bench/livekit_realtime.py [--runs 5] [--realtime]

Prints per wiring: the fixtures' audio, the median wall time of a turn and of a whole
conversation (the first conversation of the process is left out: it loads the voice), and
"x fixture audio" = audio / conversation wall; with ``--realtime`` also one conversation at
``speed=1`` and "x real time" = its wall / the max-speed median (what streaming at max speed
saves). The load average is printed: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit-realtime"


def _load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _factory(wiring: str) -> Any:
    from front_desk_agent import FrontDesk, scripted_model
    from livekit.agents import AgentSession
    from livekit.plugins import silero

    from pytest_agent_eval.adapters.livekit import eval_session_kwargs

    vad = silero.VAD.load()

    def make_session() -> Any:
        model = scripted_model(can_disable_turn_detection=wiring != "fixed server")
        if wiring == "server":
            return AgentSession(llm=model), FrontDesk()
        return AgentSession(llm=model, vad=vad, **eval_session_kwargs()), FrontDesk()

    return make_session


async def _conversation(adapter: Any, script: Any) -> tuple[float, list[float]]:
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput

    started = time.perf_counter()
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=0)
    )
    turns = []
    try:
        for index, turn in enumerate(script.turns):
            reply = await conversation.respond(
                TurnInput(turn=turn, index=index, audio=Path(turn.audio))
            )
            turns.append(reply.metadata["livekit"]["turn_wall_s"])
    finally:
        await conversation.aclose()
    return time.perf_counter() - started, turns


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--realtime", action="store_true", help="also one run at speed=1")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", UserWarning)  # the session-VAD wiring is asked for here
    # LiveKit says so when the session asks for VAD turns the model keeps on its server.
    logging.getLogger("livekit.agents").setLevel(logging.ERROR)

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = Path(tempfile.mkdtemp(prefix="bench-realtime-"))
    try:
        shutil.copytree(EXAMPLE, folder / "example", ignore=shutil.ignore_patterns("audio"))
        sys.path.insert(0, str(folder / "example"))
        script = load_transcript_file(folder / "example" / "evals" / "front_desk.yaml")
        ensure_fixtures([script], jobs=1).raise_for_failures()
        audio_s = sum(
            load_fixture_seconds(Path(t.audio)) for t in script.turns if t.audio is not None
        )
        print(f"{len(script.turns)} spoken turns + greeting, {audio_s:.1f} s of fixture audio")
        print(_load())
        rows = []
        for wiring in ("server", "session", "fixed server"):
            walls, turns = [], []
            for run in range(args.runs + 1):
                adapter = LiveKitAdapter(_factory(wiring), timeout_s=30.0)
                wall, per_turn = asyncio.run(_conversation(adapter, script))
                if run:  # the first loads the voice
                    walls.append(wall)
                    turns.extend(per_turn)
            wall = statistics.median(walls)
            row = {
                "wiring": wiring,
                "turn": statistics.median(turns),
                "turn_max": max(turns),
                "wall": wall,
                "x_audio": audio_s / wall,
            }
            if args.realtime:
                adapter = LiveKitAdapter(_factory(wiring), timeout_s=60.0, speed=1.0)
                row["realtime"], _ = asyncio.run(_conversation(adapter, script))
            rows.append(row)
            print(
                f"{wiring:>12}: turn median {row['turn']:.3f} s (max {row['turn_max']:.3f} s), "
                f"conversation {wall:.2f} s, x fixture audio {row['x_audio']:.1f}"
                + (
                    f", real time {row['realtime']:.2f} s, x real time {row['realtime'] / wall:.1f}"
                    if "realtime" in row
                    else ""
                )
            )
        print(_load())
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


def load_fixture_seconds(path: Path) -> float:
    import soundfile as sf

    info = sf.info(str(path))
    return float(info.frames) / float(info.samplerate)


if __name__ == "__main__":
    raise SystemExit(main())
