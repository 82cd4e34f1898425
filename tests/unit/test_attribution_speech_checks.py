"""Which failed checks the speech-output step may blame on the agent's voice: only the user's
own, which can read the reply audio. A built-in check reads the reply text (or the tools, or
what was heard): when it failed, the text was wrong, whatever the audio says. A review found a
judge whose reasoning quoted the wrong number in the text taken for the voice's mistake."""

from __future__ import annotations

import asyncio
import wave
from pathlib import Path

from pytest_agent_eval._attribution._speech import speech_output_evidence
from pytest_agent_eval.models import EvalResult, TurnResult


def _turn(tmp_path: Path) -> TurnResult:
    reply_audio = tmp_path / "reply.wav"
    with wave.open(str(reply_audio), "wb") as out:  # any audio: it is never transcribed here
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"\x00\x00" * 1600)
    return TurnResult(
        index=0,
        user="a table for 71",
        reply="Your table for 17 is booked.",
        audio="in.wav",
        audio_out=str(reply_audio),
    )


def test_a_built_in_check_that_failed_on_the_text_is_never_the_voices(tmp_path: Path) -> None:
    judge = EvalResult(
        False,
        "The agent booked a table for 17 guests, but the caller asked for 71.",
        name="judge",
        key="turns[0].expect.judge",
    )
    contains = EvalResult(
        False,
        "reply is missing ['71']",
        name="reply_contains",
        key="turns[0].expect.reply_contains",
    )
    assert asyncio.run(speech_output_evidence(_turn(tmp_path), [judge, contains])) == []
