"""examples/voice-livekit-realtime through real pytest runs: it passes as shipped, a broken
expectation fails, and a realtime agent that cannot hear is an ERROR saying why, never a FAIL."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
from strict_session import STRICT, assert_clean_exit, set_config_speed, streamed_speeds

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-livekit-realtime"


@pytest.fixture(scope="session")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its fixtures synthesized (once per session), as run_demo.sh does."""
    target = tmp_path_factory.mktemp("example") / "voice-livekit-realtime"
    shutil.copytree(EXAMPLE_DIR, target, ignore=shutil.ignore_patterns("audio", "__pycache__"))
    transcripts = [load_transcript_file(p) for p in sorted((target / "evals").glob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return target


@pytest.fixture
def project(pytester: pytest.Pytester, example_copy: Path) -> pytest.Pytester:
    shutil.copytree(example_copy, pytester.path, dirs_exist_ok=True)
    return pytester


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


def test_example_passes_live(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*front_desk_taxi*3*3*PASS*", "*2/2 evals passed*"])


def test_a_wrong_tool_argument_fails_the_eval(project: pytest.Pytester) -> None:
    _edit(project.path / "evals" / "front_desk.yaml", "args: {room: double}", "args: {room: suite}")
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*front_desk_taxi*FAIL*"])


def test_a_model_that_cannot_hear_is_an_error_naming_the_turn_and_the_fix(
    project: pytest.Pytester,
) -> None:
    _edit(
        project.path / "front_desk_agent.py",
        "        instructions=INSTRUCTIONS,\n        **options,\n    )",
        "        instructions=INSTRUCTIONS,\n        hearing=None,\n    )",
    )
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    output = result.stdout.str()
    assert "FAIL " not in output.replace("FAILED", "")
    result.stdout.fnmatch_lines(["*front_desk_taxi*ERROR*"])
    assert "turn 1 is an audio turn" in output
    assert "hearing=FixtureTextSTT()" in output and "hearing=WhisperSTT()" in output


def test_a_fixture_without_provenance_is_an_error_pointing_to_whisper(
    project: pytest.Pytester,
) -> None:
    import soundfile as sf

    # Re-encoded, the WAV keeps its audio and loses what proves its text.
    wav = project.path / "evals" / "audio" / "front_desk_t1.wav"
    data, rate = sf.read(wav, dtype="int16")
    copy = wav.with_name("recorded.wav")
    sf.write(copy, data, rate, subtype="PCM_16")
    _edit(
        project.path / "evals" / "front_desk.yaml", "audio/front_desk_t1.wav", "audio/recorded.wav"
    )
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    output = result.stdout.str()
    result.stdout.fnmatch_lines(["*front_desk_taxi*ERROR*"])
    assert "turn 1" in output and "WhisperSTT" in output


def test_the_speed_option_reaches_the_model_and_nothing_outlives_it(
    project: pytest.Pytester,
) -> None:
    """Issue 32: ``--agent-eval-speed`` reaches an agent on a realtime model (the command line
    winning over the config), and a strict run (-W error) exits 0 with nothing the package
    opened left to the garbage collector."""
    set_config_speed(project.path / "pyproject.toml", "0")
    result = project.runpytest_subprocess(
        *STRICT,
        *("--agent-eval-live", "--agent-eval-runs", "1", "--agent-eval-speed", "realtime"),
        *("--agent-eval-results=r.json", "evals/front_desk.yaml"),
    )
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)
    assert streamed_speeds(project.path / "r.json") == {1.0}
