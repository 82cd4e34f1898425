"""What "talked over the greeting" means when the far end is heard as audio: the agent's audio
out overlapping the greeting's audio on the turn's timeline. A reply that starts while the
greeting plays fails naming both times; a message left after the beep passes; the verdict is
the same one a text turn gets."""

from __future__ import annotations

from pytest_agent_eval.evaluators._far_end import VoicemailCheck
from pytest_agent_eval.models import RunResult, Timeline, TimelineEvent, TurnResult
from pytest_agent_eval.models._far_end import BEEP_WORDS, VoicemailExpect

GREETING = "Hi, you have reached Sam. Please leave a message after the beep."
MESSAGE = "A reminder of your appointment on Tuesday at 3."


def _turn(index: int, user: str, reply: str, *events: TimelineEvent) -> TurnResult:
    return TurnResult(index=index, user=user, reply=reply, timeline=Timeline(events=list(events)))


def _stream(end: float) -> TimelineEvent:
    return TimelineEvent(kind="stream", t_start=0.0, t_end=end)


def _speech(start: float, end: float, text: str) -> TimelineEvent:
    return TimelineEvent(kind="agent_speech", t_start=start, t_end=end, detail={"text": text})


def _check(*turns: TurnResult) -> tuple[bool, str]:
    result = VoicemailCheck(VoicemailExpect(says=["Tuesday at 3"])).check(
        RunResult(index=0, turns=list(turns))
    )
    return result.passed, result.reasoning


def test_audio_out_over_the_greetings_audio_fails_naming_both_times() -> None:
    passed, reason = _check(
        _turn(0, GREETING, MESSAGE, _stream(4.2), _speech(3.1, 6.0, MESSAGE)),
        _turn(1, BEEP_WORDS, "", _stream(1.0)),
    )
    assert not passed
    assert reason == (
        f"the agent talked over the voicemail's greeting, before the beep: {MESSAGE!r} (its "
        "audio from 3.10 s overlapped the greeting's audio, which played until 4.20 s)"
    )


def test_a_message_after_the_beep_passes_on_the_timeline() -> None:
    passed, reason = _check(
        _turn(0, GREETING, "", _stream(4.2)),
        _turn(1, BEEP_WORDS, MESSAGE, _stream(1.0), _speech(1.3, 4.0, MESSAGE)),
    )
    assert passed, reason
