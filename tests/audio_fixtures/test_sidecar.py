from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pytest_agent_eval.errors import AudioFixtureError
from pytest_agent_eval.voice._fixtures import (
    FORMAT_VERSION,
    Sidecar,
    TimedWord,
    describe_changes,
    fixture_key,
    legacy_text_matches,
    read_legacy_hash,
    read_sidecar,
    sidecar_path,
    write_sidecar,
)

INPUTS = {
    "backend": "hibari",
    "backend_version": "0.2.1",
    "model": None,
    "voice": "heart",
    "speed": 1.0,
    "seed": 0,
    "sample_rate": 16000,
    "language": None,
    "postprocess": {"pad_s": 0.25, "target_rms_dbfs": -20.0},
}


def test_sidecar_sits_beside_the_wav() -> None:
    assert sidecar_path(Path("evals/booking_t1.wav")) == Path("evals/booking_t1.wav.hash")


def test_round_trip_is_readable_json(tmp_path: Path) -> None:
    wav = tmp_path / "t.wav"
    side = Sidecar(text="Hi there.", inputs=INPUTS, wav_bytes=1234, wav_sha256="ab" * 32)
    write_sidecar(wav, side)
    raw = json.loads(sidecar_path(wav).read_text())
    assert raw["text"] == "Hi there."
    assert raw["inputs"]["voice"] == "heart"
    assert raw["key"] == fixture_key("Hi there.", INPUTS)
    back = read_sidecar(wav)
    assert back == side
    assert (back.backend, back.voice, back.sample_rate) == ("hibari", "heart", 16000)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.wav.hash"]


def test_word_timings_round_trip_and_are_not_part_of_the_key(tmp_path: Path) -> None:
    wav = tmp_path / "t.wav"
    words = (TimedWord("Hi", 0.25, 0.5), TimedWord("there.", 0.5, 0.9))
    side = Sidecar(text="Hi there.", inputs=INPUTS, words=words, word_alignment="energy-1")
    write_sidecar(wav, side)
    raw = json.loads(sidecar_path(wav).read_text())
    assert raw["words"][1] == {"text": "there.", "start_s": 0.5, "end_s": 0.9}
    assert raw["word_alignment"] == "energy-1"
    assert read_sidecar(wav) == side
    assert side.key == fixture_key("Hi there.", INPUTS)  # timings describe, not shape, the audio
    raw["words"] = [{"text": "Hi", "start_s": "soon"}]
    sidecar_path(wav).write_text(json.dumps(raw))
    with pytest.raises(AudioFixtureError, match=r"t\.wav\.hash: .*a word needs 'text', 'start_s'"):
        read_sidecar(wav)


def test_no_sidecar_is_none(tmp_path: Path) -> None:
    assert read_sidecar(tmp_path / "x.wav") is None


def test_an_unknown_sidecar_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "x.wav.hash").write_text("d41d8cd98f00b204e9800998ecf8427e\n")  # md5: not ours
    with pytest.raises(AudioFixtureError, match=r"x\.wav\.hash: not a sidecar this version"):
        read_sidecar(tmp_path / "x.wav")


def test_the_earlier_packages_bare_hash_is_read_as_such(tmp_path: Path) -> None:
    """pytest-agent-eval 0.3 wrote sha256(user.strip()) in hex and a newline."""
    text = "  Book me a table for two.  "
    digest = hashlib.sha256(text.strip().encode("utf-8")).hexdigest()
    (tmp_path / "x.wav.hash").write_text(digest + "\n")
    assert read_sidecar(tmp_path / "x.wav") is None  # not a record of what the WAV says
    assert read_legacy_hash(tmp_path / "x.wav") == digest
    assert legacy_text_matches(digest, text)
    assert legacy_text_matches(digest, text.strip())
    assert not legacy_text_matches(digest, "Book me a table for three.")


def test_key_covers_every_input() -> None:
    base = fixture_key("Hello.", INPUTS)
    assert fixture_key("Hello.", dict(INPUTS)) == base
    assert fixture_key("Hello!", INPUTS) != base
    for name, value in [
        ("voice", "joe"),
        ("speed", 1.1),
        ("seed", 1),
        ("sample_rate", 24000),
        ("backend_version", "0.2.2"),
        ("model", "x"),
    ]:
        assert fixture_key("Hello.", {**INPUTS, name: value}) != base, name
    assert fixture_key("Hello.", {**INPUTS, "postprocess": {"pad_s": 0.3}}) != base
    assert fixture_key("Hello.", INPUTS, format_version=FORMAT_VERSION + 1) != base


def test_changes_are_explained() -> None:
    old = Sidecar(text="Hello.", inputs=INPUTS)
    assert describe_changes(old, "Hello.", INPUTS) == []
    assert describe_changes(old, "Hello!", INPUTS) == ["text changed"]
    assert describe_changes(old, "Hello.", {**INPUTS, "voice": "joe", "speed": 1.2}) == [
        "speed changed: 1.0 -> 1.2",
        "voice changed: heart -> joe",
    ]
    assert describe_changes(
        old, "Hello.", {**INPUTS, "postprocess": {"pad_s": 0.5, "target_rms_dbfs": -20.0}}
    ) == ["postprocess.pad_s changed: 0.25 -> 0.5"]
    assert describe_changes(old, "Hello.", INPUTS, format_version=FORMAT_VERSION + 1) == [
        f"fixture format changed: {FORMAT_VERSION} -> {FORMAT_VERSION + 1}"
    ]
