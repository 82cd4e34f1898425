"""The turn-taking pack through one LiveKit agent or one Pipecat bot on the virtual clock
(issue 34).

Renders the default pack (seed 0, all 65 stimuli; rendering is timed apart and not counted),
then plays every stimulus to a fresh in-process ``AgentSession`` of LiveKit's defaults (Silero
VAD, VAD turn detection, 0.5 s endpointing, VAD interruptions) with the scripted LLM and the
offline TTS, as a ``turn_taking:`` item does, on the virtual clock. With ``--pipecat``, to a
fresh Pipecat pipeline of Pipecat's defaults instead (Silero VAD, the default user-turn
strategies: VAD and transcription start it and interrupt, smart-turn v3 ends it).

    .venv/bin/python bench/turn_taking.py [--pipecat] [--stimulus ID ...] [--repeat 2]

Prints the seconds of audio played (each clip and its 3 s tail, plus what the agent said
before a clip that plays over it is not counted), the wall and CPU time, the x-real-time ratio
(audio seconds per wall second), the process's resident memory before and after each repeat
(psutil; flat memory over the pack is repeats after the first adding next to nothing), every
metric, and with ``--repeat`` whether every repeat gave identical observations.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

TAIL_S = 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.partition("\n")[0])
    parser.add_argument("--stimulus", action="append", help="only these ids (repeatable)")
    parser.add_argument("--repeat", type=int, default=1, help="play the pack this many times")
    parser.add_argument("--pipecat", action="store_true", help="a Pipecat bot of its defaults")
    parser.add_argument("--pack", type=Path, help="a pack already written there (seed 0)")
    args = parser.parse_args()

    from pytest_agent_eval._turn_taking._metrics import compute_metrics
    from pytest_agent_eval._turn_taking._observer import read_pack
    from pytest_agent_eval._turn_taking._pack import write_pack

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.pack or Path(tmp)
        if args.pack is None:
            started = time.perf_counter()
            summary = write_pack(folder, seed=0, only=args.stimulus)
            took = time.perf_counter() - started
            print(f"rendered {len(summary.written)} stimuli in {took:.1f} s")
        played = read_pack(folder, args.stimulus)
        audio_s = sum(p.clip.duration_s + TAIL_S for p in played)
        play = _pipecat() if args.pipecat else _livekit()
        import psutil  # the dev and capacity extras install it

        runs = []
        process = psutil.Process()
        for repeat in range(args.repeat):
            rss_before = process.memory_info().rss / 2**20
            wall, cpu = time.perf_counter(), os.times()
            observations = asyncio.run(_each(play, played))
            wall_s = time.perf_counter() - wall
            after = os.times()
            cpu_s = (after.user - cpu.user) + (after.system - cpu.system)
            rss_after = process.memory_info().rss / 2**20
            runs.append(observations)
            print(
                f"repeat {repeat + 1}: {len(observations)} stimuli, {audio_s:.1f} s of audio, "
                f"wall {wall_s:.1f} s, CPU {cpu_s:.1f} s, {audio_s / wall_s:.1f}x real time, "
                f"RSS {rss_before:.0f} -> {rss_after:.0f} MB"
            )
        for metric in compute_metrics(runs[0]).values():
            interval = "" if metric.interval is None else f" [{metric.interval[0]:.3g}, "
            interval += "" if metric.interval is None else f"{metric.interval[1]:.3g}]"
            hits = f" ({metric.hits}/{metric.count})" if metric.hits is not None else ""
            hits = hits or f" (n={metric.count})"
            value = "unmeasured" if metric.value is None else f"{metric.value:.3g}"
            print(f"  {metric.name}: {value}{hits}{interval}")
        if args.repeat > 1:
            same = all(r == runs[0] for r in runs[1:])
            print(f"identical observations on every repeat: {same}")


async def _each(play: Any, played: Any) -> list[Any]:
    """Every stimulus's observation; one that could not be observed is named and left out
    (a ``turn_taking:`` item would be an ERROR there)."""
    from pytest_agent_eval.errors import AdapterError

    out = []
    for p in played:
        try:
            out.append(await play(p))
        except AdapterError as exc:
            print(f"  not observed: {exc}")
    return out


def _livekit() -> Any:
    from livekit.plugins import silero

    from pytest_agent_eval.adapters.livekit._turn_taking import observe_livekit

    vad = silero.VAD.load()
    return lambda p: observe_livekit(p.stimulus, p.clip, p.events, vad=vad, tail_s=TAIL_S)


def _pipecat() -> Any:
    # The package first: it installs the clock Pipecat must be imported under.
    import pytest_agent_eval.adapters.pipecat as ours
    from pytest_agent_eval.adapters.pipecat._turn_taking import observe_bot

    def bot(transport: Any) -> Any:
        from pipecat.audio.vad.silero import SileroVADAnalyzer
        from pipecat.pipeline.pipeline import Pipeline
        from pipecat.processors.aggregators.llm_context import LLMContext
        from pipecat.processors.aggregators.llm_response_universal import (
            LLMContextAggregatorPair,
            LLMUserAggregatorParams,
        )

        user, assistant = LLMContextAggregatorPair(
            LLMContext(), user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
        )
        return Pipeline(
            [
                transport.input(),
                ours.FixtureTextSTTService(),
                user,
                ours.ScriptedLLMService([]),
                ours.SynthesizerTTSService(backend="espeak"),
                transport.output(),
                assistant,
            ]
        )

    return lambda p: observe_bot(p.stimulus, p.clip, p.events, bot, tail_s=TAIL_S)


if __name__ == "__main__":
    main()
