"""A 6-turn voice simulation, first run and cached rerun: wall time and caller model requests.

Runs a simulated caller against the example's restaurant agent (examples/voice-livekit) in a
real in-process LiveKit AgentSession (Silero VAD, the fixture-text STT, the scripted LLM). The
caller is a real pydantic-ai `FunctionModel` that says six utterances (max_turns ends the call);
each is synthesized on the fly with the offline voice and streamed into the session; a
`FunctionModel` judge scores one criterion.

    .venv/bin/python bench/simulation.py [--repeat 3] [--caller-latency-s 0 0.8]

For each caller latency (0: the model answers at once, the floor; 0.8 s: what a hosted small
model takes per turn, simulated with an awaited delay inside the model, not measured), each
repeat runs, in fresh cache folders:

1. a first run: an empty caller cache and no synthesized utterances (every caller turn is a
   model request, every utterance is synthesized);
2. a cached rerun against the same agent: the caller cache replays every turn and the
   utterances' WAVs are found fresh.

Both are warm (a warm-up simulation first loads Silero, the TTS voice and LiveKit). Prints the
median wall time of each, the caller requests each made, and the ratio first / rerun.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from pytest_agent_eval import Transcript
from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval._runner import RunSettings
from pytest_agent_eval.simulation import (
    CallerSettings,
    Simulation,
    SimulationSettings,
    run_simulation,
)

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "voice-livekit"
UTTERANCES = (
    "Hello there!",
    "Hi, I am Alice and I would like a table for two at seven pm.",
    "What name is the booking under?",
    "Do you have vegan dishes?",
    "Do you have gluten free dishes?",
    "What name is the booking under?",
)
TURNS = len(UTTERANCES)


def _example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("booking_agent", EXAMPLE / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["booking_agent"] = module
    spec.loader.exec_module(module)
    return module


class Counted:
    """The caller model: the next utterance by turn; counts requests; waits ``latency_s``."""

    def __init__(self, latency_s: float) -> None:
        self.latency_s = latency_s
        self.requests = 0

    async def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        if self.latency_s:
            await asyncio.sleep(self.latency_s)  # a hosted model's time per turn, simulated
        prompt = str(messages[-1].parts[-1].content)  # type: ignore[union-attr]
        number = int(prompt.split("This is your turn ", 1)[1].split(" ", 1)[0])
        return ModelResponse(parts=[TextPart(UTTERANCES[(number - 1) % TURNS])])


async def judge(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    verdict = {"reasoning": "Turn 2 books the table.", "verdict": "met"}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


def simulate(
    booking: ModuleType, folder: Path, latency_s: float, seed: int
) -> tuple[float, int, str]:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter
    from pytest_agent_eval.simulation import CallerConfig

    caller = Counted(latency_s)
    sim = Simulation(
        transcript=Transcript(id="bench", turns=[]),
        persona="Alice, booking a table for two at seven.",
        criteria=["The agent books the table."],
        max_turns=TURNS,
        min_turns=TURNS,
        caller=CallerConfig(seed=seed),
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=FunctionModel(judge))),
        caller=CallerSettings(
            model=FunctionModel(caller.respond, model_name="bench-caller"),
            cache_dir=folder / "caller",
        ),
        audio_dir=folder / "audio",
    )
    adapter = LiveKitAdapter(booking.make_session, timeout_s=30.0)
    start = time.perf_counter()
    result = asyncio.run(run_simulation(sim, adapter, settings=settings))
    wall = time.perf_counter() - start
    run = result.runs[0]
    assert run.simulation is not None and run.simulation.turns == TURNS, run.error
    return wall, caller.requests, result.verdict


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--caller-latency-s", type=float, nargs="+", default=[0.0, 0.8])
    args = parser.parse_args()
    booking = _example()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        simulate(booking, root / "warmup", 0.0, seed=99)  # loads Silero, the voice, LiveKit
        print(f"load average {os.getloadavg()[0]:.2f}; {TURNS} caller turns per simulation")
        print(
            f"{'caller latency':>15} {'first run':>10} {'requests':>9} {'rerun':>8} "
            f"{'requests':>9} {'first/rerun':>12}"
        )
        for latency in args.caller_latency_s:
            firsts, reruns, asked = [], [], []
            for i in range(args.repeat):
                folder = root / f"l{latency}-{i}"
                wall, requests, verdict = simulate(booking, folder, latency, seed=i)
                again, again_requests, again_verdict = simulate(booking, folder, latency, seed=i)
                assert verdict == again_verdict == "passed"
                firsts.append(wall)
                reruns.append(again)
                asked.append((requests, again_requests))
            first, rerun = statistics.median(firsts), statistics.median(reruns)
            print(
                f"{latency:>14.1f}s {first:>9.2f}s {asked[0][0]:>9} {rerun:>7.2f}s "
                f"{asked[0][1]:>9} {first / rerun:>11.1f}x"
            )


if __name__ == "__main__":
    main()
