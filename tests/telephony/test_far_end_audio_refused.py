"""A far end heard as audio (``as: audio``) on a voice adapter that does not stream it yet
(Pipecat): refused before the pipeline is made, an ERROR that says so, never a verdict."""

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


def test_a_far_end_heard_as_audio_is_refused_on_pipecat_before_a_pipeline_is_made() -> None:
    pytest.importorskip("pipecat")
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    made: list[int] = []

    async def run_bot(transport: object, runner_args: object) -> None:
        made.append(1)
        raise AssertionError("no pipeline may be made")

    transcript = load_transcript_text(VOICEMAIL, path=Path("call.yaml"))
    with pytest.raises(
        TranscriptError,
        match=r"call\.yaml:2, transcript 'reminder', far_end\.as: a far end heard as audio is "
        r"not played by PipecatAdapter yet \(it streams into LiveKitAdapter in process\)",
    ):
        asyncio.run(run_transcript(transcript, PipecatAdapter(run_bot=run_bot)))
    assert made == []
