"""Fixtures of the importer tests: a real call, recorded once per test process.

The LiveKit parts are imported inside the fixtures (on the main thread, as LiveKit's plugins
require), so the text-only tests here run without the livekit extra.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from call_support import CALLER_LINES

if TYPE_CHECKING:
    from call_support import RecordedCall


def _needs_livekit() -> None:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")
    pytest.importorskip("faster_whisper", reason="needs the stt extra")


@pytest.fixture(scope="session")
def caller_audio(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The caller's lines as WAVs, made by the project's offline synthesizer."""
    pytest.importorskip("soundfile", reason="needs the voice extra")
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("caller")
    turns = "".join(
        f'  - user: "{line}"\n    audio: line{n}.wav\n' for n, line in enumerate(CALLER_LINES, 1)
    )
    (folder / "caller.yaml").write_text(f"id: caller\nturns:\n{turns}")
    ensure_fixtures([load_transcript_file(folder / "caller.yaml")], jobs=1).raise_for_failures()
    return [folder / f"line{n}.wav" for n in range(1, len(CALLER_LINES) + 1)]


@pytest.fixture(scope="session")
def recorded_call(
    tmp_path_factory: pytest.TempPathFactory, caller_audio: list[Path]
) -> RecordedCall:
    """One real call with the greeting restaurant agent (about 20 s of real time): its
    session report and livekit's stereo OGG/Opus recording."""
    _needs_livekit()
    import call_agent
    from call_support import record_call

    from pytest_agent_eval.adapters.livekit import SynthesizerTTS

    async def call() -> RecordedCall:
        session = call_agent.make_session(tts=SynthesizerTTS())
        return await record_call(
            session, call_agent.GreeterRestaurant(), caller_audio, tmp_path_factory.mktemp("call")
        )

    recorded = asyncio.run(call())
    # The tests know this call's shape; a machine too busy to hold a real-time call can split a
    # line in two (a stall the agent's VAD took for a pause). Say so rather than fail obscurely.
    report = json.loads(recorded.report.read_text())
    said = [
        " ".join(str(c) for c in item.get("content", []))
        for item in report["chat_history"]["items"]
        if item.get("role") == "user"
    ]
    if len(said) != len(CALLER_LINES):
        pytest.fail(
            f"the recorded call has {len(said)} user turns, not {len(CALLER_LINES)}: {said} "
            f"(report: {recorded.report}); the machine was too busy for a real-time call",
            pytrace=False,
        )
    return recorded
