"""Who a fixture without audible speech blames: the fixture when clean, the agent under the
conditions the user asked for (`voice._unheard`, shared by both LiveKit adapters)."""

from __future__ import annotations

from pathlib import Path

from pytest_agent_eval.errors import AdapterError, AgentFailedError
from pytest_agent_eval.models import AudioCondition
from pytest_agent_eval.voice._unheard import no_speech_error


def test_a_clean_fixture_without_speech_is_an_error_that_blames_the_fixture() -> None:
    error = no_speech_error("the session's VAD", Path("book.wav"), 1.0, ())
    assert type(error) is AdapterError
    assert str(error) == (
        "the session's VAD hears no speech in audio fixture book.wav (1.00 s); the agent would "
        "never get a turn. Re-create the fixture, or check the VAD's activation threshold"
    )


def test_under_conditions_it_is_the_agents_failure_naming_them() -> None:
    noise = AudioCondition(kind="noise", params={"color": "white", "snr_db": -12})
    error = no_speech_error("the agent's VAD", Path("book.wav"), 2.5, (noise,))
    assert isinstance(error, AgentFailedError)
    assert str(error).startswith(
        "under the audio conditions noise(color=white, snr_db=-12), the agent's VAD hears no "
        "speech in audio fixture book.wav (2.50 s): the agent would never get a turn, so it "
        "fails this condition. Observed: that VAD's scan of the audio after the conditions, "
        "before any of it was streamed (the agent did not run on it). Not observed: whether "
        "the clean fixture is heard"
    )
    # No claim the run did not check: the clean fixture, or a VAD that would cope.
    assert "Re-create" not in str(error) and "is not at fault" not in str(error)
    assert "would pass" not in str(error) and "copes" not in str(error)
