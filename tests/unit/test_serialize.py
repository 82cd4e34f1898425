"""The one typed serializer: results and eval records to plain JSON and back."""

from __future__ import annotations

import datetime as dt
import json
import math
from pathlib import Path
from typing import Any, Literal

import pytest

from pytest_agent_eval._records import EvalRecord
from pytest_agent_eval._serialize import from_json, to_json
from pytest_agent_eval.models import (
    AgentSpeech,
    EvalResult,
    RunResult,
    ToolCall,
    TranscriptResult,
    TurnResult,
    Usage,
)


def _is_plain_json(value: Any) -> bool:
    if value is None or type(value) in (bool, int, float, str):
        return not (type(value) is float and not math.isfinite(value))
    if type(value) is list:
        return all(_is_plain_json(v) for v in value)
    if type(value) is dict:
        return all(type(k) is str and _is_plain_json(v) for k, v in value.items())
    return False


def _full_result() -> TranscriptResult:
    call = ToolCall(
        "book",
        {"when": dt.date(2024, 5, 1), "party": (2, 3), "note": {"a", "b"}},
        output={"ok": True, "ref": object.__name__},
        is_error=False,
        call_id="c1",
    )
    turn = TurnResult(
        0,
        "Book a table",
        "Booked!",
        [call],
        [EvalResult(True, "fine", "reply", usage=Usage(3, 2, 1))],
        None,
        0.5,
        "audio/t1.wav",
        heard="book a table",
        latency_s=0.25,
        first_audio_latency_s=math.nan,
        usage=Usage(10, 5, 1),
        audio_out=Path("out/t1.wav"),
        metadata={"livekit": {"events": [{"type": "message"}]}, "when": dt.datetime(2024, 1, 2)},
        agent_speech=[
            AgentSpeech(
                text="Welcome!", cause="greeting", agent="host", turn_index=0, started_at_s=0.1
            )
        ],
    )
    failed = TurnResult(index=1, user="And?", error="AdapterError: gone")
    return TranscriptResult(
        passed=False,
        score=0.5,
        threshold=0.8,
        runs=[RunResult(0, [turn, failed], error="closing failed", duration_s=1.0)],
        transcript_id="booking",
        planned_runs=3,
        tags=["gate:booking"],
        duration_s=2.0,
    )


def test_a_full_result_becomes_plain_json_and_comes_back_equal() -> None:
    result = _full_result()
    data = result.to_dict()
    assert _is_plain_json(data)
    json.dumps(data, allow_nan=False)  # strict JSON: no NaN leaks through
    turn = data["runs"][0]["turns"][0]
    assert turn["audio_out"] == str(Path("out/t1.wav"))
    assert turn["first_audio_latency_s"] == "NaN"
    assert turn["tool_calls"][0]["args"] == {
        "when": "2024-05-01",
        "party": [2, 3],
        "note": ["a", "b"],
    }
    assert turn["agent_speech"] == [
        {
            "text": "Welcome!",
            "cause": "greeting",
            "agent": "host",
            "turn_index": 0,
            "started_at_s": 0.1,
            "latency_s": None,
        }
    ]
    assert list(turn)[:4] == ["index", "user", "reply", "tool_calls"]  # constructor order

    restored = TranscriptResult.from_dict(json.loads(json.dumps(data)))
    assert restored.to_dict() == data
    back = restored.runs[0].turns[0]
    assert back.audio_out == Path("out/t1.wav") and math.isnan(back.first_audio_latency_s or 0)
    assert back.agent_speech == result.runs[0].turns[0].agent_speech
    assert isinstance(back.tool_calls[0], ToolCall) and back.tool_calls[0].call_id == "c1"
    assert back.usage == Usage(10, 5, 1) and back.judge_usage == Usage(3, 2, 1)
    assert restored.runs[0].turns[1].error == "AdapterError: gone"


def test_eval_records_round_trip_with_their_result() -> None:
    result = _full_result()
    turn = result.runs[0].turns[0]
    turn.first_audio_latency_s = 0.6  # NaN never equals itself
    # JSON-native values only: a date in tool arguments comes back as its ISO text, by design.
    turn.tool_calls = [ToolCall("book", {"party": 2}, output="ok")]
    turn.metadata = {"engine": "x"}
    record = EvalRecord(
        nodeid="t.yaml::booking",
        transcript_id="booking",
        markers=("agent_eval", "slow"),
        tags=("gate:booking",),
        result=result,
        test_outcome="failed",
        index=1,
    )
    data = json.loads(json.dumps(record.to_dict(), allow_nan=False))
    assert _is_plain_json(data)
    again = EvalRecord.from_dict(data)
    assert again == record
    assert again.to_dict() == data


def test_missing_fields_take_defaults_and_unknown_keys_are_ignored() -> None:
    record = EvalRecord.from_dict({"nodeid": "a.py::t", "transcript_id": "t", "later": 1})
    assert record.kind == "yaml" and record.result is None and record.tags == ()
    result = TranscriptResult.from_dict(
        {"passed": True, "score": 1, "threshold": 1, "runs": [], "interval": [0.1, 1.0]}
    )
    assert result.score == 1.0 and isinstance(result.score, float)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"transcript_id": "t"}, "nodeid: missing (required by EvalRecord)"),
        ({"nodeid": "n", "transcript_id": 3}, "transcript_id: expected a string, got int 3"),
        (
            {"nodeid": "n", "transcript_id": "t", "test_outcome": "meh"},
            "test_outcome: expected one of ['passed', 'failed', 'error', 'skipped']",
        ),
        (
            {
                "nodeid": "n",
                "transcript_id": "t",
                "result": {
                    "passed": True,
                    "score": 1.0,
                    "threshold": 1.0,
                    "runs": [{"index": 0, "turns": [{"index": 0, "user": "u", "latency_s": "x"}]}],
                },
            },
            "result.runs[0].turns[0].latency_s: expected float or NoneType, got str 'x'",
        ),
    ],
)
def test_a_record_that_does_not_fit_its_types_is_refused_naming_the_path(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as info:
        EvalRecord.from_dict(data)
    assert message in str(info.value)


def test_type_hints_drive_decoding_of_unions_tuples_and_literals() -> None:
    assert from_json(int | str, "a") == "a"
    assert from_json(int | str, 3) == 3
    assert from_json(tuple[int, ...], [1, 2]) == (1, 2)
    assert from_json(tuple[int, str], [1, "x"]) == (1, "x")
    assert from_json(frozenset[str], ["b", "a"]) == frozenset({"a", "b"})
    assert from_json(Literal["a", "b"], "b") == "b"
    assert from_json(dict[str, Path], {"x": "p"}) == {"x": Path("p")}
    assert from_json(float, "Infinity") == math.inf
    with pytest.raises(ValueError, match="expected an integer, got bool True"):
        from_json(int, True)
    with pytest.raises(ValueError, match=r"\[1\]: expected an integer"):
        from_json(list[int], [1, "2"])
    assert to_json(frozenset({"b", "a"})) == ["a", "b"]
    assert to_json(-math.inf) == "-Infinity"
    assert to_json(object()).startswith("<object object")


def test_error_paths_run_through_mappings_tuples_and_a_given_prefix() -> None:
    with pytest.raises(ValueError, match=r"^a\.b: expected an integer, got str 'x'$"):
        from_json(dict[str, dict[str, int]], {"a": {"b": "x"}})
    with pytest.raises(ValueError, match=r"^\[1\]: expected a string, got int 2$"):
        from_json(tuple[int, str], [1, 2])
    with pytest.raises(ValueError, match=r"^expect\.max_latency_ms: expected float or NoneType"):
        from_json(float | None, "fast", path="expect.max_latency_ms")
