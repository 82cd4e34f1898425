"""What a LiveKit turn's timeline calls an interruption: speech over a reply that then ends
interrupted, not speech over a reply that cannot be interrupted (issue 33)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
for _folder in ("livekit", "pipecat", "realtime", "contract"):
    if str(TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(TESTS / _folder))

from pytest_agent_eval._runner import RunSettings, run_transcript  # noqa: E402
from pytest_agent_eval.models import InterruptConfig, Transcript, Turn  # noqa: E402


@pytest.fixture(scope="module")
def phrases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from pipecat_support import synthesize_phrases

    return synthesize_phrases(tmp_path_factory.mktemp("phrases"))


@pytest.mark.parametrize("interruptible", [True, False], ids=["interruptible", "uninterruptible"])
def test_speech_over_a_reply_is_an_interruption_only_when_it_cuts_the_reply(
    phrases: dict[str, Path], interruptible: bool
) -> None:
    from contract_agents import speaking_factory
    from pipecat_support import PHRASES

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    over = InterruptConfig(stop_within_ms=1500, after_ms=1500)
    script = Transcript(
        id="over",
        turns=[
            Turn(user=PHRASES["story"], audio=phrases["story"]),
            Turn(user=PHRASES["stop"], audio=phrases["stop"], interrupt=over),
        ],
        threshold=0.0,
    )
    adapter = LiveKitAdapter(speaking_factory(interruptible=interruptible), tail_silence_s=0.7)
    result = asyncio.run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
    _story, stop = result.runs[0].turns
    assert stop.barge_in is not None and stop.barge_in.stopped is interruptible
    assert stop.timeline is not None
    # The user's speech overlapped the reply either way; only the cut reply was interrupted.
    assert stop.timeline.of("vad_speech")
    kinds = [e.detail["kind"] for e in stop.timeline.of("interruption")]
    assert kinds == (["real"] if interruptible else [])
