"""The same 3-turn spoken conversation with the same bot, through Pipecat's own eval harness
(``pipecat.evals``, in the pipecat-ai wheel) and through `PipecatAdapter`, side by side.

The bot is the example's (examples/voice-pipecat: its own ``run_bot``, Silero VAD, the default
smart-turn v3 stop strategy, the scripted LLM, the offline TTS), with `WhisperSTTService`
(tiny.en, local) as its STT on both sides: Pipecat's harness plays recordings into a running
bot, and the fixture-text STT only hears a fixture the adapter vouches for.

- **Pipecat's harness**: the bot runs in its own process behind Pipecat's eval transport (a
  WebSocket server on 127.0.0.1 speaking RTVI, ``pipecat.evals.transport.EvalTransport``, as
  ``pipecat eval run`` serves a bot); the harness (``EvalSession``) connects as the RTVI client,
  plays each turn's WAV (``audio:``, the same fixtures) at wall-clock cadence, and checks the
  function calls and the LLM's text. Offline: no user TTS (recordings), judge in text modality
  (the LLM's text, so no bot-audio STT and no judge LLM).
- **PipecatAdapter**: the same fixtures and bot in-process, at max speed (virtual clock) and in
  real time, through the runner's protocol as in ``bench/pipecat_voice.py``.

    .venv/bin/python bench/pipecat_evals_side_by_side.py [--runs 3]

Prints each side's wall time per conversation and whether it passed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
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
sys.path.insert(0, str(Path(__file__).resolve().parent))

from pipecat_voice import _prepare  # noqa: E402  (the bench's fixtures)

TURNS = [
    # Whisper hears "... a table for 2 at 7pm.", which the example's booking rule (written for
    # "seven pm") does not match: the scripted LLM declines, on both sides alike.
    ("Hi, I am Alice and I would like a table for two at seven pm.", "t1.wav", None, "Sorry"),
    ("Do you have vegan dishes?", "t2.wav", "check_menu", "mushroom risotto"),
    ("What name is the booking under?", "t3.wav", None, "under Alice"),
]
"""The bench transcript's turns (bench/pipecat_voice.py): what is said, its fixture, the
function the bot calls and words of its reply, as the bot answers with Whisper as its STT."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _scenario(folder: Path) -> Path:
    lines = [
        "name: side_by_side",
        "user:",
        "  modality: audio",
        "judge:",
        # Audio: the bot speaks (as in the adapter's run). The harness would transcribe its
        # speech only for a `response` check; none here, so the STT is never built.
        "  modality: audio",
        "  transcription:",
        "    factory: pipecat_evals_side_by_side.bot_audio_stt",
        "scenarios:",
        "  - name: three_turns",
        "    turns:",
    ]
    for said, wav, tool, text in TURNS:
        lines += [f'      - user: "{said}"', f'        audio: "{folder / "audio" / wav}"']
        lines += ["        expect:"]
        if tool:
            lines += ["          - event: function_call", "            calls:"]
            lines += [f"              - name: {tool}"]
        lines += ["          - event: llm_response", f"            text_contains: {text}"]
    path = folder / "side_by_side.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def bot_audio_stt(config: dict[str, Any]) -> Any:
    """The harness's STT for the bot's speech (a ``transcription: factory``): Whisper, local."""
    from pytest_agent_eval.adapters.pipecat import WhisperSTTService

    return WhisperSTTService(cpu_threads=1)


def _serve_bot(port: int) -> None:
    """The bot process: the example's run_bot behind Pipecat's eval transport."""
    import pytest_agent_eval.adapters.pipecat  # noqa: F401  (before pipecat: the time shim)

    sys.path.insert(0, str(EXAMPLE))
    import bot
    from pipecat.evals.serializer import EvalSerializer
    from pipecat.evals.transport import EvalTransport, EvalTransportParams
    from pipecat.runner.types import RunnerArguments

    from pytest_agent_eval.adapters.pipecat import WhisperSTTService

    made = bot.create_services

    def create_services():  # type: ignore[no-untyped-def]
        _stt, llm, tts = made()
        return WhisperSTTService(cpu_threads=1), llm, tts

    bot.create_services = create_services

    async def serve() -> None:
        while True:  # one conversation per connection, as `pipecat eval run` serves a bot
            transport = EvalTransport(
                params=EvalTransportParams(
                    audio_in_enabled=True, audio_out_enabled=True, serializer=EvalSerializer()
                ),
                host="127.0.0.1",
                port=port,
            )
            await bot.run_bot(transport, RunnerArguments())

    asyncio.run(serve())


async def _harness_once(scenario_path: Path, url: str) -> dict[str, Any]:
    from pipecat.evals.scenario import EvalScenarioFile
    from pipecat.evals.session import EvalSession, EvalSessionParams

    scenario = EvalScenarioFile.load(scenario_path).scenarios[0]
    session = EvalSession.from_scenario(
        scenario, url, params=EvalSessionParams(connect_timeout_s=30.0)
    )
    started = time.perf_counter()
    result = await session.run()
    wall = time.perf_counter() - started
    failures = [str(f)[:200] for f in getattr(result, "failures", [])]
    return {"wall_s": wall, "passed": bool(result.passed), "failures": failures}


def _wait_listening(port: int, timeout_s: float = 60.0) -> None:
    """Until the bot process listens on ``port`` (it imports Pipecat and loads its models
    first, and starts a new server after each conversation)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise SystemExit(f"the bot did not listen on 127.0.0.1:{port} within {timeout_s:g} s")


def _pipecat_harness(folder: Path, runs: int) -> list[dict[str, Any]]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    bot = subprocess.Popen(
        [sys.executable, __file__, "--serve-bot", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        scenario = _scenario(folder)
        results = []
        while len(results) < runs:
            _wait_listening(port)
            result = asyncio.run(_harness_once(scenario, f"ws://127.0.0.1:{port}"))
            if any("<connect>" in f or "<bot-ready>" in f for f in result["failures"]):
                # Between conversations the bot's old server closes and a new one starts: a
                # connection to either is no conversation. Try again.
                time.sleep(0.2)
                continue
            results.append(result)
        return results
    finally:
        bot.terminate()
        bot.wait(10)


def _adapter(folder: Path, runs: int, speed: float) -> list[dict[str, Any]]:
    args = [sys.executable, __file__, "--child", str(folder), "--runs", str(runs)]
    args += ["--speed", str(speed)]
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(args, capture_output=True, text=True, env=env, timeout=1800, check=False)
    if done.returncode != 0:
        raise SystemExit(f"the adapter run failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def _adapter_child(folder: Path, runs: int, speed: float) -> list[dict[str, Any]]:
    """``runs`` conversations through the adapter, each checked as the harness checks it."""
    import pytest_agent_eval.adapters.pipecat  # noqa: F401  (before pipecat: the time shim)

    sys.path.insert(0, str(EXAMPLE))
    import bot

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter, WhisperSTTService

    made = bot.create_services

    def create_services():  # type: ignore[no-untyped-def]
        _stt, llm, tts = made()
        return WhisperSTTService(cpu_threads=1), llm, tts

    bot.create_services = create_services
    transcript = load_transcript_file(folder / "bench.yaml")
    adapter = PipecatAdapter(run_bot=bot.run_bot, speed=speed, timeout_s=60.0)

    async def once(index: int) -> dict[str, Any]:
        started = time.perf_counter()
        await adapter.prepare(transcript)
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index)
        )
        failures = []
        try:
            for i, (turn, (_, _, tool, text)) in enumerate(
                zip(transcript.turns, TURNS, strict=True)
            ):
                reply = await conversation.respond(
                    TurnInput(turn=turn, index=i, audio=Path(str(turn.audio)))
                )
                if tool and tool not in [c.name for c in reply.calls]:
                    failures.append(f"turn {i}: function call {tool!r} not seen")
                if text not in reply.reply:
                    failures.append(f"turn {i}: {text!r} not in {reply.reply!r}")
        finally:
            await conversation.aclose()
        wall = time.perf_counter() - started
        return {"wall_s": wall, "passed": not failures, "failures": failures}

    async def all_runs() -> list[dict[str, Any]]:
        return [await once(i) for i in range(runs)]

    return asyncio.run(all_runs())


def _report(name: str, runs: list[dict[str, Any]]) -> None:
    walls = [r["wall_s"] for r in runs]
    passed = sum(1 for r in runs if r["passed"])
    rest = walls[1:] or walls
    print(
        f"  {name:<44} first {walls[0]:6.2f} s   then median {statistics.median(rest):6.2f} s"
        f"   passed {passed}/{len(runs)}"
    )
    for run in runs:
        for failure in run.get("failures", [])[:3]:
            print(f"      {failure}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="conversations per side")
    parser.add_argument("--serve-bot", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--speed", type=float, default=0.0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve_bot is not None:
        _serve_bot(args.serve_bot)
        return
    if args.child is not None:
        from loguru import logger

        logger.remove()
        print(json.dumps(_adapter_child(args.child, args.runs, args.speed)))
        return
    from loguru import logger

    import pytest_agent_eval.adapters.pipecat  # noqa: F401  (before pipecat: the time shim)

    logger.remove()
    load = " / ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"pipecat eval harness vs PipecatAdapter (load average {load}, {os.cpu_count()} cores)")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        _prepare(folder)
        _report("pipecat.evals harness (WebSocket, real time)", _pipecat_harness(folder, args.runs))
        _report("PipecatAdapter, max speed", _adapter(folder, args.runs, 0.0))
        _report("PipecatAdapter, real time (speed=1)", _adapter(folder, 1, 1.0))


if __name__ == "__main__":
    main()
