"""The caller's side of the room tests, run inside the lab's namespace by `RoomLab.call`.

``python room_calls.py FUNCTION JSON_KWARGS RESULT_PATH`` runs ``FUNCTION(**kwargs)`` and pickles
``{"value": ..., "error": ...}`` to RESULT_PATH. The livekit rtc SDK runs its WebRTC stack in
native threads of the process that first uses it, so the caller needs a process of its own
inside the namespace: the test process stays outside.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import pickle
import sys
import time
from pathlib import Path
from typing import Any

from call_result import run_from_argv
from livekit import api, rtc

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import EVAL_EVENTS_TOPIC, LiveKitRoomAdapter
from pytest_agent_eval.models import Expect, Transcript, Turn


def _transcript(turns: list[dict[str, Any]], transcript_id: str) -> Transcript:
    """Turns given as ``{"user", "audio"?, "expect"?}`` (expect: `Expect` fields)."""
    return Transcript(
        id=transcript_id,
        turns=[
            Turn(
                user=t["user"],
                audio=Path(t["audio"]) if t.get("audio") else None,
                expect=Expect(**t.get("expect", {})),
            )
            for t in turns
        ],
    )


async def converse(
    *,
    agent_name: str,
    turns: list[dict[str, Any]],
    transcript_id: str = "lab",
    bystander: bool = False,
    **options: Any,
) -> dict[str, Any]:
    """One run of ``turns`` against ``agent_name``: the replies, and what the server kept.

    With ``bystander``, a second participant (an ordinary app, without the listener attribute)
    sits in the room and counts the helper's events it receives.
    """
    adapter = LiveKitRoomAdapter(agent_name, **options)
    script = _transcript(turns, transcript_id)
    await adapter.prepare(script)
    started = time.perf_counter()
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=0)
    )
    start_s = time.perf_counter() - started
    replies = []
    other: rtc.Room | None = None
    seen_by_bystander: list[str] = []
    try:
        if bystander:
            other = rtc.Room()
            other.register_text_stream_handler(
                EVAL_EVENTS_TOPIC, lambda reader, identity: seen_by_bystander.append(identity)
            )
            token = (
                api.AccessToken()
                .with_identity("bystander")
                .with_grants(api.VideoGrants(room_join=True, room=conversation.room_name))
                .to_jwt()
            )
            await other.connect(adapter.url, token)
        for index, turn in enumerate(script.turns):
            audio = Path(turn.audio) if turn.audio else None
            replies.append(
                await conversation.respond(TurnInput(turn=turn, index=index, audio=audio))
            )
    finally:
        if other is not None:
            await other.disconnect()
        await conversation.aclose()
    return {
        "replies": replies,
        "room": conversation.room_name,
        "greeting": conversation.greeting_text,
        "greeting_record": conversation.greeting(),
        "helper": conversation.publishes_eval_events,
        "start_s": start_s,
        "rooms_after": await list_rooms(),
        "bystander_events": len(seen_by_bystander),
    }


async def _logged(work: Any) -> dict[str, Any]:
    """Await ``work``, keeping what this process logged at WARNING and above and every
    exception asyncio reports as never retrieved; its error, if any, as text."""
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(f"{record.levelname} {record.name}: {record.getMessage()}")

    handler = Collect(logging.WARNING)
    logging.getLogger().addHandler(handler)
    loop = asyncio.get_running_loop()
    unretrieved: list[str] = []
    loop.set_exception_handler(lambda _loop, context: unretrieved.append(context["message"]))
    error: str | None = None
    try:
        await work
    except Exception as exc:
        error = str(exc)
    finally:
        # Tasks nobody retrieved report when they are collected.
        gc.collect()
        await asyncio.sleep(0)
        logging.getLogger().removeHandler(handler)
    return {"error": error, "logs": records, "unretrieved": unretrieved}


async def converse_logged(**kwargs: Any) -> dict[str, Any]:
    """`converse`, with what it logged (see `_logged`)."""
    return await _logged(converse(**kwargs))


async def room_deleted_under_the_caller(*, agent_name: str, **options: Any) -> dict[str, Any]:
    """Start a run, delete its room from outside (an agent or an operator ending the call),
    and wait for the caller to notice; with what it logged (see `_logged`)."""

    async def work() -> None:
        adapter = LiveKitRoomAdapter(agent_name, **options)
        script = Transcript(id="deleted", turns=[Turn(user="hello")])
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            async with api.LiveKitAPI() as lkapi:
                await lkapi.room.delete_room(api.DeleteRoomRequest(room=conversation.room_name))
            await conversation.observer.until(lambda: False)
        finally:
            await conversation.aclose(after_failure=True)

    return await _logged(work())


async def start_run(*, agent_name: str, **options: Any) -> dict[str, Any]:
    """Only the start of a run (room, caller, dispatch, agent ready), then close."""
    adapter = LiveKitRoomAdapter(agent_name, **options)
    script = Transcript(id="start", turns=[Turn(user="hello")])
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=0)
    )
    await conversation.aclose()
    return {"room": conversation.room_name, "rooms_after": await list_rooms()}


async def run_records(*, agent_name: str, path: str, **options: Any) -> Any:
    """The transcript at ``path`` run by the runner against ``agent_name``: its result."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval._runner import run_transcript

    adapter = LiveKitRoomAdapter(agent_name, **options)
    return await run_transcript(load_transcript_file(Path(path)), adapter)


async def run_pickled(
    *,
    agent_name: str,
    script: str,
    speed: float | None = None,
    save_audio_dir: str | None = None,
    **options: Any,
) -> Any:
    """The `Transcript` pickled at ``script`` run by the runner against ``agent_name``, with
    ``LiveKitRoomAdapter(agent_name, **options)`` (a transcript built in Python, as the voice
    contract builds its behaviours); its result."""
    from pytest_agent_eval._runner import RunSettings, run_transcript

    transcript = pickle.loads(Path(script).read_bytes())
    adapter = LiveKitRoomAdapter(agent_name, **options)
    settings = RunSettings(
        concurrency=1,
        speed=speed,
        save_audio_dir=Path(save_audio_dir) if save_audio_dir else None,
    )
    return await run_transcript(transcript, adapter, settings=settings)


async def run_simulation_records(*, agent_name: str, audio_dir: str, **options: Any) -> Any:
    """A simulated caller booking a table with the booking worker ``agent_name``: each of its
    utterances synthesized on the fly and streamed into the room; its result. The caller and
    the criteria judge are the simulation tests' scripted FunctionModels."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulation"))
    from sim_models import CallerCall, End, ScriptedCaller, ScriptedJudge

    from pytest_agent_eval._config import JudgeSettings
    from pytest_agent_eval._runner import RunSettings
    from pytest_agent_eval.simulation import (
        CallerSettings,
        Simulation,
        SimulationSettings,
        run_simulation,
    )

    book = "Hi, I am Alice and I would like a table for two at seven pm."
    name = "What name is the booking under?"

    def caller(call: CallerCall) -> str | End:
        if call.may_end and any("Alice" in line for line in call.agent_lines[1:]):
            return End("goal_reached", "Booked, and the name is right.")
        return book if call.turn == 1 else name

    def decide(criterion: str, conversation: str) -> tuple[str, str]:
        ok = "[agent called tool book_table]" in conversation
        return ("met" if ok else "not_met"), "Turn 1 calls book_table." if ok else "no booking"

    simulation = Simulation(
        transcript=Transcript(id="room-booking", turns=[], runs=1),
        persona="Alice, booking a table for two at seven.",
        criteria=["The agent books the table."],
        max_turns=4,
        every_turn=Expect(heard_wer_max=0.1),
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(decide).model)),
        caller=CallerSettings(model=ScriptedCaller(caller).model),
        audio_dir=Path(audio_dir),
    )
    adapter = LiveKitRoomAdapter(agent_name, **options)
    return await run_simulation(simulation, adapter, settings=settings)


async def list_rooms() -> list[str]:
    """Names of the rooms the server still has."""
    async with api.LiveKitAPI() as lkapi:
        listed = await lkapi.room.list_rooms(api.ListRoomsRequest())
    return [room.name for room in listed.rooms]


def main() -> None:
    run_from_argv(globals())


if __name__ == "__main__":
    main()
