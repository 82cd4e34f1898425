"""Many conversations with a realtime agent on the public `ScriptedRealtimeModel`, counted:
how many gave the expected turns, how many another capture, how many an ERROR.

The example's front desk (examples/voice-livekit-realtime: the greeting, then three spoken
turns with a tool, a handoff and the new agent's tool) in a real in-process ``AgentSession``
per conversation, through `LiveKitAdapter`, as a test run does. The wirings are the rows of
docs/livekit-realtime.md, "Turn detection": the two where the model's server takes the turns
while the session's own VAD follows the user are the default, since there the scripted model
must answer after the session's VAD, as a provider does:

- ``server_and_session_vad``: ``AgentSession(llm=model, vad=...)``;
- ``fixed_server_auto_tool_reply``: a server VAD the session cannot switch off, on a model that
  answers tool results itself (Gemini Live's two capabilities), ``vad=`` and
  ``eval_session_kwargs()``;
- ``server`` (no ``vad=``) and ``session`` (``turn_detection="vad"``), on request.

    .venv/bin/python bench/realtime_stress.py [--runs 200] [--speed 0|1] [--concurrency 1]
        [--budget-s 1800] [--wiring NAME ...]

Bounded: ``--runs`` per wiring, and no run starts once ``--budget-s`` of wall time has passed
(the count done is printed). ``--concurrency`` runs that many conversations at once in one
event loop (for real time, where a conversation mostly waits). Prints per wiring the counts,
each distinct ERROR message or differing capture once with its count, the wall time, and the
load average (the machine is shared).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

__all__ = ["main"]

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "voice-livekit-realtime"
WIRINGS = ("server_and_session_vad", "fixed_server_auto_tool_reply", "server", "session")

EXPECTED = [
    ("A double room is 129 euros a night.", ["room_price"], "FrontDesk"),
    (
        "Let me get the concierge. Concierge here. When do you need the taxi?",
        ["transfer_to_concierge"],
        "ConciergeAgent",
    ),
    ("Booked: a taxi at seven thirty, reference TX-7.", ["book_taxi"], "ConciergeAgent"),
]
"""Per turn: the reply, the tools called, the agent answering (from the example's rules)."""


def _load() -> str:
    return "load average " + " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _factory(wiring: str, vad: Any) -> Any:
    from front_desk_agent import FrontDesk, scripted_model
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import eval_session_kwargs

    def make_session() -> Any:
        if wiring == "server":
            return AgentSession(llm=scripted_model()), FrontDesk()
        if wiring == "server_and_session_vad":
            return AgentSession(llm=scripted_model(), vad=vad), FrontDesk()
        if wiring == "session":
            return AgentSession(llm=scripted_model(), vad=vad, **eval_session_kwargs()), FrontDesk()
        model = scripted_model(can_disable_turn_detection=False, auto_tool_reply=True)
        return AgentSession(llm=model, vad=vad, **eval_session_kwargs()), FrontDesk()

    return make_session


async def _conversation(adapter: Any, script: Any, run_index: int) -> list[Any]:
    """The turns' captures: (reply, tools, agent) each."""
    from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput

    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    captured = []
    try:
        for index, turn in enumerate(script.turns):
            reply = await conversation.respond(
                TurnInput(turn=turn, index=index, audio=Path(turn.audio))
            )
            captured.append((reply.reply, [c.name for c in reply.calls], reply.active_agent))
    finally:
        await conversation.aclose()
    return captured


def _outcome(captured: list[Any]) -> str:
    """ "ok", or the first turn that differs from `EXPECTED`, in words."""
    for index, (got, want) in enumerate(zip(captured, EXPECTED, strict=True), start=1):
        if got != want:
            return f"turn {index}: got {got!r}, expected {want!r}"
    return "ok"


async def _stress(wiring: str, script: Any, args: argparse.Namespace, vad: Any) -> dict[str, Any]:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    counts: collections.Counter[str] = collections.Counter()
    errors: collections.Counter[str] = collections.Counter()
    differing: collections.Counter[str] = collections.Counter()
    started = time.monotonic()
    next_run = iter(range(args.runs))

    async def worker() -> None:
        for run_index in next_run:
            if time.monotonic() - started > args.budget_s:
                return
            adapter = LiveKitAdapter(_factory(wiring, vad), speed=args.speed)
            try:
                captured = await _conversation(adapter, script, run_index)
            except Exception as exc:  # an ERROR of the run: counted, never re-raised
                counts["error"] += 1
                # Speech ids and timings differ per run: the same error is counted as one.
                said = re.sub(r"speech_[0-9a-f]+", "speech_…", f"{type(exc).__name__}: {exc}")
                errors[re.sub(r"\b\d+\.\d+ s\b", "… s", said)] += 1
                continue
            outcome = _outcome(captured)
            if outcome == "ok":
                counts["ok"] += 1
            else:
                counts["differs"] += 1
                differing[outcome] += 1

    await asyncio.gather(*(worker() for _ in range(max(1, args.concurrency))))
    return {
        "counts": counts,
        "errors": errors,
        "differing": differing,
        "wall": time.monotonic() - started,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="conversations per wiring")
    parser.add_argument("--speed", type=float, default=0.0, help="0: max speed, 1: real time")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--budget-s", type=float, default=1800.0, help="per wiring")
    parser.add_argument(
        "--wiring",
        action="append",
        choices=WIRINGS,
        help="repeatable; default: server_and_session_vad and fixed_server_auto_tool_reply",
    )
    args = parser.parse_args(argv)
    wirings = args.wiring or list(WIRINGS[:2])
    warnings.simplefilter("ignore", UserWarning)  # the session-VAD wiring is asked for here
    # LiveKit says so when the session asks for VAD turns the model keeps on its server.
    logging.getLogger("livekit.agents").setLevel(logging.ERROR)

    from livekit.plugins import silero

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = Path(tempfile.mkdtemp(prefix="bench-realtime-stress-"))
    try:
        shutil.copytree(EXAMPLE, folder / "example", ignore=shutil.ignore_patterns("audio"))
        sys.path.insert(0, str(folder / "example"))
        script = load_transcript_file(folder / "example" / "evals" / "front_desk.yaml")
        ensure_fixtures([script], jobs=1).raise_for_failures()
        vad = silero.VAD.load()
        print(
            f"{args.runs} runs per wiring at speed {args.speed:g}, concurrency "
            f"{args.concurrency}, budget {args.budget_s:.0f} s per wiring; {_load()}",
            flush=True,
        )
        for wiring in wirings:
            result = asyncio.run(_stress(wiring, script, args, vad))
            counts = result["counts"]
            done = sum(counts.values())
            print(
                f"{wiring}: {done} runs in {result['wall']:.0f} s: {counts['ok']} ok, "
                f"{counts['differs']} another capture, {counts['error']} ERROR; {_load()}",
                flush=True,
            )
            for message, count in result["errors"].most_common():
                print(f"  ERROR x{count}: {message}")
            for message, count in result["differing"].most_common():
                print(f"  differs x{count}: {message}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
