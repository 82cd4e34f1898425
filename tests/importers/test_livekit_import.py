"""`agent-eval import livekit` on the report and recording of a real call: what it writes,
that it writes the same bytes every time, and how it treats bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from call_support import RecordedCall

from pytest_agent_eval.__main__ import main
from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.voice._fixtures import Origin, judge_fixture, read_wav


def run_import(*args: str | Path) -> int:
    return main(["import", "livekit", *(str(a) for a in args)])


def report_data(call: RecordedCall) -> dict[str, Any]:
    return json.loads(call.report.read_text())


def write_report(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data))
    return path


def user_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in data["chat_history"]["items"] if i.get("role") == "user"]


def agent_messages(data: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in data["chat_history"]["items"] if i.get("role") == "assistant"]


def files_of(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_the_same_input_gives_byte_identical_files(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder in ("a", "b"):
        assert (
            run_import(
                recorded_call.report, "--recording", recorded_call.recording,
                "--out", tmp_path / folder / "call.yaml",
            )
            == 0
        )  # fmt: skip
    first, second = files_of(tmp_path / "a"), files_of(tmp_path / "b")
    assert sorted(first) == ["call.yaml", "call_t1.wav", "call_t2.wav"]
    assert first == second
    # Once more over the first: everything is already there, byte for byte.
    capsys.readouterr()
    assert run_import(
        recorded_call.report, "--recording", recorded_call.recording, "--out", tmp_path / "a" / "call.yaml"
    ) == 0  # fmt: skip
    out = capsys.readouterr().out
    assert out.count("unchanged") == 3 and "written" not in out
    assert files_of(tmp_path / "a") == first


def test_cut_fixtures_are_recordings_with_their_wer_printed_and_recorded(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "evals" / "call.yaml"
    assert (
        run_import(recorded_call.report, "--recording", recorded_call.recording, "--out", out) == 0
    )
    printed = capsys.readouterr().out
    transcript = load_transcript_file(out)
    spoken = [t.user for t in transcript.turns]
    assert [m["content"][0] for m in user_messages(report_data(recorded_call))] == spoken
    for number, turn in enumerate(transcript.turns, 1):
        wav = out.parent / f"call_t{number}.wav"
        assert turn.audio is not None and Path(turn.audio) == wav.resolve()
        verdict = judge_fixture(wav, turn.user)
        # No sidecar and no key of ours inside: a recording, used as it is, never re-made.
        assert verdict.origin is Origin.RECORDING and verdict.state.value == "up to date"
        assert not wav.with_name(wav.name + ".hash").exists()
        clip = read_wav(wav)
        assert clip.sample_rate == 16000 and 1.0 < clip.duration_s < 8.0
        assert f"cut    turn {number}" in printed
    # The WER is printed per cut and recorded in the transcript beside its turn.
    assert printed.count("WER 0.") + printed.count("WER 1.") == 2
    text = out.read_text()
    assert text.count("against the report's transcription") == 2
    assert "hears 'What name is the booking under?' in it: WER 0.00" in text
    # --check agrees: the recordings are up to date, nothing to synthesize.
    check = subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "--check", str(out)],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert check.returncode == 0, check.stdout + check.stderr
    assert "up to date" in check.stdout


def test_the_drafts_are_marked_and_no_expect_drafts_none(
    recorded_call: RecordedCall, tmp_path: Path
) -> None:
    drafted, bare = tmp_path / "drafted.yaml", tmp_path / "bare.yaml"
    assert run_import(recorded_call.report, "--out", drafted) == 0
    assert run_import(recorded_call.report, "--out", bare, "--no-expect") == 0
    first = load_transcript_file(drafted)
    args = first.turns[0].expect.tool_calls_args
    assert [(a.tool, a.args, a.mode) for a in args] == [
        ("book_table", {"party_size": 2, "time": "19:00", "name": "Alice"}, "subset")
    ]
    assert [(o.tool, o.status) for o in first.turns[0].expect.tool_calls_outcome] == [
        ("book_table", "ok")
    ]
    assert "BK-101" in first.turns[0].expect.reply_contains_all
    assert first.turns[1].expect.reply_contains_all == ["Alice"]
    assert first.greeting is not None and first.greeting.contains_all == ["Chez Pytest"]
    text = drafted.read_text()
    # Every drafted key sits under a comment saying it is a draft.
    lines = text.splitlines()
    for key in ("tool_calls_args:", "tool_calls_outcome:", "reply_contains_all:", "greeting:"):
        for at, line in enumerate(lines):
            if line.strip().startswith(key):
                above = at - 1
                while lines[above - 1].lstrip().startswith("#"):
                    above -= 1
                assert lines[above].lstrip().startswith("# draft:"), (key, lines[above])
    assert "#   rubric:" in text  # the judge draft, commented out
    plain = load_transcript_file(bare)
    assert plain.greeting is None
    assert all(t.expect == type(t.expect)() for t in plain.turns)
    assert "draft" not in bare.read_text()


def test_a_judge_draft_instead_of_terms(recorded_call: RecordedCall, tmp_path: Path) -> None:
    out = tmp_path / "judged.yaml"
    assert run_import(recorded_call.report, "--out", out, "--reply", "judge") == 0
    turn = load_transcript_file(out).turns[1]
    assert turn.expect.judge is not None
    assert "The booking is under Alice." in turn.expect.judge.rubric
    assert turn.expect.reply_contains_all == []


def test_without_a_recording_the_turns_are_left_to_the_synthesizer(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "call.yaml"
    assert run_import(recorded_call.report, "--out", out) == 0
    printed = capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.iterdir()) == ["call.yaml"]
    assert "python -m pytest_agent_eval.synthesize_audio" in printed
    made = subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", str(out)],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    for number in (1, 2):
        wav = tmp_path / f"call_t{number}.wav"
        assert judge_fixture(wav, load_transcript_file(out).turns[number - 1].user).origin is (
            Origin.SYNTHESIZED
        )


# -- bad input: a clear message naming the turn, a warning where the transcript can be written,
# -- and never a file written on an error


def assert_nothing_written(folder: Path) -> None:
    assert not folder.exists() or not any(folder.iterdir())


def test_an_unsupported_sdk_version_is_refused(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_data(recorded_call)
    data["sdk_version"] = "2.0.1"
    report = write_report(data, tmp_path / "report.json")
    assert run_import(report, "--out", tmp_path / "out" / "call.yaml") == 2
    err = capsys.readouterr().err
    assert "a report of livekit-agents 2.0.1, whose layout this importer does not know" in err
    assert "1.x" in err
    assert_nothing_written(tmp_path / "out")


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        (lambda d: d.pop("sdk_version"), "no sdk_version, so this is not a LiveKit session report"),
        (lambda d: d.pop("chat_history"), "has no chat_history.items"),
        (
            lambda d: d["chat_history"].__setitem__(
                "items", [i for i in d["chat_history"]["items"] if i.get("role") != "user"]
            ),
            "the session report has no user message",
        ),
    ],
    ids=["no-version", "no-history", "no-user-turns"],
)
def test_a_report_without_turns_is_refused(
    recorded_call: RecordedCall,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    edit: Any,
    says: str,
) -> None:
    data = report_data(recorded_call)
    edit(data)
    report = write_report(data, tmp_path / "report.json")
    assert (
        run_import(
            report, "--recording", recorded_call.recording, "--out", tmp_path / "out" / "c.yaml"
        )
        == 2
    )
    assert says in capsys.readouterr().err
    assert_nothing_written(tmp_path / "out")


def test_not_json_and_not_audio_are_refused(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "report.json"
    broken.write_text('{"sdk_version": "1.8.9",')
    assert run_import(broken, "--out", tmp_path / "out" / "c.yaml") == 2
    assert f"{broken}:1: not JSON" in capsys.readouterr().err
    noise = tmp_path / "audio.ogg"
    noise.write_text("not audio")
    assert (
        run_import(recorded_call.report, "--recording", noise, "--out", tmp_path / "out" / "c.yaml")
        == 2
    )
    assert "not an audio file soundfile can read" in capsys.readouterr().err
    assert_nothing_written(tmp_path / "out")


def test_a_recording_shorter_than_the_timeline_leaves_its_late_turns_to_the_synthesizer(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import soundfile

    data = report_data(recorded_call)
    first_end = user_messages(data)[0]["metrics"]["stopped_speaking_at"]
    cut_at = first_end - data["audio_recording_started_at"] + 1.0
    audio, rate = soundfile.read(str(recorded_call.recording), dtype="float32")
    short = tmp_path / "short.ogg"
    soundfile.write(str(short), audio[: int(cut_at * rate)], rate, format="OGG", subtype="OPUS")
    out = tmp_path / "out" / "call.yaml"
    assert run_import(recorded_call.report, "--recording", short, "--out", out) == 0
    captured = capsys.readouterr()
    assert "shorter than the report's timeline" in captured.err
    assert "warning: turn 2: the user spoke at" in captured.err
    assert "past the end of the recording" in captured.err
    assert sorted(p.name for p in out.parent.iterdir()) == ["call.yaml", "call_t1.wav"]
    assert "synth  turn 2" in captured.out
    assert "call_t2.wav is synthesized from the text" in out.read_text()


def test_overlapping_speech_and_a_silent_window_are_warnings_naming_the_turn(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_data(recorded_call)
    reply = agent_messages(data)[1]["metrics"]  # the agent's answer to turn 1
    second = user_messages(data)[1]["metrics"]
    # Turn 2 "spoken" while the agent was answering turn 1: the user channel is silent there.
    second["started_speaking_at"] = reply["started_speaking_at"] + 1.0
    second["stopped_speaking_at"] = reply["started_speaking_at"] + 2.5
    report = write_report(data, tmp_path / "report.json")
    out = tmp_path / "out" / "call.yaml"
    assert run_import(report, "--recording", recorded_call.recording, "--out", out) == 0
    err = capsys.readouterr().err
    assert "warning: turn 2: the user spoke over the agent" in err
    assert "warning: turn 2: no audio in its window" in err
    assert "turn 1" not in err
    assert sorted(p.name for p in out.parent.iterdir()) == ["call.yaml", "call_t1.wav"]
    text = out.read_text()
    assert "# warning: no audio in its window" in text  # the reviewer sees it beside the turn


def test_a_turn_without_speaking_times_is_synthesized(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_data(recorded_call)
    user_messages(data)[0]["metrics"] = {}
    report = write_report(data, tmp_path / "report.json")
    out = tmp_path / "out" / "call.yaml"
    assert run_import(report, "--recording", recorded_call.recording, "--out", out) == 0
    assert "warning: turn 1: the report has no speaking times" in capsys.readouterr().err
    assert sorted(p.name for p in out.parent.iterdir()) == ["call.yaml", "call_t2.wav"]


def test_a_report_of_a_session_that_did_not_record_refuses_the_recording(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_data(recorded_call)
    data["audio_recording_started_at"] = None
    report = write_report(data, tmp_path / "report.json")
    assert (
        run_import(
            report, "--recording", recorded_call.recording, "--out", tmp_path / "o" / "c.yaml"
        )
        == 2
    )
    assert "has no audio_recording_started_at" in capsys.readouterr().err
    assert_nothing_written(tmp_path / "o")


def test_an_edited_import_is_not_replaced_without_force(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "call.yaml"
    args = (recorded_call.report, "--recording", recorded_call.recording, "--out", out, "--no-wer")
    assert run_import(*args) == 0
    reviewed = out.read_text().replace("reply_contains_all: [Alice]", "reply_contains_any: [Alice]")
    out.write_text(reviewed)
    wav_before = (tmp_path / "call_t1.wav").read_bytes()
    capsys.readouterr()
    assert run_import(*args) == 1
    err = capsys.readouterr().err
    assert f"nothing written: {out} exists with other content" in err and "--force" in err
    assert out.read_text() == reviewed and (tmp_path / "call_t1.wav").read_bytes() == wav_before
    assert run_import(*args, "--force") == 0
    assert out.read_text() != reviewed


def test_the_wrong_channel_is_silent_where_the_user_spoke(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "call.yaml"
    args = ("--recording", recorded_call.recording, "--out", out, "--user-channel", "right")
    assert run_import(recorded_call.report, *args) == 0
    err = capsys.readouterr().err
    # The agent's channel is quiet while the user speaks: no turn can be cut from it.
    assert "warning: turn 1: no audio in its window" in err
    assert "warning: turn 2: no audio in its window" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["call.yaml"]


def test_a_cut_whisper_hears_otherwise_is_a_warning(
    recorded_call: RecordedCall, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = report_data(recorded_call)
    user_messages(data)[1]["content"] = ["Cancel every booking I have made this year."]
    report = write_report(data, tmp_path / "report.json")
    out = tmp_path / "out" / "call.yaml"
    assert run_import(report, "--recording", recorded_call.recording, "--out", out) == 0
    err = capsys.readouterr().err
    assert "warning: turn 2: Whisper hears 'What name is the booking under?' in the cut" in err
    assert "against the report's 'Cancel every booking I have made this year.'" in err
    assert "warning: turn 1" not in err
    text = out.read_text()
    assert "# warning: Whisper hears" in text and "WER 0.00 against" in text  # turn 1 is fine


def test_without_out_the_transcript_goes_under_the_first_yaml_dir(
    recorded_call: RecordedCall,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    monkeypatch.chdir(tmp_path)
    assert run_import(recorded_call.report) == 0
    written = tmp_path / "evals" / "imported" / "call_in-process-call.yaml"
    assert load_transcript_file(written).id == "call_in-process-call"
    assert "pytest --agent-eval-live -k call_in-process-call" in capsys.readouterr().out
    # A folder as --out takes the same file name; --id names the transcript.
    assert run_import(recorded_call.report, "--out", "calls/", "--id", "booking call") == 0
    assert (
        load_transcript_file(tmp_path / "calls" / "call_in-process-call.yaml").id == "booking call"
    )
    assert run_import(recorded_call.report, "--out", "calls/call.txt") == 2
    assert "a transcript is a .yaml or .yml file" in capsys.readouterr().err
