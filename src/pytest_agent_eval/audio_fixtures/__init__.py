"""Audio fixtures: WAV I/O, validation, resampling, levels, sidecars, offline STT and WER.

A leaf package: `synthesize` and the LiveKit adapter use it, it uses neither. numpy, soundfile
and soxr (the ``voice`` extra) and faster-whisper (the ``stt`` extra) are imported on first use.
"""

from __future__ import annotations

from ._clip import (
    AudioClip,
    clean_stale_temp_files,
    clip_from_pcm16,
    read_wav,
    resample,
    to_pcm16_bytes,
    write_wav_atomic,
)
from ._effects import PostProcess, normalize_level, postprocess, trim_silence
from ._sidecar import (
    FORMAT_VERSION,
    SIDECAR_SUFFIX,
    Sidecar,
    describe_changes,
    fixture_key,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)
from ._stats import SILENCE_FLOOR_DBFS, AudioStats, audio_stats, voiced_frames
from ._validate import SYNTHESIZE_COMMAND, synthesize_command, validate_fixture
from .wer import normalize_for_wer, word_error_rate
from .whisper import load_whisper, transcribe

__all__ = [
    "FORMAT_VERSION",
    "SIDECAR_SUFFIX",
    "SILENCE_FLOOR_DBFS",
    "SYNTHESIZE_COMMAND",
    "AudioClip",
    "AudioStats",
    "PostProcess",
    "Sidecar",
    "audio_stats",
    "clean_stale_temp_files",
    "clip_from_pcm16",
    "describe_changes",
    "fixture_key",
    "load_whisper",
    "normalize_for_wer",
    "normalize_level",
    "postprocess",
    "read_sidecar",
    "read_wav",
    "resample",
    "sidecar_path",
    "synthesize_command",
    "to_pcm16_bytes",
    "transcribe",
    "trim_silence",
    "validate_fixture",
    "voiced_frames",
    "word_error_rate",
    "write_sidecar",
    "write_wav_atomic",
]
