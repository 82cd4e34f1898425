"""A small realistic LiveKit suite in real time and on the virtual clock (issue 38).

Runs the example's restaurant agent (examples/voice-livekit: Silero VAD, the fixture-text STT,
the scripted LLM) with the offline voice as its TTS, so replies play for their length, on four
transcripts of 2 runs each: a booking by voice with a tool and a text turn between, a fixture
with a 1.5 s pause between two sentences, two spoken questions, and a barge-in over a spoken
reply. Each suite runs through the runner (the verdicts are compared) three ways:

- ``real time``: ``speed=1.0``, on the wall's clock (what a live call takes);
- ``max speed``: ``speed=0``, the default, on the wall's clock (phrase by phrase; the barge-in
  still in real time);
- ``virtual``: ``LiveKitAdapter(clock="virtual")`` at ``speed=0``.

    .venv/bin/python bench/livekit_clock.py [--runs 2]

Prints the audio the suite streams (the fixtures with their tails, every run), then per way the
wall time, the CPU time of the process, the x-audio ratio (audio seconds per wall second), the
x-real-time ratio (the real-time run's wall time over this one's: a live call also waits for
the agent's replies to play) and whether every turn's verdict and reply equal real time's. A
warm-up transcript per way (Silero, the voice and the fixtures loaded) runs first and is not
counted.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit"

BOOKING = "Hi, I am Alice and I would like a table for two at seven pm."
TRANSCRIPTS = {
    "booking": """
id: booking
runs: {runs}
turns:
  - user: "{booking}"
    audio: booking.wav
    expect: {{tool_calls_include: [book_table], reply_matches_any: ["BK-\\\\d+"]}}
  - user: "Do you have vegan dishes?"
    expect: {{tool_calls_include: [check_menu], reply_contains_all: [risotto]}}
  - user: "What name is the booking under?"
    audio: name.wav
    expect: {{reply_contains_any: [Alice]}}
""",
    "pause": """
id: pause
runs: {runs}
turns:
  - user: "Hello there. [pause 1.5s] I would like a table for four at eight pm under Bob."
    audio: pause.wav
    expect: {{tool_calls_include: [book_table], reply_contains_any: [BK]}}
""",
    "questions": """
id: questions
runs: {runs}
turns:
  - user: "Do you have gluten free dishes?"
    audio: gluten.wav
    expect: {{reply_contains_any: [polenta]}}
  - user: "Do you have vegan dishes?"
    audio: vegan.wav
    expect: {{reply_contains_any: [risotto]}}
""",
    "barge_in": """
id: barge_in
runs: {runs}
turns:
  - user: "{booking}"
  - user: "Do you have vegan dishes?"
    audio: vegan.wav
    interrupt: {{after_ms: 1200, stop_within_ms: 2000}}
    expect: {{reply_contains_any: [risotto]}}
""",
}
WARM_UP = """
id: warm_up
turns:
  - user: "Do you have vegan dishes?"
    audio: vegan.wav
"""

WAYS: dict[str, dict[str, Any]] = {
    "real time": {"speed": 1.0},
    "max speed": {"speed": 0.0},
    "virtual": {"speed": 0.0, "clock": "virtual"},
}


def _example_agent() -> ModuleType:
    spec = importlib.util.spec_from_file_location("booking_agent", EXAMPLE / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["booking_agent"] = module
    spec.loader.exec_module(module)  # on the main thread, as LiveKit plugins require
    return module


def _suite(folder: Path, runs: int) -> list[Any]:
    from pytest_agent_eval._loader import load_transcript_text
    from pytest_agent_eval.synthesize import ensure_fixtures

    scripts = [
        load_transcript_text(text.format(runs=runs, booking=BOOKING), path=folder / f"{key}.yaml")
        for key, text in TRANSCRIPTS.items()
    ]
    ensure_fixtures(scripts, jobs=1).raise_for_failures()
    return scripts


def _audio_s(adapter: Any, scripts: list[Any]) -> float:
    """The audio the suite streams: every audio turn's fixture with its tail, every run."""
    from pytest_agent_eval.voice._fixture_pcm import resolve_audio

    total = 0.0
    for script in scripts:
        for turn in script.turns:
            if turn.audio is not None:
                audio = adapter.fixture_audio(resolve_audio(turn.audio, script))
                total += script.runs * len(audio.frames) * audio.frame_s
    return total


def _adapter(agent: ModuleType, **options: Any) -> Any:
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import (
        FixtureTextSTT,
        LiveKitAdapter,
        ScriptedLLM,
        SynthesizerTTS,
        eval_session_kwargs,
    )

    def make() -> tuple[Any, Any]:
        session: AgentSession[Any] = AgentSession(
            stt=FixtureTextSTT(),
            vad=agent.VAD,
            llm=ScriptedLLM(agent.RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        return session, agent.RestaurantAgent()

    return LiveKitAdapter(make, timeout_s=60.0, tail_silence_s=0.7, **options)


def _outcome(results: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (result.transcript_id, run.run_index, turn.index, turn.verdict, turn.reply)
        for result in results
        for run in result.runs
        for turn in run.turns
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    agent = _example_agent()
    from pytest_agent_eval._loader import load_transcript_text
    from pytest_agent_eval._runner import RunSettings, run_transcript

    settings = RunSettings(concurrency=1)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        scripts = _suite(folder, args.runs)
        warm = load_transcript_text(WARM_UP, path=folder / "warm_up.yaml")
        for options in WAYS.values():
            asyncio.run(run_transcript(warm, _adapter(agent, **options), settings=settings))
        audio_s = _audio_s(_adapter(agent), scripts)
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"{len(scripts)} transcripts x {args.runs} runs, {audio_s:.1f} s of audio streamed")
        print(f"load average before: {load}")
        print(
            f"{'way':<10} {'wall s':>8} {'CPU s':>8} {'x audio':>8} {'x real time':>12}  "
            "verdicts, replies"
        )
        real_wall = 0.0
        outcomes: dict[str, list[tuple[Any, ...]]] = {}
        for way, options in WAYS.items():
            adapter = _adapter(agent, **options)
            wall, cpu = time.perf_counter(), time.process_time()
            results = [
                asyncio.run(run_transcript(script, adapter, settings=settings))
                for script in scripts
            ]
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            outcomes[way] = _outcome(results)
            real_wall = real_wall or wall  # real time runs first
            same = "(reference)" if way == "real time" else None
            if same is None:
                differ = [
                    f"{a[0]} run {a[1] + 1} turn {a[2] + 1}: {a[3]} vs {b[3]}"
                    + ("" if a[4] == b[4] else f", {a[4]!r} vs {b[4]!r}")
                    for a, b in zip(outcomes["real time"], outcomes[way], strict=True)
                    if a != b
                ]
                same = "same as real time" if not differ else "; ".join(differ)
            passed = sum(r.passed for r in results)
            print(
                f"{way:<10} {wall:8.2f} {cpu:8.2f} {audio_s / wall:8.1f} {real_wall / wall:12.1f}  "
                f"{passed}/{len(results)} transcripts passed; {same}"
            )
        load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"load average after: {load}")


if __name__ == "__main__":
    main()
