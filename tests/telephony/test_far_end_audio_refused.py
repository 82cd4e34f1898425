"""A far end heard as audio (``as: audio``) on a voice adapter that does not stream it (one
without ``plays_far_end_audio``): refused before a conversation starts, an ERROR that says so,
never a verdict."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError

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
