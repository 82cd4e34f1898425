"""The seed dataclasses and the result records."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from pytest_agent_eval import AgentReply, ToolCall, Transcript, TranscriptError, Turn
from pytest_agent_eval.models import (
    EvalResult,
    Message,
    RunResult,
    ToolCallArgsConfig,
    TranscriptResult,
    TurnResult,
    Usage,
    VoiceSettings,
    wilson_interval,
)


def test_tool_call_is_a_string_that_carries_args() -> None:
    call = ToolCall("book_slot", {"date": "tomorrow", "time": "10am"})
    assert call == "book_slot"
    assert "book_slot" in [call]
    assert call.args == {"date": "tomorrow", "time": "10am"}
    assert call.name == "book_slot"
    assert isinstance(call.name, str) and type(call.name) is str


def test_tool_call_survives_pickle_and_dict_round_trip() -> None:
    call = ToolCall("t", {"a": 1}, output={"ok": True}, is_error=True, call_id="c1")
    for copy in (pickle.loads(pickle.dumps(call)), ToolCall.from_dict(call.to_dict())):
        assert copy == "t"
        assert copy.args == {"a": 1}
        assert copy.output == {"ok": True}
        assert copy.is_error is True
        assert copy.call_id == "c1"


@pytest.mark.parametrize(
    ("value", "name", "args"),
    [
        ("x", "x", None),
        (("x", {"a": 1}), "x", {"a": 1}),
        ({"name": "x", "arguments": {"a": 2}}, "x", {"a": 2}),
    ],
)
def test_tool_call_coerce(value: object, name: str, args: object) -> None:
    call = ToolCall.coerce(value)
    assert call == name
    assert call.args == args


def test_tool_call_coerce_rejects_garbage() -> None:
    with pytest.raises(TypeError, match="a tool call must be"):
        ToolCall.coerce(42)


def test_agent_reply_takes_both_positionally_and_normalises_names() -> None:
    reply = AgentReply("done", ["create_booking", ToolCall("notify", {"to": "me"})])
    assert [type(c) for c in reply.tool_calls] == [ToolCall, ToolCall]
    assert reply.tool_calls[0].args is None
    assert reply.tool_calls[1].args == {"to": "me"}


def test_message_offers_attributes_and_keys_and_keeps_audio_out_of_the_dict() -> None:
    msg = Message("user", "hello", audio=Path("/tmp/a.wav"))
    assert msg.content == msg["content"] == "hello"
    assert msg.role == msg["role"] == "user"
    assert msg.audio == msg["audio"] == Path("/tmp/a.wav")
    assert msg.get("audio") == Path("/tmp/a.wav")
    assert "audio" not in dict(msg)
    assert json.loads(json.dumps(msg)) == {"role": "user", "content": "hello"}
    assert pickle.loads(pickle.dumps(msg)).audio == Path("/tmp/a.wav")
    with pytest.raises(KeyError):
        msg["nope"]


def test_tool_call_args_config_needs_args_or_judge() -> None:
    with pytest.raises(ValueError, match="needs 'args' .* or 'judge'"):
        ToolCallArgsConfig(tool="book")
    with pytest.raises(ValueError, match="mode must be 'subset' or 'exact'"):
        ToolCallArgsConfig(tool="book", args={}, mode="fuzzy")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"threshold": 1.2}, "threshold must be between 0.0 and 1.0"),
        ({"runs": 0}, "runs must be at least 1"),
    ],
)
def test_transcript_rejects_bad_values(kwargs: dict[str, object], message: str) -> None:
    base: dict[str, object] = {"id": "t", "turns": [Turn("hi")]}
    base.update(kwargs)
    with pytest.raises(TranscriptError, match=message):
        Transcript(**base)  # type: ignore[arg-type]


def _result(passes: list[bool], threshold: float = 0.8) -> TranscriptResult:
    runs = [
        RunResult(index=i, turns=[TurnResult(0, "u", evaluations=[EvalResult(ok)])])
        for i, ok in enumerate(passes)
    ]
    score = sum(passes) / len(passes)
    return TranscriptResult(score >= threshold, score, threshold, runs, transcript_id="t")


def test_assert_threshold_uses_the_documented_wording() -> None:
    result = _result([True, True, False])
    assert result.passed_run_count == 2
    with pytest.raises(AssertionError) as info:
        result.assert_threshold()
    assert str(info.value) == ("LLM eval failed: score=0.67 < threshold=0.80 (2/3 runs passed)")
    _result([True, True, True]).assert_threshold()


def test_wilson_interval_known_values() -> None:
    low, high = wilson_interval(8, 10)
    assert round(low, 3) == 0.490
    assert round(high, 3) == 0.943
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == pytest.approx(1.0)
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_result_round_trips_through_json() -> None:
    result = _result([True, False])
    result.runs[0].turns[0].usage = Usage(10, 5, 1)
    result.runs[0].turns[0].latency_s = 0.25
    result.runs[0].turns[0].audio = "t1.wav"
    restored = TranscriptResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert restored.to_dict() == result.to_dict()
    assert restored.agent_usage == Usage(10, 5, 1)
    assert restored.p95_latency_s == 0.25


def test_run_without_turns_or_with_error_fails() -> None:
    assert not RunResult(index=0).passed
    ok_turn = TurnResult(0, "u", evaluations=[EvalResult(True)])
    assert RunResult(index=0, turns=[ok_turn]).passed
    assert not RunResult(index=0, turns=[ok_turn], error="boom").passed
    assert not RunResult(index=0, turns=[TurnResult(0, "u", error="x")]).passed


def test_voice_settings_layering() -> None:
    base = VoiceSettings(backend="hibari", voice="heart", sample_rate=16000)
    turn = VoiceSettings(voice="joe", speed=1.2)
    merged = turn.merged_over(base)
    assert merged == VoiceSettings(backend="hibari", voice="joe", speed=1.2, sample_rate=16000)
    assert turn.merged_over(None) == turn


def test_transcript_rejects_non_numbers() -> None:
    with pytest.raises(TranscriptError, match="threshold must be a number, got str 'x'"):
        Transcript(id="t", turns=[Turn("hi")], threshold="x")  # type: ignore[arg-type]
    with pytest.raises(TranscriptError, match="runs must be a number, got bool True"):
        Transcript(id="t", turns=[Turn("hi")], runs=True)
