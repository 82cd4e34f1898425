"""Real audio for the audio_fixtures tests: tones made with numpy and speech made by hibari."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_agent_eval.voice._fixtures import AudioClip

SPEECH_TEXT = "Book me a table for 2 tomorrow at 10am."


def tone(freq_hz: float, *, rate: int = 24000, seconds: float = 1.0, amp: float = 0.5) -> AudioClip:
    t = np.arange(int(rate * seconds)) / rate
    return AudioClip((amp * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32), rate)


@pytest.fixture(scope="session")
def speech_clip() -> AudioClip:
    """SPEECH_TEXT spoken by the offline default voice, at hibari's 24 kHz."""
    from hibari import Hibari

    tts = Hibari(threads=1)
    return AudioClip(tts(SPEECH_TEXT, seed=0), tts.sample_rate)
