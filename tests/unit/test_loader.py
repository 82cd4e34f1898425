"""Loading YAML transcripts: what users see when they get it wrong."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from pytest_agent_eval import TranscriptError
from pytest_agent_eval._loader import (
    find_transcript_files,
    load_transcript_file,
    load_transcripts,
    transcript_schema,
)

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def error_of(path: Path) -> str:
    with pytest.raises(TranscriptError) as info:
        load_transcript_file(path)
    return str(info.value)


def test_full_seed_transcript_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "evals/booking.yaml",
        """\
# yaml-language-server: $schema=https://datarootsio.github.io/pytest-agent-eval/schema/transcript.json
id: booking_confirmation
threshold: 0.8
runs: 3
tags: [gate:booking, smoke]
turns:
  - user: "Book me a table for 2 tomorrow at 10am."
    audio: audio/booking_t1.wav
    expect:
      reply_contains_any: ["confirmed", "booked"]
      reply_contains_all: ["tomorrow", "10"]
      reply_matches_any: ["BK-\\\\d+"]
      tool_calls_include: [create_booking]
      tool_calls_exclude: [cancel_booking]
      tool_calls_ordered: true
      tool_calls_args:
        - tool: create_booking
          args: {time: "10am"}
          mode: subset
        - tool: create_booking
          judge:
            rubric: "The time must be within business hours."
      judge:
        rubric: The reply confirms the booking.
        model: "openai:gpt-4o"
  - user: "Can you email me the confirmation?"
""",
    )
    t = load_transcript_file(path)
    assert (t.id, t.threshold, t.runs, t.tags) == (
        "booking_confirmation",
        0.8,
        3,
        ["gate:booking", "smoke"],
    )
    first = t.turns[0]
    assert first.audio == (tmp_path / "evals" / "audio" / "booking_t1.wav").resolve()
    assert first.expect.reply_matches_any == ["BK-\\d+"]
    assert first.expect.tool_calls_args[0].args == {"time": "10am"}
    assert first.expect.tool_calls_args[1].judge is not None
    assert first.expect.judge is not None and first.expect.judge.model == "openai:gpt-4o"
    assert t.turns[1].audio is None
    assert t.path == path.resolve()
    assert t.line == 2
    assert first.line == 7


def test_defaults_come_from_config_when_the_file_is_silent(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", "id: a\nturns:\n  - user: hi\n")
    t = load_transcript_file(path, default_threshold=0.5, default_runs=7)
    assert (t.threshold, t.runs) == (0.5, 7)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "id: a\nturns:\n  - user: hi\n    expect:\n      reply_contain_any: [x]\n",
            [
                ":5, transcript 'a', turn 1, turns[0].expect.reply_contain_any: unknown field "
                "'reply_contain_any' (Did you mean 'reply_contains_any'?)"
            ],
        ),
        ("id: a\nthreshhold: 0.5\nturns:\n  - user: hi\n", ["(Did you mean 'threshold'?)", ":2"]),
        (
            "id: a\nturns:\n  - user: [x]\n",
            [":3, transcript 'a', turn 1, turns[0].user: expected a string, got a list"],
        ),
        ("id: a\nturns: []\n", [":2", "'turns' is empty"]),
        (
            "id: a\nthreshold: 1.5\nturns:\n  - user: hi\n",
            ["threshold must be between 0.0 and 1.0, got 1.5"],
        ),
        ("id: a\nruns: 0\nturns:\n  - user: hi\n", ["runs must be at least 1, got 0"]),
        (
            "id: a\nruns: many\nturns:\n  - user: hi\n",
            ["runs: expected an integer, got a string 'many'"],
        ),
        (
            "id: a\nturns:\n  - user: hi\n    expect:\n      reply_matches_any: ['BK-(\\d+']\n",
            [":5", "expect.reply_matches_any[0]: invalid regex 'BK-(\\d+'", "missing )"],
        ),
        ('id: a\nturns:\n  - user: "hi\n', ["invalid YAML at line 4, column 1"]),
        ("id: a\nid: b\nturns:\n  - user: hi\n", [":2: duplicate key 'id'"]),
        ("id: a\n", ["missing required field 'turns'"]),
        ("turns:\n  - user: hi\n", ["missing required field 'id'"]),
        ("id: a\nturns:\n  - expect: {}\n", ["turn 1", "missing required field 'user'"]),
        (
            "id: a\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n        - tool: t\n",
            ["needs 'args' (deterministic check) or 'judge' (LLM-judged rubric); got neither"],
        ),
        (
            "id: a\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n        - {tool: t, args: {}, mode: exakt}\n",
            ["'exakt' is not one of subset, exact (Did you mean 'exact'?)"],
        ),
        ("id: a\nturns:\n  - user: hi\n    expect: [x]\n", ["expected a mapping, got a list"]),
        ("foo: 1\nbar: 2\n", ["not a transcript", "start their name with '_'"]),
        ("", ["not a transcript (it is empty"]),
        ("- a\n- b\n", ["not a transcript (it is a list"]),
    ],
)
def test_bad_input_gives_one_clear_error(tmp_path: Path, text: str, expected: list[str]) -> None:
    path = write(tmp_path, "bad.yaml", text)
    message = error_of(path)
    assert message.startswith(str(path.resolve()))
    for fragment in expected:
        assert fragment in message, message


def test_duplicate_ids_name_both_files(tmp_path: Path) -> None:
    a = write(tmp_path, "a.yaml", "id: same\nturns:\n  - user: hi\n")
    b = write(tmp_path, "sub/b.yaml", "id: same\nturns:\n  - user: hi\n")
    with pytest.raises(TranscriptError) as info:
        load_transcripts([a, b])
    assert str(b.resolve()) in str(info.value)
    assert f"already used by {a}" in str(info.value)


def test_find_transcript_files_recurses_and_skips_underscore(tmp_path: Path) -> None:
    write(tmp_path, "evals/a.yaml", "")
    write(tmp_path, "evals/deep/b.yml", "")
    write(tmp_path, "evals/_shared.yaml", "")
    write(tmp_path, "evals/notes.txt", "")
    found = find_transcript_files([tmp_path / "evals", tmp_path / "missing"])
    assert [p.name for p in found] == ["a.yaml", "b.yml"]


def test_absolute_audio_path_is_kept(tmp_path: Path) -> None:
    wav = tmp_path / "x.wav"
    path = write(tmp_path, "a.yaml", f"id: a\nturns:\n  - user: hi\n    audio: {wav}\n")
    assert load_transcript_file(path).turns[0].audio == wav


def test_voice_blocks_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.yaml",
        "id: a\nvoice: {backend: hibari, voice: heart}\nturns:\n"
        "  - user: hi\n    voice: {speed: 1.2, sample_rate: 24000}\n",
    )
    t = load_transcript_file(path)
    assert t.voice is not None and t.voice.voice == "heart"
    assert t.turns[0].voice is not None and t.turns[0].voice.speed == 1.2


def test_schema_is_valid_and_published_copy_is_identical() -> None:
    schema = transcript_schema()
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    published = json.loads((ROOT / "docs" / "schema" / "transcript.json").read_text())
    assert published == schema


def test_every_example_transcript_validates() -> None:
    # examples/ci holds a GitHub Actions workflow, not a transcript.
    files = [
        f
        for f in find_transcript_files([ROOT / "examples"])
        if f.relative_to(ROOT / "examples").parts[0] != "ci"
    ]
    assert len(files) >= 8
    from pytest_agent_eval._turn_gate._spec import is_turn_taking_file, load_turn_taking_file
    from pytest_agent_eval.simulation import load_simulation_file
    from pytest_agent_eval.simulation._model import file_kind

    for path in files:
        if file_kind(path) is not None:  # examples/simulations: simulations and scenarios
            load_simulation_file(path)
        elif is_turn_taking_file(path):  # examples/turn-taking-livekit: a turn-taking gate
            load_turn_taking_file(path)
        else:
            load_transcript_file(path)


def test_dates_and_clock_times_stay_text(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "a.yaml",
        "id: a\nturns:\n  - user: hi\n    expect:\n      tool_calls_args:\n"
        "        - tool: book\n          args: {date: 2024-05-01, time: 10:30, party: 2, ratio: 1.5}\n",
    )
    args = load_transcript_file(path).turns[0].expect.tool_calls_args[0].args
    assert args == {"date": "2024-05-01", "time": "10:30", "party": 2, "ratio": 1.5}
