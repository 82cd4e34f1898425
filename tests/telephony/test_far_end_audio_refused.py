"""A far end heard as audio (``as: audio``) on a voice adapter: refused before the session is
made, an ERROR that says the streaming into the agent is not built yet, never a verdict."""

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


def test_a_far_end_heard_as_audio_is_refused_on_livekit_before_a_session_is_made() -> None:
    pytest.importorskip("livekit.agents")
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    made: list[int] = []

    def make_session() -> object:
        made.append(1)
        raise AssertionError("no session may be made")

    transcript = load_transcript_text(VOICEMAIL, path=Path("call.yaml"))
    with pytest.raises(
        TranscriptError,
        match=r"call\.yaml:2, transcript 'reminder', far_end\.as: a far end heard as audio is "
        r"not played by LiveKitAdapter yet",
    ):
        asyncio.run(run_transcript(transcript, LiveKitAdapter(make_session)))
    assert made == []
