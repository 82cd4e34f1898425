"""The command line end to end, with real hibari audio."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice._fixtures import Sidecar, read_sidecar, validate_fixture, write_sidecar

from .conftest import as_recording, file_ids

FIX = "python -m pytest_agent_eval.synthesize_audio"
WAVS = ["booking_t1.wav", "booking_t2.wav", "audio/booking_t3.wav", "booking_t4.wav"]


def test_cold_run_makes_every_fixture(synthesized_suite: Path) -> None:
    evals = synthesized_suite / "evals"
    for name in WAVS:
        clip = validate_fixture(evals / name)
        assert clip.sample_rate == 16000
        sidecar = read_sidecar(evals / name)
        assert sidecar is not None
        assert sidecar.inputs["backend"] == "hibari"
        assert sidecar.inputs["voice"] == "heart"
        assert sidecar.wav_sha256 == hashlib.sha256((evals / name).read_bytes()).hexdigest()
    assert read_sidecar(evals / "booking_t1.wav").text == "Book me a table for 2 tomorrow at 10am."
    assert not list(evals.rglob(".*.tmp"))


def test_warm_run_redoes_nothing(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    before = file_ids(root)
    assert main([]) == 0  # no paths: yaml_dirs from pyproject.toml
    out = capsys.readouterr().out
    assert "synthesized   " not in out
    assert "│           0 │          4 │      0 │" in out
    assert file_ids(root) == before


def test_force_remakes_the_same_bytes(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    before = {n: (evals / n).read_bytes() for n in WAVS}
    ids = file_ids(root)
    assert main(["--force", "evals"]) == 0
    assert "│           4 │          0 │      0 │" in capsys.readouterr().out
    assert {n: (evals / n).read_bytes() for n in WAVS} == before  # deterministic
    assert file_ids(root) != ids  # but really rewritten


def test_edits_redo_exactly_the_changed_fixtures(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    yaml = root / "evals" / "booking.yaml"
    text = yaml.read_text()
    text = text.replace("for 2 tomorrow at 10am", "for 3 tomorrow at 11am")
    text = text.replace(
        "    audio: booking_t2.wav\n", "    audio: booking_t2.wav\n    voice: {speed: 1.2}\n"
    )
    text = text.replace(
        "    audio: audio/booking_t3.wav\n",
        "    audio: audio/booking_t3.wav\n    voice: {backend: piper}\n",
    )
    yaml.write_text(text)
    before = file_ids(root / "evals")

    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "text changed" in out
    assert "speed changed: 1.0 -> 1.2" in out
    assert "voice changed: heart -> joe" in out
    assert "backend changed: hibari -> piper" in out
    assert f"{FIX} evals/booking.yaml" in out
    assert file_ids(root / "evals") == before  # --check makes nothing

    assert main([]) == 0
    out = capsys.readouterr().out
    assert "│           3 │          1 │      0 │" in out
    after = file_ids(root / "evals")
    changed = {name for name in after if after[name] != before.get(name)}
    assert changed == {
        "booking_t1.wav", "booking_t1.wav.hash",
        "booking_t2.wav", "booking_t2.wav.hash",
        "audio/booking_t3.wav", "audio/booking_t3.wav.hash",
    }  # fmt: skip
    assert read_sidecar(root / "evals/audio/booking_t3.wav").inputs["voice"] == "joe"
    assert read_sidecar(root / "evals/booking_t2.wav").inputs["speed"] == 1.2
    assert main(["--check"]) == 0
    assert "all 4 fixture(s) up to date" in capsys.readouterr().out


def test_check_names_missing_and_broken_fixtures(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    (evals / "booking_t1.wav").unlink()
    t2 = read_sidecar(evals / "booking_t2.wav")
    assert t2 is not None
    write_sidecar(evals / "booking_t2.wav", Sidecar(text=t2.text, inputs=t2.inputs, pending=True))
    (evals / "booking_t4.wav").write_bytes((evals / "booking_t4.wav").read_bytes()[:1000])
    assert main(["--check", "evals/booking.yaml"]) == 1
    out = capsys.readouterr().out
    assert "WAV missing" in out
    assert "an earlier synthesis of it was interrupted" in out
    assert "WAV changed since it was synthesized" in out
    assert "audio/booking_t3.wav" not in out


def test_voice_flags_override_every_layer(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    project()
    assert main(["--check", "--sample-rate", "24000"]) == 1
    assert "sample rate changed: 16000 -> 24000" in capsys.readouterr().out


def test_prune_removes_only_unreferenced_fixtures(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    yaml = evals / "booking.yaml"
    yaml.write_text(yaml.read_text().replace("    audio: booking_t4.wav\n", ""))
    recording = evals / "recorded_by_hand.wav"
    as_recording(evals / "booking_t1.wav", recording)  # no sidecar, no provenance: not ours

    assert main(["--check", "--prune"]) == 1
    out = capsys.readouterr().out
    assert "unreferenced  evals/booking_t4.wav " in out
    assert (evals / "booking_t4.wav").exists()
    # The last line says why the exit status is 1 (it used to end "all ... up to date").
    assert out.splitlines()[-1] == (
        "all 3 fixture(s) up to date, but 2 unreferenced file(s) listed above: --prune without "
        "--check removes them"
    )

    assert main(["--prune"]) == 0
    out = capsys.readouterr().out
    assert "removed       evals/booking_t4.wav\n" in out
    assert "removed       evals/booking_t4.wav.hash\n" in out
    assert not (evals / "booking_t4.wav").exists()
    assert not (evals / "booking_t4.wav.hash").exists()
    assert recording.exists()
    assert (evals / "booking_t1.wav").exists()
    assert main(["--check", "--prune"]) == 0


def test_verify_passes_good_fixtures_and_fails_wrong_audio(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    # booking_t4.wav now holds booking_t2's audio, and its sidecar is made to look current.
    (evals / "booking_t4.wav").write_bytes((evals / "booking_t2.wav").read_bytes())
    side = json.loads((evals / "booking_t4.wav.hash").read_text())
    side["wav"]["bytes"] = (evals / "booking_t4.wav").stat().st_size
    (evals / "booking_t4.wav.hash").write_text(json.dumps(side))
    assert main(["--check"]) == 0  # a stat-level check cannot tell

    assert main(["--verify"]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[3]: line for line in out.splitlines() if ".wav" in line}
    assert rows["evals/booking_t1.wav"].startswith("ok  ")
    assert rows["evals/booking_t2.wav"].startswith("ok  ")
    assert rows["evals/booking_t4.wav"].startswith("FAIL")
    assert "email" in rows["evals/booking_t4.wav"].lower()
    assert "1 of 4 fixture(s) do not say their text" in out


def test_verify_with_a_missing_stt_model_is_a_clear_error(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    project()
    assert main(["--check", "--verify", "--stt-model", str(tmp_path / "nowhere")]) == 1
    assert "Whisper model folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("files", "args", "message"),
    [
        ({}, ["nope/evals"], "nope/evals: no such file or folder"),
        ({"evals/notes.txt": "x"}, ["evals/notes.txt"], "not a YAML transcript"),
        ({"evals/readme.md": "x"}, ["evals"], "no YAML transcripts (*.yaml, *.yml) found"),
        ({}, [], "none of yaml_dirs ['tests/evals'] from pyproject.toml exists"),
        ({}, [], "or set yaml_dirs under [tool.agent_eval]"),
        ({"tests/evals/bad.yaml": "id: x\nturns: [\n"}, [], "bad.yaml"),
        (
            {"tests/evals/bad.yaml": "id: x\nturns:\n  - usr: hi\n    audio: a.wav\n"},
            [],
            "'usr'",
        ),
        ({"tests/evals/conf.yaml": "name: not a transcript\n"}, [], "not a transcript"),
    ],
)
def test_unusable_input_is_an_error_never_a_silent_zero(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    files: dict[str, str],
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent_eval]\n")
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    monkeypatch.chdir(tmp_path)
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "error:" in err
    assert message in err


def test_one_bad_file_does_not_stop_the_others(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "a.yaml").write_text("id: a\nturns:\n  - user: Yes.\n    audio: yes.wav\n")
    (tmp_path / "b.yaml").write_text("id: b\nturns: 3\n")
    monkeypatch.chdir(tmp_path)
    assert main(["."]) == 2
    captured = capsys.readouterr()
    assert "b.yaml" in captured.err
    assert "synthesized   yes.wav" in captured.out
    assert (tmp_path / "yes.wav.hash").exists()


def test_a_backend_that_is_not_installed_names_the_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HIBARI_HOME", str(tmp_path / "empty-cache"))
    (tmp_path / "a.yaml").write_text(
        "id: a\nvoice: {voice: fenrir}\nturns:\n  - user: Hello.\n    audio: hi.wav\n"
        "  - user: Bye.\n    audio: bye.wav\n    voice: {backend: piper, voice: amy}\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["a.yaml"]) == 1
    out = capsys.readouterr().out
    assert "hibari voice 'fenrir' is not bundled: it needs a download" in out
    assert "piper voice 'amy' is not installed" in out
    assert not (tmp_path / "hi.wav").exists()


def test_a_recording_without_sidecar_is_used_and_never_synthesized_over(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    wav = evals / "booking_t1.wav"
    (evals / "booking_t1.wav.hash").unlink()
    as_recording(evals / "booking_t2.wav", wav)  # "a human recording": no sidecar, no provenance
    recorded = wav.read_bytes()

    assert main(["--check"]) == 0
    assert main([]) == 0
    assert main(["--force"]) == 0
    capsys.readouterr()
    assert wav.read_bytes() == recorded
    assert not (evals / "booking_t1.wav.hash").exists()


def test_prune_keeps_fixtures_named_through_dotdot_or_absolute_paths(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    yaml = evals / "booking.yaml"
    roundabout = f"{evals}/../evals/booking_t4.wav"
    yaml.write_text(yaml.read_text().replace("audio: booking_t4.wav", f"audio: {roundabout}"))
    assert main(["--check", "--prune"]) == 0
    assert main(["--prune"]) == 0
    capsys.readouterr()
    assert (evals / "booking_t4.wav").exists()
    assert (evals / "booking_t4.wav.hash").exists()


def test_old_sidecars_gain_word_timings_and_their_wavs_stay_as_they_are(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 32: fixtures made before word timings were recorded get them from the command,
    measured on the WAV as it is (the same timings a new synthesis records), the WAV's bytes
    unchanged; --check reports them until then."""
    root = project()
    evals = root / "evals"
    timed = {name: read_sidecar(evals / name) for name in WAVS}
    wavs = {name: (evals / name).read_bytes() for name in WAVS}
    for name in WAVS[:2]:  # two sidecars as the previous version wrote them
        side_path = evals / (name + ".hash")
        side = json.loads(side_path.read_text())
        del side["words"], side["word_alignment"]
        side_path.write_text(json.dumps(side))
    assert read_sidecar(evals / WAVS[0]).words == ()

    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "untimed   evals/booking_t1.wav: its sidecar has no word timings" in out
    assert "untimed   evals/booking_t2.wav" in out and "booking_t4.wav" not in out
    assert f"Add them with:\n  {FIX} evals/booking.yaml" in out

    assert main([]) == 0
    out = capsys.readouterr().out
    assert "timed         evals/booking_t1.wav  (word timings added; WAV kept)" in out
    assert "│           0 │          4 │      0 │" in out  # nothing synthesized
    for name in WAVS:
        assert (evals / name).read_bytes() == wavs[name]
        assert read_sidecar(evals / name) == timed[name]
    assert main(["--check"]) == 0
    assert "all 4 fixture(s) up to date" in capsys.readouterr().out


def test_a_new_fixture_records_a_timing_for_every_word(synthesized_suite: Path) -> None:
    sidecar = read_sidecar(synthesized_suite / "evals" / "booking_t1.wav")
    assert sidecar is not None and sidecar.word_alignment == "energy-1"
    assert [w.text for w in sidecar.words] == sidecar.text.split()
    ends = [w.end_s for w in sidecar.words]
    assert ends == sorted(ends) and ends[-1] == sidecar.phrases[-1].end_s
