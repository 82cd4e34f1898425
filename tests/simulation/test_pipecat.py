"""A simulated caller heard by a real Pipecat pipeline (Silero VAD, the fixture-text STT, a
scripted LLM with tools, the offline TTS): the same simulation and verdicts as on LiveKit."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")

from sim_models import CallerCall, End, ScriptedCaller, ScriptedJudge

from pytest_agent_eval import Transcript
from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval._runner import RunSettings
from pytest_agent_eval.models import Expect
from pytest_agent_eval.simulation import (
    CallerSettings,
    Simulation,
    SimulationSettings,
    run_simulation,
)

PIPECAT_TESTS = Path(__file__).resolve().parents[1] / "pipecat"
WEATHER = "What is the weather in Paris?"
FORECAST = "And the forecast for tomorrow?"


def _corpus_bots() -> ModuleType:
    # The bots of tests/pipecat, by path (that folder is no package: it would shadow pipecat).
    name = "corpus_bots"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, PIPECAT_TESTS / "corpus_bots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def weather_caller(call: CallerCall) -> str | End:
    if call.may_end:
        return End("goal_reached", "I know the weather now.")
    return WEATHER if call.turn == 1 else FORECAST


def test_a_pipecat_bot_hears_the_callers_synthesized_speech(tmp_path: Path) -> None:
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    bots = _corpus_bots()

    def decide(criterion: str, conversation: str) -> tuple[str, str]:
        ok = "[agent called tool get_weather]" in conversation
        return ("met" if ok else "not_met"), "Turn 1 calls get_weather." if ok else "no tool"

    sim = Simulation(
        transcript=Transcript(id="pipecat-weather", turns=[]),
        persona="A traveller going to Paris.",
        criteria=["The agent looks the weather up."],
        max_turns=4,
        every_turn=Expect(heard_wer_max=0.1),
    )
    caller = ScriptedCaller(weather_caller)
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(decide).model)),
        caller=CallerSettings(model=caller.model),
        audio_dir=tmp_path / "caller-audio",
    )
    result = asyncio.run(run_simulation(sim, PipecatAdapter(bots.single_bot), settings=settings))
    assert result.verdict == "passed", result.runs[0].error
    (run,) = result.runs
    assert [t.user for t in run.turns] == [WEATHER, FORECAST]
    assert [t.heard for t in run.turns] == [WEATHER, FORECAST]
    assert all(t.audio is not None and Path(t.audio).is_file() for t in run.turns)
    assert [c.name for c in run.turns[0].tool_calls] == ["get_weather"]
    assert "Paris" in run.turns[0].reply
    assert "a voice agent, on a phone call" in caller.calls[0].instructions
