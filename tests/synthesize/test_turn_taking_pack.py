"""The turn-taking pack: procedural sounds, rendering marked text, the pack's stimuli, and the
synthesize command writing them offline, byte for byte the same for the same seed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval._turn_taking._pack import PACK_VOICES, build_pack, write_pack
from pytest_agent_eval._turn_taking._render import render_marked, speaker
from pytest_agent_eval._turn_taking._sounds import make_sound
from pytest_agent_eval._turn_taking._stimulus import Category, Expected, Stimulus
from pytest_agent_eval.models import VoiceSettings
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._clip import read_wav
from pytest_agent_eval.voice._provenance import Origin, read_provenance
from pytest_agent_eval.voice._sidecar import read_sidecar
from pytest_agent_eval.voice._speech import NOISE_KINDS, phrases_of
from pytest_agent_eval.voice._tts._registry import get_backend

# One stimulus of every category, spoken by all three voices between them.
SUBSET = (
    "pause-01",
    "filler-02",
    "short_answer-01",
    "backchannel-01",
    "barge_in-01",
    "noise-01",
    "noise-02",
    "side_speech-01",
    "side_speech-04",
)


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.mark.parametrize("kind", NOISE_KINDS)
def test_every_sound_is_audible_and_the_same_for_the_same_seed(kind: str) -> None:
    one = make_sound(kind, seed=7, sample_rate=16000)
    assert one.samples.tobytes() == make_sound(kind, seed=7, sample_rate=16000).samples.tobytes()
    assert one.samples.tobytes() != make_sound(kind, seed=8, sample_rate=16000).samples.tobytes()
    assert float(np.abs(one.samples).max()) > 0.01
    assert float(np.abs(one.samples).max()) < 1.0
    assert 0.02 <= one.duration_s <= 3.0


def test_render_places_every_element_where_its_marker_says() -> None:
    backend = get_backend("espeak")
    settings = backend.resolve(VoiceSettings())
    text = 'I need [pause 1s] [filler um] a refill. [noise cough] Thanks [noise door at 1.5s] [backchannel "uh-huh" at 6s]'
    rendered = render_marked(
        text,
        speaker(lambda t: backend.synthesize(t, settings), 16000),
        sample_rate=16000,
        seed=3,
    )
    kinds = [e.kind for e in rendered.events]
    assert sorted(kinds) == sorted(
        ["speech", "pause", "filler", "speech", "noise", "speech", "noise", "backchannel"]
    )
    by_kind = {e.kind: e for e in rendered.events}
    assert by_kind["pause"].end_s - by_kind["pause"].start_s == pytest.approx(1.0, abs=1e-3)
    assert by_kind["backchannel"].start_s == 6.0
    assert by_kind["backchannel"].text == "uh-huh"
    door = next(e for e in rendered.events if e.sound == "door")
    assert door.start_s == 1.5
    # The clip holds the last overlay and the pad after it.
    assert rendered.clip.duration_s >= by_kind["backchannel"].end_s + 0.25 - 1e-3
    # The phrases are the ones the synthesizer's split lists (fillers included).
    assert [p.text for p in rendered.phrases] == phrases_of(text)
    assert rendered.caller_end_s == max(p.end_s for p in rendered.phrases)
    # The backchannel is really there: sound where it is placed, silence just before.
    samples = rendered.clip.samples
    before = samples[int(5.6 * 16000) : int(5.95 * 16000)]
    during = samples[int(6.0 * 16000) : int(6.3 * 16000)]
    assert float(np.abs(before).max()) == 0.0
    assert float(np.abs(during).max()) > 0.05


def test_the_pack_covers_every_category_with_three_voices() -> None:
    pack = build_pack(0)
    assert len(pack) == 65
    assert len({s.id for s in pack}) == 65
    counts = {c: sum(1 for s in pack if s.category is c) for c in Category}
    assert counts == {
        Category.PAUSE: 12,
        Category.FILLER: 9,
        Category.SHORT_ANSWER: 9,
        Category.BACKCHANNEL: 10,
        Category.BARGE_IN: 9,
        Category.NOISE: 10,
        Category.SIDE_SPEECH: 6,
    }
    assert {s.voice for s in pack} == set(PACK_VOICES)
    assert all(s.expect is Expected.YIELD for s in pack if s.category is Category.BARGE_IN)
    assert all(s.agent_line for s in pack if s.agent_speaking)
    assert build_pack(0) == pack
    assert [s.text for s in build_pack(1)] != [s.text for s in pack]


def test_a_stimulus_record_round_trips() -> None:
    for stimulus in build_pack(3):
        assert Stimulus.from_dict(json.loads(json.dumps(stimulus.to_dict()))) == stimulus


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    # The three voices, a sound alone and side speech in another voice.
    chosen = ("pause-01", "pause-02", "pause-03", "noise-02", "side_speech-01")
    write_pack(tmp_path / "a", seed=4, only=chosen)
    write_pack(tmp_path / "b", seed=4, only=chosen)
    write_pack(tmp_path / "c", seed=5, only=chosen[:1])
    a, b, c = _files(tmp_path / "a"), _files(tmp_path / "b"), _files(tmp_path / "c")
    assert len(a) == 2 * len(chosen) + 1
    assert a == b
    assert a["pause-01.wav"] != c["pause-01.wav"]


def test_each_wav_has_a_sidecar_with_its_stimulus_events_and_provenance(tmp_path: Path) -> None:
    write_pack(tmp_path, seed=0, only=SUBSET)
    manifest = json.loads((tmp_path / "pack.json").read_text())
    assert [s["id"] for s in manifest["stimuli"]] == list(SUBSET)
    assert set(manifest["voices"]) >= {"hibari/heart", "piper/joe", "espeak/en-us"}
    for listed in manifest["stimuli"]:
        wav = tmp_path / listed["wav"]
        provenance = read_provenance(wav)
        assert provenance.origin is Origin.SYNTHESIZED
        sidecar = read_sidecar(wav)
        assert sidecar is not None
        assert sidecar.inputs["turn_taking"]["stimulus"]["id"] == listed["id"]
        assert sidecar.inputs["turn_taking"]["pack_seed"] == 0
        assert sidecar.wav_sha256 == listed["wav_sha256"]
        assert read_wav(wav).duration_s == pytest.approx(sidecar.duration_s, abs=1e-3)
        assert list(sidecar.events) == listed["events"]
        for event in sidecar.events:
            assert 0 <= event["start_s"] <= event["end_s"] <= sidecar.duration_s
    events = {s["id"]: s["events"] for s in manifest["stimuli"]}
    assert [e["kind"] for e in events["filler-02"]].count("filler") == 1
    assert events["noise-02"][0]["kind"] == "noise"
    assert events["noise-02"][0]["start_s"] == events["noise-02"][0]["at_s"]
    assert {e["kind"] for e in events["side_speech-01"]} == {"speech", "side_speech"}


def test_the_command_writes_the_pack_the_same_in_two_processes(tmp_path: Path) -> None:
    chosen = ["--stimulus", "filler-01", "--stimulus", "noise-03", "--stimulus", "barge_in-02"]
    for name in ("one", "two"):
        done = subprocess.run(
            [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "--turn-taking-pack",
             str(tmp_path / name), "--seed", "9", *chosen],
            capture_output=True, text=True, check=False, cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "3 turn-taking stimuli" in done.stdout
    assert _files(tmp_path / "one") == _files(tmp_path / "two")
    assert json.loads((tmp_path / "one" / "pack.json").read_text())["seed"] == 9


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--seed", "3"], "--seed applies to the turn-taking pack only"),
        (["--stimulus", "pause-01"], "--stimulus applies to the turn-taking pack only"),
        (["--turn-taking-pack", "out", "--stimulus", "pause-99"], "has no stimulus 'pause-99'"),
        (["--turn-taking-pack", "out", "evals"], "reads no transcripts; drop evals"),
    ],
)
def test_command_misuse_is_a_usage_error(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "out" / "pack.json").exists()


def test_a_transcript_fixture_with_markers_records_its_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(
        "id: marked\nturns:\n"
        "  - user: 'I need [filler um] a refill. [noise cough] Thanks. "
        '[backchannel "uh-huh" at 5s]\'\n'
        "    audio: a.wav\n    voice: {backend: espeak}\n"
    )
    assert main(["t.yaml"]) == 0
    sidecar = read_sidecar(tmp_path / "a.wav")
    assert sidecar is not None
    kinds = [e["kind"] for e in sidecar.events]
    assert kinds == ["speech", "filler", "speech", "noise", "speech", "backchannel"]
    assert [w.text for w in sidecar.words] == ["I", "need", "um", "a", "refill.", "Thanks."]
    # How markers are rendered is part of the key: a new rendering makes the fixture stale.
    assert sidecar.inputs["turn_taking_markup"] == 1
    assert main(["--check", "t.yaml"]) == 0
