"""SynthesizerTTS: the synthesizer's offline voice speaking inside a real AgentSession."""

from __future__ import annotations

from pathlib import Path

import pytest
from livekit.agents import Agent, AgentSession
from livekit_support import booking, converse, run, transcript

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    SynthesizerTTS,
    eval_session_kwargs,
)
from pytest_agent_eval.errors import ConfigError
from pytest_agent_eval.models import Turn
from pytest_agent_eval.voice._fixtures import read_wav, transcribe, word_error_rate


def factory() -> tuple[AgentSession, Agent]:
    """The booking agent, speaking with the offline voice."""
    session = AgentSession(
        stt=FixtureTextSTT(),
        vad=booking.VAD,
        llm=ScriptedLLM(booking.RULES),
        tts=SynthesizerTTS(),
        **eval_session_kwargs(),
    )
    return session, booking.RestaurantAgent()


def test_the_session_speaks_its_replies_with_the_offline_voice(tmp_path: Path) -> None:
    adapter = LiveKitAdapter(factory, audio_out_dir=tmp_path)
    (reply,) = run(converse(adapter, transcript(Turn(user="Do you have vegan dishes?"))))

    assert reply.reply == "Yes, we have mushroom risotto and lentil curry."
    assert reply.first_audio_latency_s is not None and reply.first_audio_latency_s >= 0
    assert reply.audio_out is not None
    clip = read_wav(reply.audio_out)
    assert 1.0 < clip.duration_s < 10.0
    # What the session played is the reply, spoken: Whisper hears it back.
    assert word_error_rate(reply.reply, transcribe(clip)) <= 0.3


def test_a_reply_said_before_is_the_same_audio_from_memory(tmp_path: Path) -> None:
    """Every run says the same sentences: the second session's reply comes from the
    process's memory of replies (no synthesis) and plays the same samples as the first."""
    from pytest_agent_eval.voice._reply_voice import SPOKEN

    def reply_audio(out: Path) -> bytes:
        adapter = LiveKitAdapter(factory, audio_out_dir=out)
        (reply,) = run(converse(adapter, transcript(Turn(user="Do you have vegan dishes?"))))
        assert reply.audio_out is not None
        return read_wav(reply.audio_out).samples.tobytes()

    SPOKEN.clear()
    first = reply_audio(tmp_path / "first")
    said, hits = len(SPOKEN), SPOKEN.hits
    again = reply_audio(tmp_path / "again")

    assert said >= 1
    assert SPOKEN.hits > hits
    assert len(SPOKEN) == said  # nothing new was synthesized
    assert again == first


def test_settings_are_checked_when_the_tts_is_built() -> None:
    tts = SynthesizerTTS(speed=1.2, sample_rate=16000)
    assert (tts.model, tts.provider, tts.sample_rate) == (
        "hibari/heart",
        "pytest-agent-eval",
        16000,
    )
    assert tts.settings.speed == 1.2
    with pytest.raises(ConfigError, match="hibari has no voice 'nobody'"):
        SynthesizerTTS(voice="nobody")
    with pytest.raises(ConfigError, match="unknown TTS backend 'nope'"):
        SynthesizerTTS(backend="nope")
    with pytest.raises(ValueError, match="sample_rate"):
        SynthesizerTTS(sample_rate=0)
