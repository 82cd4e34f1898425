"""Voice transcripts with missing or stale fixtures, through real pytest runs.

The adapter in these projects is a real `AgentAdapter` that consumes audio: it reads the WAV
it is handed (so a run only passes when the fixture exists) and answers with its duration.
"""

from __future__ import annotations

import sys
import textwrap

import pytest

pytest.importorskip(
    "hibari", reason="needs the voice extra: pip install 'pytest-agent-eval[voice]'"
)

CONFTEST = textwrap.dedent(
    """
    import pytest
    from pytest_agent_eval import AgentReply
    from pytest_agent_eval.voice._fixtures import read_wav


    class ListeningConversation:
        async def respond(self, turn):
            if turn.audio is None:
                return AgentReply("text turn: " + turn.text)
            clip = read_wav(turn.audio)
            return AgentReply(f"heard {clip.duration_s:.1f} seconds", heard=turn.text)

        async def aclose(self):
            return None


    class ListeningAdapter:
        consumes_audio = True

        async def start_conversation(self, info):
            return ListeningConversation()


    @pytest.fixture
    def llm_eval_agent():
        return ListeningAdapter()
    """
)

TRANSCRIPT = textwrap.dedent(
    """\
    id: greet
    turns:
      - user: "Hello there, I would like a table."
        audio: audio/greet.wav
        expect:
          reply_contains_any: ["seconds"]
          heard_contains_any: ["table"]
      - user: "Thanks."
        expect:
          reply_contains_any: ["text turn"]
    """
)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "greet.yaml").write_text(TRANSCRIPT)
    return pytester


def test_missing_fixture_fails_before_the_conversation_with_the_fix_command(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            # The first line says what is wrong: pytest's short summary shows it.
            "audio fixtures not ready: 1 missing (evals/audio/greet.wav)",
            "*evals/greet.yaml:*: transcript 'greet', turn 1: audio fixture *greet.wav is missing*"
            "Fix: python -m pytest_agent_eval.synthesize_audio *evals/greet.yaml",
            "*--agent-eval-stale-audio=synthesize*",
        ]
    )
    # The failure sections only: pytest repeats each message in its one-line short summary,
    # cut to the terminal width (whole on a wide terminal).
    assert result.stdout.str().split("short test summary info")[0].count("is missing") == 1
    result.stdout.fnmatch_lines(
        ["ERROR evals/greet.yaml::greet - Failed: audio fixtures not ready: 1 missing*"]
    )
    result.stdout.no_fnmatch_line("*heard * seconds*")
    result.stdout.no_fnmatch_line("*During handling of the above exception*")


def test_skip_mode_skips_with_the_reason(project: pytest.Pytester) -> None:
    result = project.runpytest("--agent-eval-live", "--agent-eval-stale-audio=skip", "-rs")
    result.assert_outcomes(skipped=1)
    # The skip points at the transcript (its first line), not at pytest's own source.
    result.stdout.fnmatch_lines(["SKIPPED [[]1] evals/greet.yaml:1: audio fixtures not ready*"])
    assert "_pytest" not in result.stdout.str()


def test_synthesize_mode_makes_the_fixture_then_runs_and_stale_text_is_caught(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest("--agent-eval-live", "--agent-eval-stale-audio=synthesize")
    result.assert_outcomes(passed=1)
    wav = project.path / "evals" / "audio" / "greet.wav"
    assert wav.is_file()
    assert (project.path / "evals" / "audio" / "greet.wav.hash").is_file()

    # The text changes: the fixture is now stale and the default mode says why.
    (project.path / "evals" / "greet.yaml").write_text(
        TRANSCRIPT.replace("Hello there, I would like a table.", "Hi, a table for two please.")
    )
    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*greet.wav is stale (*text*"])


def test_text_adapters_ignore_audio(project: pytest.Pytester) -> None:
    project.makeconftest(
        textwrap.dedent(
            """
            import pytest

            @pytest.fixture
            def llm_eval_agent():
                def agent(history):
                    return "text turn, heard 3 seconds" if history[-1].audio else "text turn"
                return agent
            """
        )
    )
    (project.path / "evals" / "greet.yaml").write_text(
        TRANSCRIPT.replace('      heard_contains_any: ["table"]\n', "")
    )
    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(passed=1)


def test_replay_trusts_recorded_fixtures_across_engine_versions_and_missing_engines(
    project: pytest.Pytester,
) -> None:
    """CI replays committed fixtures: a newer engine version, or no engine at all, is fine."""
    import json

    from pytest_agent_eval.voice._fixtures import fixture_key

    result = project.runpytest("--agent-eval-live", "--agent-eval-stale-audio=synthesize")
    result.assert_outcomes(passed=1)
    sidecar = project.path / "evals" / "audio" / "greet.wav.hash"
    data = json.loads(sidecar.read_text())
    data["inputs"]["backend_version"] = "0.0.1-older"
    data["inputs"]["backend"] = "acme-tts"  # an engine this machine does not have
    # As that engine's synthesizer would have written it: the key sums up text and inputs.
    data["key"] = fixture_key(data["text"], data["inputs"], format_version=data["format"])
    sidecar.write_text(json.dumps(data))
    (project.path / "evals" / "greet.yaml").write_text(
        TRANSCRIPT.replace("turns:\n", "voice: {backend: acme-tts}\nturns:\n", 1)
    )

    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(passed=1)

    # The strict audit still tells the truth about it.
    check = project.run(
        sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "--check", "evals"
    )
    assert check.ret != 0
    check.stdout.fnmatch_lines(["*acme-tts*"])

    # A voice the transcript asks for explicitly must match what was recorded.
    (project.path / "evals" / "greet.yaml").write_text(
        TRANSCRIPT.replace("turns:\n", "voice: {backend: acme-tts, voice: joe}\nturns:\n", 1)
    )
    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*greet.wav is stale (voice changed: 'heart' -> 'joe')*"])


def test_a_broken_recording_fails_once_with_a_fix_for_a_recording(
    project: pytest.Pytester,
) -> None:
    """Issue 9: the fix printed was `synthesize_audio --force` (which never touches a
    recording), and the message came 4-5 times as a chain of exceptions."""
    audio = project.path / "evals" / "audio"
    audio.mkdir()
    (audio / "greet.wav").write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt not really a wav")
    for mode in ("fail", "synthesize"):  # synthesizing leaves a recording alone
        result = project.runpytest("--agent-eval-live", f"--agent-eval-stale-audio={mode}")
        result.assert_outcomes(errors=1)
        # The failure sections only: pytest repeats each message in its one-line short summary,
        # cut to the terminal width (whole on a wide terminal).
        out = result.stdout.str().split("short test summary info")[0]
        assert out.count("is not readable audio") == 1, mode
        assert out.count("re-record or replace it") == 1
        assert "--force" not in out
        # Synthesizing cannot fix a recording: no hint to try it.
        assert "--agent-eval-stale-audio=synthesize" not in out
        assert "The above exception was the direct cause" not in out
        assert "During handling of the above exception" not in out


def test_a_fixture_of_the_earlier_package_is_used_with_a_note(
    project: pytest.Pytester,
) -> None:
    """pytest-agent-eval 0.3 left a plain WAV and a bare sha256 of the stripped text."""
    import hashlib

    result = project.runpytest("--agent-eval-live", "--agent-eval-stale-audio=synthesize")
    result.assert_outcomes(passed=1)
    wav = project.path / "evals" / "audio" / "greet.wav"
    import soundfile

    data, rate = soundfile.read(str(wav), dtype="int16")
    soundfile.write(str(wav), data, rate, subtype="PCM_16")  # no provenance inside
    digest = hashlib.sha256(b"Hello there, I would like a table.").hexdigest()
    (wav.parent / "greet.wav.hash").write_text(digest + "\n")

    # A note, not a Python warning: a project with filterwarnings = ["error"] (here -W error)
    # runs, and the note is in the terminal summary, the reports and the results file.
    result = project.runpytest(
        "--agent-eval-live",
        "-W",
        "error",
        "--agent-eval-report=r.md",
        "--agent-eval-results=r.json",
    )
    result.assert_outcomes(passed=1)
    out = result.stdout.str()
    assert "FixtureNoteWarning" not in out and "warnings summary" not in out
    result.stdout.fnmatch_lines(["note: greet: *made by pytest-agent-eval 0.3*"])
    assert "unreadable" not in out
    assert "- Note: " in (project.path / "r.md").read_text(encoding="utf-8")
    import json

    (entry,) = json.loads((project.path / "r.json").read_text())["evals"]
    assert any("made by pytest-agent-eval 0.3" in n for n in entry["notes"])

    (project.path / "evals" / "greet.yaml").write_text(
        TRANSCRIPT.replace("Hello there, I would like a table.", "Hi, a table for two please.")
    )
    result = project.runpytest("--agent-eval-live")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*greet.wav is stale (text changed (its sidecar is pytest-agent*"])
