"""Replayed audio turns: the fixture's audio goes through the real OpenAI realtime client to the
loopback server, which answers at the recorded audio positions (server turn detection) or at
the client's commits (the session's VAD taking the turns); captures identical to the recording
at max speed and in real time, whatever bytes LiveKit's resampler makes of the fixture."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.plugins.openai", reason="needs livekit-plugins-openai (dev extra)")

from replay_agents import (
    FIXTURES_YAML,
    SPOKEN,
    audio_capture,
    audio_session_factory,
    audio_transcript,
    provider,
    run,
)

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay
from pytest_agent_eval.models import Transcript


@pytest.fixture(scope="module")
def spoken(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixtures, made by the project's synthesizer (offline), 16 kHz as users' are."""
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("spoken")
    (folder / "fixtures.yaml").write_text(FIXTURES_YAML)
    ensure_fixtures([load_transcript_file(folder / "fixtures.yaml")], jobs=1).raise_for_failures()
    return folder


async def _converse(adapter: Any, script: Transcript) -> list[Any]:
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=0)
    )
    out = []
    try:
        for index, turn in enumerate(script.turns):
            reply = await conversation.respond(
                TurnInput(turn=turn, index=index, audio=Path(str(turn.audio)))
            )
            out.append(audio_capture(reply))
    finally:
        await conversation.aclose()
    return out


# The session-VAD case takes the turns off the model on purpose (the adapter warns about it).
@pytest.mark.filterwarnings("ignore:the agent's realtime model:UserWarning")
@pytest.mark.parametrize("server_vad", [True, False], ids=["server-vad", "session-vad"])
def test_audio_turns_replay_with_identical_captures_at_both_speeds(
    spoken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server_vad: bool
) -> None:
    script = audio_transcript(spoken)

    async def record() -> list[Any]:
        scripted = provider()
        scripted.heard = list(SPOKEN)
        monkeypatch.setenv("OPENAI_BASE_URL", await scripted.start())
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
        try:
            adapter = OpenAIRealtimeReplay(
                LiveKitAdapter(audio_session_factory(server_vad=server_vad)),
                cassette_dir=tmp_path,
                record=True,
            )
            return await _converse(adapter, script)
        finally:
            await scripted.aclose()

    recorded = run(record())
    assert [turn["heard"] for turn in recorded] == list(SPOKEN)
    assert recorded[0]["reply"] == "Hi! How can I help?"
    assert recorded[1]["tools"][0][0] == "book_table"

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    for speed in (0.0, 0.0, 1.0):
        adapter = OpenAIRealtimeReplay(
            LiveKitAdapter(audio_session_factory(server_vad=server_vad), speed=speed),
            cassette_dir=tmp_path,
        )
        assert run(_converse(adapter, script)) == recorded, f"speed {speed}"


def test_semantic_turn_detection_with_audio_turns_is_refused(
    spoken: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit.agents import AgentSession
    from livekit.plugins.openai import realtime
    from replay_agents import FrontDesk

    from pytest_agent_eval.errors import AdapterError

    scripted = provider()

    def make() -> Any:  # the plugin's default: semantic_vad on the server
        return AgentSession(llm=realtime.RealtimeModel()), FrontDesk(greet=False)

    async def go() -> None:
        monkeypatch.setenv("OPENAI_BASE_URL", await scripted.start())
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
        try:
            adapter = OpenAIRealtimeReplay(LiveKitAdapter(make), cassette_dir=tmp_path, record=True)
            await _converse(adapter, audio_transcript(spoken))
        finally:
            await scripted.aclose()

    with pytest.raises(AdapterError) as info:
        run(go())
    assert "semantic_vad" in str(info.value)
    assert "turn_detection=TurnDetection(type='server_vad'" in str(info.value)
