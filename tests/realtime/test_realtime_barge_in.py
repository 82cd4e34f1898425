"""Barge-in on a realtime agent: the caller speaks over the model's reply.

The model's server VAD (or the session's) hears the interruption, the session stops the reply
(``interrupt``, ``truncate``), and the interrupted reply is recorded as what was heard of it,
not its whole text. The echo-cancellation warm-up, which would feed the model silence over the
caller's first seconds, is off. The same at max speed and in real time.

Each case's test runs its max-speed conversation itself. The real-time ones run together: the
first test to need one runs every collected case's, `REAL_TIME_AT_ONCE` at a time in one event
loop, and each test checks its own (``real_time_batch``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from livekit_support import run
from realtime_agents import PHRASES, STORY, Mode, Scenario

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.livekit import LiveKitAdapter, ScriptedRealtimeModel
from pytest_agent_eval.models import TranscriptResult
from real_time_batch import Case, real_time_result

REAL_TIME_AT_ONCE = 4
"""Real-time conversations at once in the batch."""


def _script(folder: Path, audio: dict[str, Path], *, first_audio: bool) -> str:
    first = f"    audio: {audio['story']}\n" if first_audio else ""
    return f"""
id: barge
turns:
  - user: "{PHRASES["story"]}"
{first}  - user: "{PHRASES["stop_rome"]}"
    audio: {audio["stop_rome"]}
    interrupt: {{after_ms: 1500, stop_within_ms: 2000}}
    expect:
      reply_contains_any: [Rome]
"""


async def _run(
    mode: Mode,
    audio: dict[str, Path],
    *,
    speed: float,
    first_audio: bool,
    models: list[ScriptedRealtimeModel],
) -> TranscriptResult:
    folder = audio["story"].parent
    script = load_transcript_text(
        _script(folder, audio, first_audio=first_audio), path=folder / "barge.yaml"
    )
    factory = Scenario("barge", mode, False, ()).factory(models)
    adapter = LiveKitAdapter(factory, speed=speed, timeout_s=60)
    return await run_transcript(script, adapter, settings=RunSettings(concurrency=1))


@pytest.mark.filterwarnings("ignore:the agent's realtime model:UserWarning")
@pytest.mark.parametrize(
    ("mode", "first_audio"),
    [("server", True), ("session", False), ("fixed_server", False)],
    ids=["server_vad_audio_first", "session_vad", "server_vad_that_cannot_be_disabled"],
)
def test_the_reply_stops_and_is_recorded_as_heard_at_every_speed(
    mode: Mode, first_audio: bool, realtime_audio: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    async def in_real_time(case: Case) -> tuple[TranscriptResult, list[ScriptedRealtimeModel]]:
        made: list[ScriptedRealtimeModel] = []
        result = await _run(
            case["mode"], realtime_audio, speed=1.0, first_audio=case["first_audio"], models=made
        )
        return result, made

    seen = {}
    for speed in (0.0, 1.0):
        if speed == 0.0:
            models: list[ScriptedRealtimeModel] = []
            result = run(
                _run(mode, realtime_audio, speed=speed, first_audio=first_audio, models=models)
            )
        else:
            result, models = real_time_result(request, in_real_time, at_once=REAL_TIME_AT_ONCE)
        (run_result,) = result.runs
        first, second = run_result.turns
        assert first.error is None and second.error is None, (first.error, second.error)
        barge = second.barge_in
        assert barge is not None and barge.precondition is None, barge
        assert barge.stopped, barge
        # What was heard of the story: its first words, as far as its audio played.
        assert STORY.startswith(first.reply) and 3 <= len(first.reply.split()) < 20, first.reply
        assert barge.interrupted_text == first.reply
        # The model heard the whole interruption (no warm-up silence over its start).
        assert second.heard == PHRASES["stop_rome"]
        assert second.reply == "It is rainy in Rome."
        assert [c.name for c in second.tool_calls] == ["get_weather"]
        assert run_result.passed
        # The session cut the model's reply as it cuts a provider's: truncated at the position
        # that played, and the model was asked to stop generating.
        (model,) = models
        (truncated,) = model.sessions[0].truncated
        assert 0 < truncated["audio_end_ms"] < 5000, truncated
        assert "interrupt" in [c.name for c in model.sessions[0].calls]
        seen[speed] = (second.heard, second.reply, [(c.name, c.args) for c in second.tool_calls])
    assert seen[0.0] == seen[1.0]
