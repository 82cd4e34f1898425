"""Audio fixtures: WAV I/O, validation, resampling, levels, sidecars, offline STT and WER.

A leaf package: `synthesize` and the LiveKit adapter use it, it uses neither. numpy, soundfile
and soxr (the ``voice`` extra) and faster-whisper (the ``stt`` extra) are imported on first use.
"""

from __future__ import annotations

from ._clip import (
    MAX_COMMENT_BYTES,
    AudioClip,
    clean_stale_temp_files,
    clip_from_pcm16,
    encode_wav,
    read_wav,
    read_wav_comment,
    resample,
    to_pcm16_bytes,
    write_wav_atomic,
)
from ._effects import PostProcess, normalize_level, postprocess, render_phrases, trim_silence
from ._provenance import (
    EmbeddedRecord,
    Origin,
    Provenance,
    embedded_comment,
    pcm_sha256,
    read_embedded,
    read_provenance,
)
from ._sidecar import (
    FORMAT_VERSION,
    SIDECAR_SUFFIX,
    Sidecar,
    TimedPhrase,
    describe_changes,
    fixture_key,
    legacy_text_matches,
    read_legacy_hash,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)
from ._stats import SILENCE_FLOOR_DBFS, AudioStats, audio_stats, voiced_frames
from ._status import (
    INTERRUPTED,
    LEGACY_NOTE,
    MARKUP_FIX,
    RECORDING_NOTE,
    FixtureState,
    Verdict,
    judge_fixture,
    prove_fixture_text,
)
from ._validate import (
    DEFAULT_MAX_FIXTURE_S,
    RECORDING_FIX,
    SYNTHESIZE_COMMAND,
    audio_problem,
    decoded_audio_mime,
    max_fixture_s,
    set_max_fixture_s,
    synthesize_command,
    validate_fixture,
)
from .wer import normalize_for_wer, word_error_rate
from .whisper import load_whisper, transcribe

__all__ = [
    "DEFAULT_MAX_FIXTURE_S",
    "FORMAT_VERSION",
    "INTERRUPTED",
    "LEGACY_NOTE",
    "MARKUP_FIX",
    "MAX_COMMENT_BYTES",
    "RECORDING_FIX",
    "RECORDING_NOTE",
    "SIDECAR_SUFFIX",
    "SILENCE_FLOOR_DBFS",
    "SYNTHESIZE_COMMAND",
    "AudioClip",
    "AudioStats",
    "EmbeddedRecord",
    "FixtureState",
    "Origin",
    "PostProcess",
    "Provenance",
    "Sidecar",
    "TimedPhrase",
    "Verdict",
    "audio_problem",
    "audio_stats",
    "clean_stale_temp_files",
    "clip_from_pcm16",
    "decoded_audio_mime",
    "describe_changes",
    "embedded_comment",
    "encode_wav",
    "fixture_key",
    "judge_fixture",
    "legacy_text_matches",
    "load_whisper",
    "max_fixture_s",
    "normalize_for_wer",
    "normalize_level",
    "pcm_sha256",
    "postprocess",
    "prove_fixture_text",
    "read_embedded",
    "read_legacy_hash",
    "read_provenance",
    "read_sidecar",
    "read_wav",
    "read_wav_comment",
    "render_phrases",
    "resample",
    "set_max_fixture_s",
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
