"""A room turn covers all of its audio: it ends once the agent heard the whole fixture,
transcribed every part of it, and answered what it heard.

On a loaded machine an agent's STT can take seconds per speech segment. LiveKit then commits
the user's turn at the end of speech with the transcript it has so far (the first part of a
fixture with a pause), answers it, and takes the rest as a second user turn when its
transcript arrives. The lab's ``slow-stt`` agent does this every time: its Whisper takes
SLOW_STT_S longer per segment.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from room_lab import RoomLab

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.synthesize import ensure_fixtures
from pytest_agent_eval.voice import spoken_text
from pytest_agent_eval.voice._fixtures import word_error_rate

PAUSED = "Hi, I am Alice. [pause 1s] I would like a table for two at seven pm."
"""A request with a pause in it that the agent's VAD ends speech at: the first part alone gets
a hello, the second a booking (Whisper hears these words reliably over WebRTC)."""


@pytest.fixture(scope="module")
def paused_wav(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("paused")
    source = folder / "paused.yaml"
    source.write_text(f'id: paused\nturns:\n  - user: "{PAUSED}"\n    audio: paused.wav\n')
    ensure_fixtures([load_transcript_file(source)], jobs=1).raise_for_failures()
    return folder / "paused.wav"


def test_a_slow_stt_is_waited_for_and_the_whole_question_answered(
    lab: RoomLab, lab_worker: str, paused_wav: Path
) -> None:
    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="slow-stt",
        turns=[{"user": PAUSED, "audio": str(paused_wav)}],
    )
    (reply,) = out["replies"]
    # The agent heard both parts of the request, each in its own speech segment...
    assert reply.heard is not None
    assert word_error_rate(spoken_text(PAUSED), reply.heard) <= 0.35, reply.heard
    assert len(reply.heard_segments) == 2, reply.heard_segments
    # ... and the turn went on until it answered the second part too: the booking (with the
    # name from the first part) is made in this turn, after the hello to the first.
    assert [(c.name, c.args) for c in reply.calls] == [
        ("book_table", {"party_size": 2, "time": "19:00", "name": "Alice"})
    ], reply.reply
    assert reply.reply.startswith("Hello! How can I help you?"), reply.reply
    assert reply.reply.endswith("under Alice, reference BK-101."), reply.reply


def test_without_the_helper_an_audio_turn_errors_saying_why(
    lab: RoomLab, lab_worker: str, paused_wav: Path
) -> None:
    # Without publish_eval_events nothing in the room says whether the agent has heard and
    # transcribed the whole fixture: the turn cannot end for a known reason, so it errors.
    with pytest.raises(AdapterError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="no-helper",
            turns=[{"user": PAUSED, "audio": str(paused_wav)}],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: ")
    assert "heard the whole audio fixture" in message and "paused.wav" in message
    assert "publish_eval_events(session)" in message
