"""A far end heard as audio (``as: audio``) on a voice adapter that does not stream it (one
without ``plays_far_end_audio``): refused before a conversation starts, an ERROR that says so,
never a verdict."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file, load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "phone-outbound-livekit"
VOICEMAIL = """\
id: reminder
far_end:
  kind: voicemail
  as: audio
  greeting: "Hi, this is Sam. Leave a message after the beep."
"""


class RoomOnlyAdapter:
    """A voice adapter of one's own (it streams audio turns) that does not stream a far end."""

    consumes_audio = True

    def __init__(self) -> None:
        self.started = 0

    async def start_conversation(self, info: object) -> object:
        self.started += 1
        raise AssertionError("no conversation may be started")


def test_a_far_end_heard_as_audio_is_refused_on_a_voice_adapter_that_does_not_stream_it() -> None:
    adapter = RoomOnlyAdapter()
    transcript = load_transcript_text(VOICEMAIL, path=Path("call.yaml"))
    with pytest.raises(
        TranscriptError,
        match=r"call\.yaml:2, transcript 'reminder', far_end\.as: a far end heard as audio is "
        r"not played by RoomOnlyAdapter yet \(it streams into LiveKitAdapter in process and "
        r"PipecatAdapter\)",
    ):
        asyncio.run(run_transcript(transcript, adapter))
    assert adapter.started == 0


@pytest.mark.voice
def test_a_far_end_heard_under_a_phone_line_is_an_error_with_an_stt_that_does_not_listen(
    tmp_path: Path,
) -> None:
    """`FixtureTextSTT` would hear the greeting's words whatever the line does to them: the far
    end's turn is an ERROR naming the conditions, as a caller's audio turn is, never a PASS."""
    pytest.importorskip("livekit.agents")
    from livekit.agents import Agent, AgentSession
    from livekit.plugins import silero

    from pytest_agent_eval.adapters.livekit import (
        FixtureTextSTT,
        LiveKitAdapter,
        ScriptedLLM,
        eval_session_kwargs,
    )

    heard = EXAMPLE / "evals_heard"
    shutil.copytree(heard / "audio", tmp_path / "audio")
    yaml = tmp_path / "voicemail_heard.yaml"
    yaml.write_text("conditions: [phone]\n" + (heard / "voicemail_heard.yaml").read_text())
    transcript = dataclasses.replace(load_transcript_file(yaml), runs=1)

    def make_session() -> tuple[AgentSession, Agent]:
        session: AgentSession = AgentSession(
            stt=FixtureTextSTT(), vad=silero.VAD.load(), llm=ScriptedLLM([]),
            **eval_session_kwargs(),
        )  # fmt: skip
        return session, Agent(instructions="You leave reminders.")

    result = asyncio.run(run_transcript(transcript, LiveKitAdapter(make_session)))
    (run,) = result.runs
    error = run.turns[0].error or ""
    assert run.turns[0].errored, error
    assert "audio conditions (telephone(" in error
    assert "FixtureTextSTT, which answers with the fixture's text without listening" in error
