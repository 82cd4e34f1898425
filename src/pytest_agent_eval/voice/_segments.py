"""Speech segments of a fixture, in fixture time: what a VAD finds in it.

A voice turn ends once the agent has had every speech segment of its fixture (`_hearing`), so
each adapter scans the fixture with its framework's VAD before streaming it. The record of a
segment, and the conversion of a VAD's end-of-speech event into fixture time, do not depend on
the framework.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["SpeechSegment", "speech_segment"]


@dataclass(frozen=True, slots=True)
class SpeechSegment:
    """One stretch of speech the VAD finds in a fixture, in seconds of audio."""

    end_s: float
    """Where the speech ends, from the start of the fixture."""
    speech_s: float
    """How long the speech lasts."""
    detected_s: float
    """Where the VAD declares the end of speech (after its silence threshold), from the start
    of the fixture."""


def speech_segment(end: Any, offset: float) -> SpeechSegment:
    """The segment an end-of-speech event closes, in fixture time (stream time - ``offset``).

    ``end`` has ``timestamp``, ``silence_duration`` and ``speech_duration`` in seconds (a
    LiveKit ``VADEvent`` has them).
    """
    return SpeechSegment(
        end_s=max(0.0, end.timestamp - end.silence_duration - offset),
        speech_s=end.speech_duration,
        detected_s=end.timestamp - offset,
    )
