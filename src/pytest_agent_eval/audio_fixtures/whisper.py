"""Moved to `pytest_agent_eval.voice._whisper`.

This path stays importable for earlier imports: it is that same module, not a copy.
"""

import sys

from ..voice import _whisper
from ..voice._whisper import (
    WHISPER_SAMPLE_RATE,
    PCMRecognition,
    load_whisper,
    recognize_pcm,
    recognizer_identity,
    resolve_whisper_model,
    transcribe,
    transcribe_pcm,
)

__all__ = [
    "WHISPER_SAMPLE_RATE",
    "PCMRecognition",
    "load_whisper",
    "recognize_pcm",
    "recognizer_identity",
    "resolve_whisper_model",
    "transcribe",
    "transcribe_pcm",
]

sys.modules[__name__] = _whisper
