"""A barge-in replayed from a cassette: recorded once through the real OpenAI realtime client
(against the scripted provider, the paid API's stand-in), replayed offline at max speed and in
real time with the same verdicts and records.

What the client sends at an interruption moves between faithful runs: the reply stops where it
was when the caller's speech was heard, so the truncation's ``audio_end_ms`` (what played)
differs by a few tens of ms, and the words heard of the reply can move by one. The replay keys
the interruption on the audio position of the caller's speech, matches the truncation within a
window and answers it with the live position; a genuinely changed agent is still an ERROR
naming the first divergence.

The cases of the speed test are recorded and replayed in real time together: the first test to
need its recording records every collected case (concurrently, against one scripted provider),
then replays each recording in real time (concurrently, offline), `AT_ONCE` at a time in one
event loop (``real_time_batch``). Each test replays its own recording at max speed itself and
checks the recording and both replays.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.plugins.openai", reason="needs livekit-plugins-openai (dev extra)")

from replay_agents import (
    BARGE_IN_FIXTURES_YAML,
    BARGE_IN_PHRASES,
    STORY,
    FrontDeskWithCancel,
    audio_session_factory,
    provider,
    run,
)

from pytest_agent_eval._loader import load_transcript_file, load_transcript_text
from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay
from pytest_agent_eval.models import TranscriptResult
from real_time_batch import Case, batch_result, gather_bounded

AT_ONCE = 4
"""Recordings, then real-time replays, at once in the batch."""


@pytest.fixture(scope="module")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("barge")
    (folder / "fixtures.yaml").write_text(BARGE_IN_FIXTURES_YAML)
    ensure_fixtures([load_transcript_file(folder / "fixtures.yaml")], jobs=1).raise_for_failures()
    return folder


def _script(folder: Path) -> Any:
    return load_transcript_text(
        f"""
id: barge_replay
turns:
  - user: "{BARGE_IN_PHRASES[0]}"
    audio: story.wav
  - user: "{BARGE_IN_PHRASES[1]}"
    audio: stop_book.wav
    interrupt: {{after_ms: 1500, stop_within_ms: 2000}}
    expect:
      tool_calls_include: [book_table]
      reply_contains_any: [booked]
""",
        path=folder / "barge_replay.yaml",
    )


def _run(adapter: Any, folder: Path) -> TranscriptResult:
    return run(run_transcript(_script(folder), adapter, settings=RunSettings(concurrency=1)))


def _records(result: TranscriptResult) -> list[Any]:
    """The verdict and what each turn recorded, as a test compares them across runs."""
    (run_result,) = result.runs
    out: list[Any] = [run_result.passed]
    for turn in run_result.turns:
        barge = turn.barge_in
        out.append(
            {
                "error": turn.error,
                "passed": turn.passed,
                "reply": turn.reply,
                "heard": turn.heard,
                "tools": [(c.name, c.args, c.output) for c in turn.tool_calls],
                "barge_in": None
                if barge is None
                else (barge.precondition, barge.stopped, barge.interrupted_text),
            }
        )
    return out


@contextlib.asynccontextmanager
async def _provider(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """The scripted provider, where the OpenAI client looks (each connection its own)."""
    scripted = provider()
    scripted.heard = list(BARGE_IN_PHRASES)
    # A reply long enough to speak over: 250 ms per word, loud enough to count as voiced.
    scripted.ms_per_word, scripted.amplitude = 250, 3000
    monkeypatch.setenv("OPENAI_BASE_URL", await scripted.start())
    monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
    try:
        yield
    finally:
        await scripted.aclose()


async def _recording(folder: Path, cassettes: Path, *, server_vad: bool) -> TranscriptResult:
    adapter = OpenAIRealtimeReplay(
        LiveKitAdapter(audio_session_factory(server_vad=server_vad), timeout_s=60),
        cassette_dir=cassettes,
        record=True,
    )
    return await run_transcript(_script(folder), adapter, settings=RunSettings(concurrency=1))


def _record(
    folder: Path, cassettes: Path, monkeypatch: pytest.MonkeyPatch, *, server_vad: bool = True
) -> TranscriptResult:
    async def go() -> TranscriptResult:
        async with _provider(monkeypatch):
            return await _recording(folder, cassettes, server_vad=server_vad)

    return run(go())


def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there


def _replayer(cassettes: Path, *, server_vad: bool, speed: float) -> OpenAIRealtimeReplay:
    return OpenAIRealtimeReplay(
        LiveKitAdapter(audio_session_factory(server_vad=server_vad), speed=speed, timeout_s=60),
        cassette_dir=cassettes,
    )


async def _replayed(folder: Path, cassettes: Path, *, server_vad: bool) -> TranscriptResult:
    adapter = _replayer(cassettes, server_vad=server_vad, speed=1.0)
    return await run_transcript(_script(folder), adapter, settings=RunSettings(concurrency=1))


Recorded = tuple[TranscriptResult, Path, TranscriptResult]
"""A case's recording, the folder of its cassette, and its replay in real time."""


async def _record_and_replay_in_real_time(
    cases: list[Case], folder: Path, tmp_path_factory: pytest.TempPathFactory
) -> list[Recorded | BaseException]:
    """Every case recorded as `_record` records it (all against one scripted provider), then
    each recording replayed offline in real time; `AT_ONCE` at a time. The environment is set
    for each phase, so no recording overlaps a replay."""
    folders = [tmp_path_factory.mktemp("cassettes") for _ in cases]
    with pytest.MonkeyPatch.context() as monkeypatch:
        async with _provider(monkeypatch):
            recordings = await gather_bounded(
                [
                    partial(_recording, folder, cassettes, server_vad=case["server_vad"])
                    for case, cassettes in zip(cases, folders, strict=True)
                ],
                AT_ONCE,
            )
        _offline(monkeypatch)
        recorded = [
            i for i, outcome in enumerate(recordings) if not isinstance(outcome, BaseException)
        ]
        replays = await gather_bounded(
            [
                partial(_replayed, folder, folders[i], server_vad=cases[i]["server_vad"])
                for i in recorded
            ],
            AT_ONCE,
        )
    replayed = dict(zip(recorded, replays, strict=True))
    outcomes: list[Recorded | BaseException] = []
    for i, recording in enumerate(recordings):
        if isinstance(recording, BaseException):
            outcomes.append(recording)
        elif isinstance(replay := replayed[i], BaseException):
            outcomes.append(replay)
        else:
            outcomes.append((recording, folders[i], replay))
    return outcomes


def _words_heard(records: list[Any]) -> list[Any]:
    """The records with the interrupted reply's words aside (checked on their own)."""
    out = [records[0]]
    for turn in records[1:]:
        turn = dict(turn)
        if turn["barge_in"] is not None:
            precondition, stopped, _text = turn["barge_in"]
            turn["barge_in"] = (precondition, stopped)
        out.append(turn)
    out[1] = {**out[1], "reply": None}
    return out


# The session-VAD case takes the turns off the model on purpose (the adapter warns about it).
@pytest.mark.filterwarnings("ignore:the agent's realtime model:UserWarning")
@pytest.mark.parametrize("server_vad", [True, False], ids=["server-vad", "session-vad"])
def test_a_recorded_barge_in_replays_with_the_same_verdicts_and_records_at_both_speeds(
    spoken: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    server_vad: bool,
) -> None:
    recording, cassettes, in_real_time = batch_result(
        request, lambda cases: _record_and_replay_in_real_time(cases, spoken, tmp_path_factory)
    )
    recorded = _records(recording)
    story, interruption = recorded[1], recorded[2]
    # A real barge-in was recorded: the story stopped part-way, heard as far as it played;
    # the interruption was heard whole and answered with its tool.
    assert recorded[0] is True, recorded
    assert story["error"] is None and interruption["error"] is None, recorded
    assert interruption["barge_in"][:2] == (None, True), interruption
    assert STORY.startswith(story["reply"]) and 3 <= len(story["reply"].split()) < 20, story
    assert interruption["barge_in"][2] == story["reply"]
    assert interruption["heard"] == BARGE_IN_PHRASES[1]
    assert interruption["tools"] == [
        ("book_table", {"party_size": 2, "time": "7pm"}, "booked for 2 at 7pm")
    ]
    cassette = json.loads((cassettes / "barge_replay.openai-realtime.json").read_text())
    sent = [e["event"]["type"] for e in cassette["runs"][0]["connections"][0]["events"]]
    assert "conversation.item.truncate" in sent  # the client cut the reply it was playing

    _offline(monkeypatch)
    for speed in (0.0, 1.0):
        if speed == 0.0:
            replayed = _records(
                _run(_replayer(cassettes, server_vad=server_vad, speed=speed), spoken)
            )
        else:
            replayed = _records(in_real_time)
        assert _words_heard(replayed) == _words_heard(recorded), f"speed {speed}"
        # What was heard of the story: as far as it played in this run (it may move by a
        # word from the recording's, as it does between two live runs), the same in the
        # reply and in the barge-in record.
        said = replayed[1]["reply"]
        assert STORY.startswith(said), (speed, said)
        assert abs(len(said.split()) - len(story["reply"].split())) <= 1, (speed, said, story)
        assert replayed[2]["barge_in"][2] == said


def test_a_changed_agent_under_a_recorded_barge_in_is_an_error_naming_the_divergence(
    spoken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(spoken, tmp_path, monkeypatch)
    _offline(monkeypatch)
    adapter = OpenAIRealtimeReplay(
        LiveKitAdapter(audio_session_factory(server_vad=True, agent=FrontDeskWithCancel)),
        cassette_dir=tmp_path,
    )
    result = _run(adapter, spoken)
    (run_result,) = result.runs
    assert not run_result.passed
    errors = [t.error for t in run_result.turns if t.error]
    assert errors, run_result.turns
    assert all(t.errored for t in run_result.turns if t.error), run_result.turns
    assert "tool(s) the recording never saw: cancel_booking" in errors[0], errors
    assert "AGENT_EVAL_REALTIME_RECORD=1" in errors[0], errors
