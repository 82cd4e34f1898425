"""A start that fails stays the start's own failure when the bot's thread then will not stop:
the hang is noted on it, not put in its place (a bot that crashes before turn 1 is CRASHED;
the thread that hangs while closing must not turn that into an ERROR)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from corpus_bots import voice_bot
from pipecat.frames.frames import LLMRunFrame
from pipecat_support import run, transcript

from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.pipecat import InProcessTransport, PipecatAdapter, Rule
from pytest_agent_eval.models import Turn


@pytest.fixture
def released() -> Iterator[threading.Event]:
    """What the bot's blocking wait waits for: set at the end, so no thread outlives the test."""
    event = threading.Event()
    yield event
    event.set()


def test_a_crash_at_the_start_stays_a_crash_when_the_thread_then_hangs(
    released: threading.Event,
) -> None:  # ~14 s: the 10 s the thread is given to stop
    async def stubborn() -> None:
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            released.wait(120.0)  # blocks the loop as it is stopped (a time.sleep would)
            raise

    kept: list[asyncio.Future[None]] = []

    def broken_greeting(ctx: Any) -> str:
        kept.append(asyncio.ensure_future(stubborn()))
        raise RuntimeError("the greeting broke")

    def bot(transport: InProcessTransport) -> Any:
        worker, context, llm, _ = voice_bot(transport)
        llm.rules = [Rule(r"Greet the caller", reply=broken_greeting)]

        @transport.event_handler("on_client_connected")  # type: ignore[untyped-decorator]
        async def on_client_connected(transport: Any, client: Any) -> None:
            context.add_message({"role": "user", "content": "Greet the caller."})
            await worker.queue_frames([LLMRunFrame()])

        return worker

    result = run(run_transcript(transcript(Turn(user="hi")), PipecatAdapter(bot)))
    (only,) = result.runs
    assert not only.errored, only.error
    assert result.verdict == "crashed"
    assert only.crash is not None and only.crash.message == "the greeting broke"
    assert only.error is not None
    assert "did not finish within 10 s of being stopped" in only.error  # noted, not in place
