"""One record of what the agent did in a turn, shared by AgentReply, TurnContext and TurnResult."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import pytest

from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.models import (
    AgentReply,
    AgentSpeech,
    AgentTurn,
    EvalResult,
    Expect,
    Transcript,
    Turn,
    TurnContext,
    TurnResult,
    Usage,
)

SHARED = {f.name for f in dataclasses.fields(AgentTurn)}


def test_the_three_records_share_every_agent_field_and_keep_the_seed_constructors() -> None:
    for cls in (AgentReply, TurnContext, TurnResult):
        names = {f.name for f in dataclasses.fields(cls)}
        assert SHARED | {"reply", "tool_calls"} <= names, cls
    assert {"heard", "latency_s", "first_audio_latency_s", "usage", "audio_out"} <= SHARED
    assert {"metadata", "agent_speech"} <= SHARED

    reply = AgentReply("Booked", ["book"])
    assert reply.reply == "Booked" and reply.tool_calls == ["book"] and reply.agent_speech == []
    ctx = TurnContext("Book", "Booked", ["book"], [{"role": "user", "content": "Book"}])
    assert (ctx.user, ctx.reply, ctx.tool_calls, ctx.turn_index) == ("Book", "Booked", ["book"], 0)
    positional = TurnResult(0, "Book", "Booked", ["book"], [EvalResult(True)], None, 0.5, "a.wav")
    assert positional.passed and positional.duration_s == 0.5 and positional.audio == "a.wav"
    keywords = TurnResult(index=1, user="Hi", latency_s=0.2, audio_out="out.wav")
    assert keywords.reply == "" and keywords.audio_out == Path("out.wav")
    assert repr(keywords).startswith("TurnResult(index=1, user='Hi', reply=''")


def test_the_shared_part_alone_is_not_a_record() -> None:
    with pytest.raises(TypeError, match="build one of those"):
        AgentTurn(heard="x")


def test_agent_turn_values_copy_every_field_into_another_record() -> None:
    speech = AgentSpeech(text="Hello!", cause="greeting", turn_index=0)
    reply = AgentReply(
        "ok",
        ["book"],
        heard="hi",
        latency_s=0.3,
        usage=Usage(1, 2, 1),
        metadata={"k": 1},
        agent_speech=[speech],
    )
    result = TurnResult(index=0, user="u", **reply.agent_turn_values())
    for name in SHARED | {"reply", "tool_calls"}:
        assert getattr(result, name) == getattr(reply, name), name
    result.metadata["k"] = 2
    result.agent_speech.clear()
    assert reply.metadata == {"k": 1} and reply.agent_speech == [speech]  # copies, not shared


def test_the_runner_hands_every_agent_field_to_evaluators_and_results() -> None:
    speech = AgentSpeech(text="Welcome to Bistro!", cause="greeting", agent="host", turn_index=0)
    seen: list[TurnContext] = []

    async def agent(history: list[dict[str, object]]) -> AgentReply:
        return AgentReply(
            "Booked",
            ["book"],
            heard="book it",
            latency_s=0.4,
            first_audio_latency_s=0.5,
            usage=Usage(7, 3, 1),
            audio_out=Path("reply.wav"),
            metadata={"engine": "test"},
            agent_speech=[speech],
        )

    class Recorder:
        def evaluate(self, ctx: TurnContext) -> EvalResult:
            seen.append(ctx)
            return EvalResult(True)

    transcript = Transcript(id="t", turns=[Turn("Book", expect=Expect(evaluators=[Recorder()]))])
    result = asyncio.run(run_transcript(transcript, agent))
    (ctx,) = seen
    turn = result.runs[0].turns[0]
    for record in (ctx, turn):
        assert record.agent_speech == [speech]
        assert (record.heard, record.latency_s, record.first_audio_latency_s) == (
            "book it",
            0.4,
            0.5,
        )
        assert record.usage == Usage(7, 3, 1) and record.audio_out == Path("reply.wav")
        assert record.metadata == {"engine": "test"}
    assert TurnResult.from_dict(turn.to_dict()).agent_speech == [speech]
