"""Provenance inside the WAV, pause markers, fixtures of pytest-agent-eval 0.3, the duration cap:
through the command line, with real hibari audio."""

from __future__ import annotations

import hashlib
import itertools
import json
import shutil
import wave
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval._config import parse_settings
from pytest_agent_eval.errors import ConfigError
from pytest_agent_eval.synthesize._cli import main
from pytest_agent_eval.voice import Pause, Phrase, split_speech, spoken_text
from pytest_agent_eval.voice._fixtures import (
    AudioClip,
    Origin,
    encode_wav,
    pcm_sha256,
    read_embedded,
    read_provenance,
    read_sidecar,
    read_wav,
    read_wav_comment,
    set_max_fixture_s,
    voiced_frames,
)
from pytest_agent_eval.voice._speech import PauseMarkupError

from .conftest import as_recording


@pytest.fixture(autouse=True)
def _default_cap() -> Iterator[None]:
    yield
    set_max_fixture_s(None)


# -- the WAV carries the key ---------------------------------------------------------------------


def test_the_wav_carries_the_key_and_its_samples_are_unchanged(
    synthesized_suite: Path, tmp_path: Path
) -> None:
    wav = synthesized_suite / "evals" / "booking_t1.wav"
    sidecar = read_sidecar(wav)
    record = read_embedded(wav)  # read back through soundfile (libsndfile's "comment")
    assert sidecar is not None and record is not None
    assert (record.key, record.text, dict(record.inputs)) == (
        sidecar.key,
        sidecar.text,
        dict(sidecar.inputs),
    )
    assert record.phrase_times == tuple((p.start_s, p.end_s) for p in sidecar.phrases)
    assert record.pcm_sha256 == pcm_sha256(wav)
    # The header and the samples are byte for byte those of a WAV without the comment (only
    # the RIFF size, which covers the added chunk, differs), and every reader sees the samples.
    import soundfile

    samples, _ = soundfile.read(str(wav), dtype="int16")
    plain = encode_wav(AudioClip(samples.astype(np.float32) / 32767, 16000))
    data = wav.read_bytes()
    assert data[:4] + data[8 : len(plain)] == plain[:4] + plain[8:]
    assert data[len(plain) :].startswith(b"LIST")
    with wave.open(str(wav), "rb") as w:
        assert w.readframes(w.getnframes()) == samples.tobytes()
    clip = AudioClip(np.sin(np.arange(800) / 7).astype(np.float32) * 0.3, 16000)
    tagged = encode_wav(clip, comment='{"made_by": "someone"}')
    untagged = encode_wav(clip)
    assert tagged[:4] + tagged[8 : len(untagged)] == untagged[:4] + untagged[8:]
    (tmp_path / "tagged.wav").write_bytes(tagged)
    assert read_wav_comment(tmp_path / "tagged.wav") == '{"made_by": "someone"}'
    assert read_provenance(tmp_path / "tagged.wav").origin is Origin.RECORDING  # not our marker


def test_a_long_text_still_embeds_a_key_that_proves_it() -> None:
    from pytest_agent_eval.voice._fixtures import MAX_COMMENT_BYTES, Sidecar, embedded_comment
    from pytest_agent_eval.voice._provenance import parse_embedded

    text = "Please read this back to me. " * 120  # 3.5 KB: more than libsndfile reads back
    side = Sidecar(text=text, inputs={"backend": "hibari", "voice": "heart"})
    comment = embedded_comment(side, "ab" * 32)
    assert len(comment.encode()) <= MAX_COMMENT_BYTES
    record = parse_embedded(comment)
    assert record is not None and record.text is None
    assert record.made_from(text)
    assert not record.made_from(text + "!")
    wav = encode_wav(AudioClip(np.zeros(160, dtype=np.float32), 16000), comment=comment)
    assert len(wav) % 2 == 0


def test_a_wav_that_lost_its_sidecar_is_made_again_not_trusted(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9: such a WAV was taken for a recording and `--check` said "up to date"."""
    root = project()
    evals = root / "evals"
    (evals / "booking_t1.wav.hash").unlink()
    assert read_provenance(evals / "booking_t1.wav").origin is Origin.EMBEDDED

    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert (
        "stale     evals/booking_t1.wav: its sidecar is missing; the WAV carries this tool's" in out
    )
    # --check makes nothing, and says nothing it does not do.
    assert "is a fixture this tool made, to be synthesized again" in out
    assert "is synthesized again" not in out
    assert main([]) == 0
    assert "synthesized   evals/booking_t1.wav" in capsys.readouterr().out
    assert read_sidecar(evals / "booking_t1.wav") is not None
    assert main(["--check"]) == 0


def test_prune_removes_our_orphans_without_sidecar_but_never_a_recording(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    shutil.copy(evals / "booking_t1.wav", evals / "cached_copy.wav")  # ours, no sidecar
    as_recording(evals / "booking_t1.wav", evals / "recorded.wav")  # someone's recording
    assert main(["--check", "--prune"]) == 1
    out = capsys.readouterr().out
    assert "unreferenced  evals/cached_copy.wav" in out
    assert "recorded.wav" not in out
    assert main(["--prune"]) == 0
    assert not (evals / "cached_copy.wav").exists()
    assert (evals / "recorded.wav").exists()


# -- pause markers -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("user", "parts", "spoken"),
    [
        ("Yes.", [Phrase("Yes.")], "Yes."),
        (
            "Hi, this is Maria Lopez. I need a refill.",
            [Phrase("Hi, this is Maria Lopez."), Phrase("I need a refill.")],
            "Hi, this is Maria Lopez. I need a refill.",
        ),
        (
            "Hi, this is Maria. [pause 2s] I need a refill.",
            [Phrase("Hi, this is Maria."), Pause(2.0), Phrase("I need a refill.")],
            "Hi, this is Maria. I need a refill.",
        ),
        (
            "Um [PAUSE 500 ms] [pause .5s]  okay",
            [Phrase("Um"), Pause(1.0), Phrase("okay")],
            "Um okay",
        ),
        (
            "Set a reminder for Dr. Smith at 9:30 p.m. on the 15th.",
            [Phrase("Set a reminder for Dr. Smith at 9:30 p.m. on the 15th.")],
            "Set a reminder for Dr. Smith at 9:30 p.m. on the 15th.",
        ),
        ("  spaces  as   written ", [Phrase("spaces as written")], "  spaces  as   written "),
    ],
)
def test_phrases_pauses_and_spoken_text(user: str, parts: list[object], spoken: str) -> None:
    assert split_speech(user) == parts
    assert spoken_text(user) == spoken


@pytest.mark.parametrize(
    ("user", "message"),
    [
        ("Hi [pause two] there", "malformed pause marker '[pause two]': write [pause 2s] or"),
        ("Hi [pause 2s there", "malformed pause marker '[pause 2s there'"),
        ("Hi [pause] there", "malformed pause marker '[pause]'"),
        ("Hi [pause 0s] there", "a pause must be above 0 and at most 30 s"),
        ("Hi [pause 31s] there", "a pause must be above 0 and at most 30 s"),
        ("[pause 1s]", "the text is only pause markers"),
    ],
)
def test_a_malformed_pause_is_an_error(user: str, message: str) -> None:
    with pytest.raises(PauseMarkupError, match=message.replace("[", r"\[")):
        split_speech(user)
    with pytest.raises(PauseMarkupError):
        spoken_text(user)


def _silences(clip: AudioClip) -> list[tuple[float, float]]:
    """(start, length) of every run of silent 20 ms frames inside the speech."""
    voiced, n = voiced_frames(clip)
    gaps = []
    for a, b in itertools.pairwise(voiced):
        if b - a > 1:
            gaps.append(((a + 1) * n / clip.sample_rate, (b - a - 1) * n / clip.sample_rate))
    return gaps


def test_a_pause_marker_becomes_that_much_silence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "p.yaml").write_text(
        "id: p\nturns:\n"
        '  - user: "Hi, this is Maria. [pause 2s] I need a refill."\n    audio: p.wav\n'
        '  - user: "Hi, this is Maria. I need a refill."\n    audio: s.wav\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["p.yaml"]) == 0
    paused, plain = read_sidecar(tmp_path / "p.wav"), read_sidecar(tmp_path / "s.wav")
    assert [p.text for p in paused.phrases] == ["Hi, this is Maria.", "I need a refill."]
    assert paused.phrases[1].start_s - paused.phrases[0].end_s == pytest.approx(2.0, abs=0.01)
    assert plain.phrases[1].start_s - plain.phrases[0].end_s == pytest.approx(0.75, abs=0.01)
    # In the audio itself: the longest silence inside the speech is the 2 s pause, where the
    # sidecar says; the plain text gets the sentence pause.
    start, length = max(_silences(read_wav(tmp_path / "p.wav")), key=lambda g: g[1])
    assert length == pytest.approx(2.0, abs=0.1)
    assert start == pytest.approx(paused.phrases[0].end_s, abs=0.1)
    assert max(g[1] for g in _silences(read_wav(tmp_path / "s.wav"))) < 1.0


def test_a_malformed_pause_names_transcript_and_turn_everywhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The loader refuses the file (as for any bad transcript): nothing is synthesized, and the
    message names file:line, transcript, turn and field."""
    (tmp_path / "bad.yaml").write_text(
        "id: bad\nturns:\n"
        '  - user: "Hello."\n    audio: ok.wav\n'
        '  - user: "Hi. [pause two] Bye."\n    audio: bad.wav\n'
    )
    monkeypatch.chdir(tmp_path)
    expected = (
        "bad.yaml:5, transcript 'bad', turn 2, turns[1].user: malformed pause marker "
        "'[pause two]': write [pause 2s] or [pause 500ms] (a number, then s or ms)"
    )
    for argv in (["bad.yaml"], ["--check", "bad.yaml"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert expected in err and err.count("[pause two]") == 1
    assert not (tmp_path / "ok.wav").exists()
    assert not (tmp_path / "bad.wav").exists()


# -- fixtures of pytest-agent-eval 0.3 -----------------------------------------------------------


def _as_legacy(wav: Path, text: str) -> None:
    """Leave ``wav`` as pytest-agent-eval 0.3 did: a plain WAV and sha256(user.strip())."""
    as_recording(wav, wav)
    wav.with_name(wav.name + ".hash").write_text(
        hashlib.sha256(text.strip().encode("utf-8")).hexdigest() + "\n"
    )


def test_a_legacy_fixture_is_used_as_a_recording_of_its_text_until_forced(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    wav = evals / "booking_t1.wav"
    _as_legacy(wav, "Book me a table for 2 tomorrow at 10am.")
    legacy_bytes = wav.read_bytes()

    assert main(["--check"]) == 0
    out = capsys.readouterr().out
    assert (
        "note: evals/booking_t1.wav: made by pytest-agent-eval 0.3 (its .wav.hash holds only a "
        "hash of the text), used as a recording of that text; re-synthesize it with --force for "
        "full provenance"
    ) in out
    assert "unreadable" not in out
    assert main([]) == 0
    assert "synthesized" not in capsys.readouterr().out.split("Voice fixtures")[0]
    assert wav.read_bytes() == legacy_bytes
    assert main(["--force"]) == 0
    capsys.readouterr()
    assert read_provenance(wav).origin is Origin.SYNTHESIZED
    assert wav.read_bytes() != legacy_bytes


def test_a_legacy_fixture_whose_text_changed_is_stale(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    wav = root / "evals" / "booking_t2.wav"
    _as_legacy(wav, "Can you text me the confirmation?")  # the YAML says "email"
    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "stale     evals/booking_t2.wav: text changed (its sidecar is pytest-agent-eval" in out
    assert main([]) == 0
    assert read_provenance(wav).origin is Origin.SYNTHESIZED


# -- the duration cap ----------------------------------------------------------------------------


def test_max_fixture_s_is_validated() -> None:
    settings, _ = parse_settings({"max_fixture_s": 30}, rootdir=Path("."), source="pyproject")
    assert settings.max_fixture_s == 30
    for bad in (0, -1, float("nan"), "long"):
        with pytest.raises(ConfigError, match="max_fixture_s"):
            parse_settings({"max_fixture_s": bad}, rootdir=Path("."), source="pyproject")


def test_the_cap_applies_to_check_synthesis_and_verify(
    project: Callable[[], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    root = project()
    evals = root / "evals"
    (root / "pyproject.toml").write_text(
        '[tool.agent_eval]\nyaml_dirs = ["evals"]\nmax_fixture_s = 2.5\n'
    )
    # booking_t1 (2.8 s) is over the cap; booking_t3 becomes a 3-second recording.
    rec = evals / "audio" / "booking_t3.wav"
    (evals / "audio" / "booking_t3.wav.hash").unlink()
    with wave.open(str(rec), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.sin(np.arange(48000) / 5) * 8000).astype("<i2").tobytes())

    assert main(["--check"]) == 1
    out = capsys.readouterr().out
    assert "invalid   evals/booking_t1.wav: 2.8 s long, over the 2.5 s limit for a fixture" in out
    assert (
        "invalid   evals/audio/booking_t3.wav: a recording that is 3.0 s long, over the 2.5 s "
        "limit for a fixture; fix: use a shorter clip, or raise max_fixture_s" in out
    )

    (evals / "booking_t1.wav").unlink()
    assert main([]) == 1
    out = capsys.readouterr().out
    assert "the audio is 2.8 s long, over the 2.5 s limit for a fixture" in out
    assert not (evals / "booking_t1.wav").exists()


def test_verify_scores_the_spoken_words_and_reports_each_problem_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.agent_eval]\nmax_fixture_s = 3\n")
    (tmp_path / "v.yaml").write_text(
        "id: v\nturns:\n"
        '  - user: "Thank you. [pause 1s] Goodbye!"\n    audio: paused.wav\n'
        '  - user: "Yes."\n    audio: corrupt.wav\n'
        '  - user: "No."\n    audio: long.wav\n'
    )
    monkeypatch.chdir(tmp_path)
    assert main(["v.yaml"]) == 0
    capsys.readouterr()
    (tmp_path / "corrupt.wav.hash").unlink()
    (tmp_path / "corrupt.wav").write_bytes(b"RIFF junk, not audio")
    (tmp_path / "long.wav.hash").unlink()
    with wave.open(str(tmp_path / "long.wav"), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.sin(np.arange(16000 * 4) / 5) * 8000).astype("<i2").tobytes())

    assert main(["--check", "--verify", "v.yaml"]) == 1
    out = capsys.readouterr().out
    rows = {line.split()[3]: line for line in out.splitlines() if line.startswith(("ok", "FAIL"))}
    assert rows["paused.wav"].startswith("ok    WER 0.00")  # the words, not "[pause 1s]"
    assert "is not readable audio" in rows["corrupt.wav"]
    assert "re-record or replace it" in rows["corrupt.wav"]
    assert "--force" not in rows["corrupt.wav"]
    assert "is 4.0 s long, over the 3 s limit" in rows["long.wav"]
    assert out.count("is not readable audio") == 2  # once in --check, once in --verify
    json.dumps(out)  # plain text


def test_the_cap_comes_from_pyproject_in_pytest(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\nmax_fixture_s = 1\n')
    pytester.makeconftest(
        "import pytest\n"
        "from pytest_agent_eval import AgentReply\n"
        "class C:\n"
        "    async def respond(self, turn):\n"
        "        return AgentReply('ok')\n"
        "    async def aclose(self):\n"
        "        pass\n"
        "class A:\n"
        "    consumes_audio = True\n"
        "    async def start_conversation(self, info):\n"
        "        return C()\n"
        "@pytest.fixture\n"
        "def llm_eval_agent():\n"
        "    return A()\n"
    )
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "r.yaml").write_text('id: r\nturns:\n  - user: "Hello."\n    audio: r.wav\n')
    with wave.open(str(evals / "r.wav"), "wb") as w:  # a 2-second recording
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes((np.sin(np.arange(32000) / 5) * 8000).astype("<i2").tobytes())
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*audio fixture evals/r.wav is invalid (a recording that is 2.0 s long, over the 1 s*"]
    )
    # The failure sections only: pytest repeats each message in its one-line short summary,
    # cut to the terminal width (whole on a wide terminal).
    assert result.stdout.str().split("short test summary info")[0].count("over the 1 s limit") == 1
