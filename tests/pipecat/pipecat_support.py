"""Shared parts of the Pipecat tests: the phrases callers say, their fixtures, and the runner's
protocol by hand."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.models import AgentReply, Greeting, Transcript, Turn

T = TypeVar("T")

PHRASES = {
    "weather": "What is the weather in Paris?",
    "forecast": "And the forecast for tomorrow?",
    "hello": "Hello there!",
    "dessert": "Do you have dessert?",
    "book": "I would like to book a table.",
    "two": "Two people, please.",
    "bill_pause_charge": "I have a question about my bill. [pause 2s] Why was I charged twice?",
    "story": "Tell me a story.",
    "stop": "Stop, that is enough.",
    "order": "Where is my order?",
}


def fixtures_yaml() -> str:
    lines = ["id: pipecat_phrases", "turns:"]
    for key, text in PHRASES.items():
        lines += [f'  - user: "{text}"', f"    audio: {key}.wav"]
    return "\n".join(lines) + "\n"


def synthesize_phrases(folder: Path) -> dict[str, Path]:
    """Make every phrase's WAV with the offline default voice; returns key -> path."""
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    yaml_path = folder / "phrases.yaml"
    yaml_path.write_text(fixtures_yaml())
    ensure_fixtures([load_transcript_file(yaml_path)], jobs=1).raise_for_failures()
    return {key: folder / f"{key}.wav" for key in PHRASES}


def run(coro: Coroutine[Any, Any, T]) -> T:
    """Drive a coroutine to completion in a fresh event loop."""
    return asyncio.run(coro)


def transcript(*turns: Turn, id: str = "t") -> Transcript:
    return Transcript(id=id, turns=list(turns))


def spoken(key: str, audio: dict[str, Path], **kwargs: Any) -> Turn:
    """The turn where the caller says phrase ``key`` (its fixture)."""
    return Turn(user=PHRASES[key], audio=audio[key], **kwargs)


def turn_input(script: Transcript, index: int, run_index: int = 0) -> TurnInput:
    """The `TurnInput` the runner builds for turn ``index`` (with the turn that interrupts
    its reply, if any)."""
    return TurnInput.of(
        script,
        index,
        run_index,
        interrupted_by=TurnInput.interrupting(script, index, run_index),
    )


async def converse(
    adapter: Any, script: Transcript, run_index: int = 0
) -> tuple[Greeting, list[AgentReply]]:
    """The runner's protocol by hand: prepare, start, greeting, every turn, always close."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    try:
        greeting = conversation.greeting()
        replies = [
            await conversation.respond(turn_input(script, i, run_index))
            for i in range(len(script.turns))
        ]
        return greeting, replies
    finally:
        await conversation.aclose()
