"""Wall time of a 3-turn Pipecat voice conversation against its audio, first hearing and heard
before, at max speed (the virtual clock) and in real time.

Runs the example's bot (examples/voice-pipecat: its own ``run_bot``, Silero VAD and the default
smart-turn v3 stop strategy, the scripted LLM, the offline TTS) on three spoken turns made by
the offline synthesizer: the booking, the vegan question, the name question. Each conversation
is a fresh pipeline on its own thread and clock, as in a test run.

    .venv/bin/python bench/pipecat_voice.py [--runs 5] [--realtime] [--whisper] [--factory]
        [--unheard] [--chunk-ms 20]

Prints, per configuration: the fixtures' audio, the conversation's length in pipeline time
(what a real-time run takes), the wall time of the first conversation in a fresh process
(first hearing: Silero, smart-turn and the voice loaded, Whisper recognizing) and the median of
the next ones (heard before: models loaded, Whisper answered from its cache), and the ratios
"x real time" = pipeline time / wall time, "x fixture audio" = audio / wall time, and
"x real time per cpu-second" = pipeline time / CPU time (what an idle core gives; the wall
ratios depend on what else the machine runs, so the load average is printed).

Pipecat's own harness (``pipecat.evals``) runs the same bot side by side in
``bench/pipecat_evals_side_by_side.py``.

``AGENT_EVAL_PIPECAT_MEMO=0`` measures every conversation as a first hearing of the models
(see ``adapters/pipecat/_memo.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-pipecat"

TRANSCRIPT = """
id: bench_three_turns
turns:
  - user: "Hi, I am Alice and I would like a table for two at seven pm."
    audio: audio/t1.wav
  - user: "Do you have vegan dishes?"
    audio: audio/t2.wav
  - user: "What name is the booking under?"
    audio: audio/t3.wav
"""


def _load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _prepare(folder: Path) -> Path:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    path = folder / "bench.yaml"
    path.write_text(TRANSCRIPT)
    ensure_fixtures([load_transcript_file(path)], jobs=1).raise_for_failures()
    return path


def _make_bot(bot: Any) -> Any:
    """The example's pipeline as a bare ``make_bot(transport)``: the adapter makes its worker
    (without RTVI, which has no client in-process)."""
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.frames.frames import LLMRunFrame
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    def make_bot(transport: Any) -> Any:
        stt, llm, tts = bot.create_services()
        context = LLMContext(
            [{"role": "system", "content": "You are the booking assistant."}],
            tools=[bot.book_table, bot.check_menu],
        )
        user, assistant = LLMContextAggregatorPair(
            context, user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
        )

        @transport.event_handler("on_client_connected")
        async def greet(transport: Any, client: Any) -> None:
            context.add_message({"role": "developer", "content": "Greet the caller."})
            await user.push_frame(LLMRunFrame())

        return Pipeline([transport.input(), stt, user, llm, tts, transport.output(), assistant])

    return make_bot


def _conversation(
    path: Path,
    runs: int,
    speed: float,
    whisper: bool,
    chunk_ms: int = 20,
    factory: bool = False,
) -> list[dict[str, float]]:
    """Hold ``runs`` conversations one after another in this process; a dict per run."""
    import pytest_agent_eval.adapters.pipecat  # noqa: F401  (the clock, before pipecat)

    sys.path.insert(0, str(EXAMPLE))
    import bot

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter, WhisperSTTService

    if whisper:
        made = bot.create_services

        def create_services():  # type: ignore[no-untyped-def]
            _stt, llm, tts = made()
            return WhisperSTTService(cpu_threads=1), llm, tts

        bot.create_services = create_services
    transcript = load_transcript_file(path)
    options: dict[str, Any] = {"speed": speed, "timeout_s": 60.0, "chunk_ms": chunk_ms}
    adapter = (
        PipecatAdapter(_make_bot(bot), **options)
        if factory
        else PipecatAdapter(run_bot=bot.run_bot, **options)
    )

    forget = os.environ.get("AGENT_EVAL_BENCH_UNHEARD") == "1"

    async def once(index: int) -> dict[str, float]:
        if forget:  # the models loaded, but none of this audio heard before
            from pytest_agent_eval.adapters.pipecat import _memo

            _memo.RESULTS.clear()
            _memo.SPEECH.clear()
        started = time.perf_counter()
        cpu = time.process_time()
        await adapter.prepare(transcript)
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index)
        )
        try:
            audio = 0.0
            for i, turn in enumerate(transcript.turns):
                reply = await conversation.respond(
                    TurnInput(turn=turn, index=i, audio=Path(turn.audio))
                )
                audio += reply.metadata["pipecat"]["audio_duration_s"]
                assert reply.reply, f"turn {i + 1} got no reply"
            pipeline_s = conversation.clock.elapsed()
        finally:
            await conversation.aclose()
        return {
            "wall_s": time.perf_counter() - started,
            "cpu_s": time.process_time() - cpu,
            "pipeline_s": pipeline_s,
            "audio_s": audio,
        }

    async def all_runs() -> list[dict[str, float]]:
        return [await once(i) for i in range(runs)]

    return asyncio.run(all_runs())


def _fresh_process(
    path: Path,
    runs: int,
    speed: float,
    whisper: bool,
    chunk_ms: int = 20,
    factory: bool = False,
) -> list[dict[str, float]]:
    args = [sys.executable, __file__, "--child", str(path), "--runs", str(runs)]
    args += ["--speed", str(speed), "--chunk-ms", str(chunk_ms)]
    args += (["--whisper"] if whisper else []) + (["--factory"] if factory else [])
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the bench run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def _line(name: str, run: dict[str, float]) -> str:
    wall, cpu = run["wall_s"], run["cpu_s"]
    return (
        f"  {name:<30} wall {wall:5.2f} s  {run['pipeline_s'] / wall:5.1f}x real time  "
        f"{run['audio_s'] / wall:5.1f}x fixture audio | cpu {cpu:5.2f} s  "
        f"{run['pipeline_s'] / cpu:5.1f}x real time per cpu-second"
    )


def _report(title: str, runs: list[dict[str, float]]) -> None:
    first, rest = runs[0], runs[1:]
    print(
        f"{title}: fixture audio {first['audio_s']:.2f} s, conversation "
        f"{first['pipeline_s']:.2f} s of pipeline time"
    )
    print(_line("first hearing (fresh process)", first))
    if rest:
        median = {k: statistics.median(r[k] for r in rest) for k in first}
        print(_line(f"heard before (median of {len(rest)})", median))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="heard-before runs (default 5)")
    parser.add_argument("--realtime", action="store_true", help="also one run at speed=1.0")
    parser.add_argument("--whisper", action="store_true", help="also with WhisperSTTService")
    parser.add_argument(
        "--chunk-ms", type=int, default=20, help="microphone chunk length (default 20)"
    )
    parser.add_argument(
        "--factory", action="store_true", help="also the example's pipeline as a bare make_bot"
    )
    parser.add_argument(
        "--unheard",
        action="store_true",
        help="also with the models loaded but nothing heard before (memory cleared per run)",
    )
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--speed", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child is not None:
        from loguru import logger

        logger.remove()
        runs = _conversation(
            args.child, args.runs, args.speed, args.whisper, args.chunk_ms, args.factory
        )
        print(json.dumps(runs))
        return
    print(f"pipecat voice bench ({_load()}, {os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        path = _prepare(Path(tmp))
        _report(
            f"max speed, fixture-text STT, {args.chunk_ms} ms chunks",
            _fresh_process(path, args.runs + 1, 0.0, whisper=False, chunk_ms=args.chunk_ms),
        )
        if args.unheard:
            os.environ["AGENT_EVAL_BENCH_UNHEARD"] = "1"
            _report(
                "max speed, models loaded but the audio never heard before",
                _fresh_process(path, args.runs + 1, 0.0, whisper=False, chunk_ms=args.chunk_ms),
            )
            del os.environ["AGENT_EVAL_BENCH_UNHEARD"]
        if args.factory:
            _report(
                f"max speed, make_bot (no RTVI), {args.chunk_ms} ms chunks",
                _fresh_process(path, args.runs + 1, 0.0, False, args.chunk_ms, factory=True),
            )
        if args.whisper:
            cache = Path(tmp) / "stt-cache"
            cache.mkdir()
            _report(
                "max speed, Whisper tiny.en STT",
                _fresh_process(path, args.runs + 1, 0.0, whisper=True),
            )
        if args.realtime:
            _report("real time (speed=1)", _fresh_process(path, 1, 1.0, whisper=False))
        shutil.rmtree(Path(tmp) / "audio", ignore_errors=True)
    print(f"done ({_load()})")


if __name__ == "__main__":
    main()
