"""The LiveKit example and YAML transcripts through pytest itself (pytester subprocesses)."""

from __future__ import annotations

import hashlib
import shutil
import wave
from pathlib import Path

import pytest
from livekit_support import EXAMPLE_DIR

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
from strict_session import STRICT, assert_clean_exit, set_config_speed, streamed_speeds

FAST = ("--agent-eval-live", "--agent-eval-runs", "1", "-p", "no:cacheprovider")
"""Live, one run per transcript: enough where only a failure's message is checked."""


@pytest.fixture(scope="session")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its fixtures synthesized (once per session), as run_demo.sh does."""
    target = tmp_path_factory.mktemp("example") / "voice-livekit"
    shutil.copytree(EXAMPLE_DIR, target, ignore=shutil.ignore_patterns("audio", "__pycache__"))
    transcripts = [load_transcript_file(p) for p in sorted((target / "evals").glob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return target


@pytest.fixture
def project(pytester: pytest.Pytester, example_copy: Path) -> pytest.Pytester:
    shutil.copytree(example_copy, pytester.path, dirs_exist_ok=True)
    return pytester


def test_example_passes_live(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*booking_remembered*3*3*PASS*", "*2/2 evals passed*"])


def test_example_is_skipped_without_live(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)


def test_lost_context_fails_with_the_reply_shown(project: pytest.Pytester) -> None:
    evals = project.path / "evals"
    text = (evals / "booking.yaml").read_text()
    # Same audio, but the name question now comes first: nothing to remember yet.
    (evals / "booking.yaml").unlink()
    (evals / "forgetful.yaml").write_text(
        text.replace("id: booking_remembered", "id: forgetful").replace(
            "turns:\n",
            'turns:\n  - user: "What name is the booking under?"\n'
            "    audio: audio/booking_t3.wav\n"
            '    expect:\n      reply_contains_any: ["Alice"]\n',
            1,
        )
    )
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*turn 1 ?FAIL? user: 'What name is the booking under?'",
            '*reply: "I don\'t have a booking for you yet."',
            "*heard (WER 0.00): 'What name is the booking under?'",
        ]
    )


def test_missing_fixture_fails_before_the_agent_runs(project: pytest.Pytester) -> None:
    (project.path / "evals" / "audio" / "hello_44k.wav").unlink()
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*audio fixture evals/audio/hello_44k.wav is missing*"])
    assert "Hello! How can I help" not in result.stdout.str()


SILENT_CONFTEST = """
import asyncio

import pytest
from booking_agent import make_session, RestaurantAgent

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


class SilentAgent(RestaurantAgent):
    async def llm_node(self, chat_ctx, tools, model_settings):
        await asyncio.Event().wait()  # the model never answers
        yield ""


@pytest.fixture
def llm_eval_agent():
    def factory():
        session, _ = make_session()
        return session, SilentAgent()

    return LiveKitAdapter(factory, timeout_s=3.0)
"""

SILENT_YAML = """
id: silent_agent
turns:
  - user: "What name is the booking under?"
    audio: ../audio/booking_t3.wav
"""


def test_an_agent_that_never_answers_fails_with_the_reason(project: pytest.Pytester) -> None:
    folder = project.path / "evals" / "silent"
    folder.mkdir()
    (folder / "conftest.py").write_text(SILENT_CONFTEST)
    (folder / "silent.yaml").write_text(SILENT_YAML)
    result = project.runpytest_subprocess(*FAST, "evals/silent")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*turn 1: no result within timeout_s=3 s; still waiting for SilentAgent's reply to "
            "be generated (the LLM;*"
        ]
    )


DIRECT_TESTS = """
import asyncio

from booking_agent import RestaurantAgent, make_session

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.models import Transcript, Turn


class SilentAgent(RestaurantAgent):
    async def llm_node(self, chat_ctx, tools, model_settings):
        await asyncio.Event().wait()  # the model never answers
        yield ""


def silent_session():
    session, _ = make_session()
    return session, SilentAgent()


def test_prepare_of_a_missing_fixture():
    script = Transcript(id="direct", turns=[Turn("hi", audio="evals/audio/gone.wav")])
    asyncio.run(LiveKitAdapter(make_session).prepare(script))


def test_a_turn_that_times_out():
    script = Transcript(id="direct", turns=[Turn("What name is the booking under?")])

    async def converse():
        adapter = LiveKitAdapter(silent_session, timeout_s=2.0)
        info = ConversationInfo(transcript=script, run_index=0)
        conversation = await adapter.start_conversation(info)
        try:
            await conversation.respond(TurnInput(turn=script.turns[0], index=0))
        finally:
            await conversation.aclose()

    asyncio.run(converse())
"""


def test_adapter_errors_are_said_once_without_a_chain(project: pytest.Pytester) -> None:
    """Issue 9: the same message came 4-5 times as a chain of exceptions. Raised straight from
    the adapter (as a Python test using it directly sees them), each is one message."""
    (project.path / "test_direct.py").write_text(DIRECT_TESTS)
    result = project.runpytest_subprocess("-p", "no:cacheprovider", "test_direct.py")
    result.assert_outcomes(failed=2)
    # The failure sections only: pytest repeats each message in its one-line short summary,
    # cut to the terminal width (whole on a wide terminal).
    out = result.stdout.str().split("short test summary info")[0]
    assert "The above exception was the direct cause" not in out
    assert "During handling of the above exception" not in out
    assert out.count("audio fixture evals/audio/gone.wav does not exist") == 1
    assert out.count("no result within timeout_s=2 s") == 1
    result.stdout.fnmatch_lines(
        [
            "E * pytest_agent_eval.errors.AudioFixtureError: transcript 'direct', turn 1: audio "
            "fixture evals/audio/gone.wav does not exist. *",
            "E * pytest_agent_eval.errors.AgentTimeoutError: turn 1: no result within timeout_s=2 s; "
            "still waiting for SilentAgent's reply to be generated *",
        ]
    )


def test_the_speed_option_reaches_the_session_and_nothing_outlives_it(
    project: pytest.Pytester,
) -> None:
    """Issue 32: one option for streaming speed (the command line wins over the config, which
    wins over the adapter's argument), and a strict run (-W error) exits 0 with nothing the
    package opened left to the garbage collector."""
    set_config_speed(project.path / "pyproject.toml", '"max"')
    result = project.runpytest_subprocess(
        *STRICT,
        *("--agent-eval-live", "--agent-eval-runs", "1", "--agent-eval-speed", "2"),
        "--agent-eval-results=r.json",
    )
    assert_clean_exit(result)
    result.assert_outcomes(passed=2)
    assert streamed_speeds(project.path / "r.json") == {2.0}


def test_a_bad_speed_is_a_usage_error_naming_the_values(project: pytest.Pytester) -> None:
    set_config_speed(project.path / "pyproject.toml", '"fast"')
    result = project.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: *pyproject.toml*'speed' must be 'max' (or 0: as fast as the agent "
            "takes the audio), 'realtime' (or 1) or a number between 0 and 100 that scales real "
            "time (2 is twice as fast), got 'fast'"
        ]
    )


WHISPER_CONFTEST = """
import pytest


@pytest.fixture
def llm_eval_agent():
    from booking_agent import make_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, WhisperSTT

    return LiveKitAdapter(lambda: make_session(stt=WhisperSTT()), timeout_s=20.0)
"""


def test_a_recording_heard_by_whisper_leaves_nothing_behind(project: pytest.Pytester) -> None:
    """Issue 32: a fixture made by the earlier 0.3 package (a bare-hash sidecar, no key in the
    WAV: heard as a recording) and heard by Whisper passed, then the session ended in an
    exception group under -W error ("unclosed event loop", an unclosed socket pair)."""
    audio = project.path / "evals" / "audio"
    for transcript in map(load_transcript_file, sorted((project.path / "evals").glob("*.yaml"))):
        for turn in transcript.turns:
            if turn.audio is None:
                continue
            wav = project.path / "evals" / turn.audio
            with wave.open(str(wav)) as source:  # the samples alone, as 0.3 wrote them
                params, frames = source.getparams(), source.readframes(source.getnframes())
            with wave.open(str(wav), "wb") as target:
                target.setparams(params)
                target.writeframes(frames)
            digest = hashlib.sha256(turn.user.strip().encode("utf-8")).hexdigest()
            wav.with_name(wav.name + ".hash").write_text(digest + "\n")
    assert sorted(p.name for p in audio.glob("*.hash")) == [
        "booking_t1.wav.hash",
        "booking_t3.wav.hash",
        "hello_44k.wav.hash",
    ]
    (project.path / "conftest.py").write_text(WHISPER_CONFTEST)

    result = project.runpytest_subprocess(
        *STRICT, "--agent-eval-live", "--agent-eval-runs", "1", "evals/greeting.yaml"
    )
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*hello_44k.wav: made by pytest-agent-eval 0.3*"])
