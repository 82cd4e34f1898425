"""Keypad tones (`voice._dtmf`): every key made and heard again, on clean audio, at Q.24's
shortest timing, after a phone line with noise, and never in speech."""

from __future__ import annotations

import random

import pytest

from pytest_agent_eval.models import AudioCondition
from pytest_agent_eval.voice._degrade import apply
from pytest_agent_eval.voice._dtmf import KEYS, check_keys, detect_keys, keypad_tones

EVERY_KEY = "".join(KEYS)


def heard(clip) -> str:  # type: ignore[no-untyped-def]
    return "".join(k.key for k in detect_keys(clip))


def test_the_pad_is_q23s() -> None:
    assert EVERY_KEY == "123A456B789C*0#D"
    assert KEYS["1"] == (697.0, 1209.0) and KEYS["#"] == (941.0, 1477.0)
    assert KEYS["D"] == (941.0, 1633.0)


@pytest.mark.parametrize("sample_rate", [8000, 16000, 48000])
@pytest.mark.parametrize(("tone_ms", "gap_ms"), [(100, 100), (40, 40)])
def test_every_key_is_heard_on_clean_audio(sample_rate: int, tone_ms: int, gap_ms: int) -> None:
    # Forwards, backwards and repeated keys: a key pressed twice with Q.24's shortest pause
    # is two keys, not one.
    keys = EVERY_KEY + EVERY_KEY[::-1] + "1155##"
    clip = keypad_tones(keys, sample_rate=sample_rate, tone_ms=tone_ms, gap_ms=gap_ms)
    assert heard(clip) == keys


def test_keys_are_heard_when_they_sound() -> None:
    clip = keypad_tones("42", tone_ms=100, gap_ms=150)
    first, second = detect_keys(clip)
    assert (first.key, second.key) == ("4", "2")
    assert first.start_s == pytest.approx(0.0, abs=0.015)
    assert first.end_s == pytest.approx(0.100, abs=0.015)
    assert second.start_s == pytest.approx(0.250, abs=0.015)
    assert second.end_s == pytest.approx(0.350, abs=0.015)


def test_at_least_99_percent_survive_a_phone_line_with_noise_at_10_db() -> None:
    rng = random.Random(11)
    right = total = 0
    for seed in range(40):
        keys = "".join(rng.choice(EVERY_KEY) for _ in range(10))
        clip = keypad_tones(keys, level_dbfs=rng.uniform(-25.0, -6.0))
        line = apply(
            clip,
            [AudioCondition("telephone", {}), AudioCondition("noise", {"snr_db": 10})],
            seed=seed,
        )
        got = heard(line)
        total += len(keys)
        right += (
            sum(a == b for a, b in zip(keys, got, strict=False)) if len(got) == len(keys) else 0
        )
    assert right / total >= 0.99, f"{right} of {total} keys heard right"


def test_speech_is_never_heard_as_keys() -> None:
    from pytest_agent_eval.models import VoiceSettings
    from pytest_agent_eval.voice._tts._registry import get_backend

    backend = get_backend("hibari")
    settings = backend.resolve(VoiceSettings(backend="hibari"))
    for text in (
        "My account number is four five two one, then pound.",
        "Press one for sales, two for support, or stay on the line.",
        "Hello? Yes, this is Maria. Can you hear me? Mm-hmm, okay, go ahead.",
    ):
        speech = backend.synthesize(text, settings)
        assert heard(speech) == "", text
        line = apply(speech, [AudioCondition("telephone", {})], seed=1)
        assert heard(line) == "", text


def test_keys_in_the_middle_of_speech_are_heard() -> None:
    import numpy as np

    from pytest_agent_eval.models import VoiceSettings
    from pytest_agent_eval.voice._clip import AudioClip, resample
    from pytest_agent_eval.voice._tts._registry import get_backend

    backend = get_backend("hibari")
    speech = resample(
        backend.synthesize("Here it is.", backend.resolve(VoiceSettings(backend="hibari"))), 16000
    )
    tones = keypad_tones("4521#", sample_rate=16000)
    joined = np.concatenate([speech.samples, tones.samples, speech.samples])
    assert heard(AudioClip(joined, 16000)) == "4521#"


def test_a_character_that_is_not_a_key_is_named() -> None:
    assert check_keys("12ab*#") == "12AB*#"
    with pytest.raises(ValueError, match=r"'x' \(position 3\) is not a key; keys are 0-9"):
        keypad_tones("12x4")
    with pytest.raises(ValueError, match="at least 40 ms"):
        keypad_tones("1", tone_ms=30)


def test_keys_sent_as_events_and_heard_as_tones_merge_once() -> None:
    from pytest_agent_eval.voice._dtmf import merge_keys

    assert merge_keys("2", "2") == "2"  # a DTMF frame the transport also played as a tone
    assert merge_keys("", "21") == "21"  # only in band
    assert merge_keys("21", "") == "21"  # only events
    assert merge_keys("13", "123") == "123"  # the tone heard between two events
    assert merge_keys("11", "1") == "11"  # a key pressed twice is two keys


def test_keys_are_heard_in_reply_pcm() -> None:
    import numpy as np

    from pytest_agent_eval.voice._dtmf import keys_in_pcm

    clip = keypad_tones("9#", sample_rate=24000)
    pcm = (clip.samples * 32767).astype(np.int16).tobytes()
    assert keys_in_pcm(pcm, 24000) == "9#"
    assert keys_in_pcm(b"", 24000) == ""
