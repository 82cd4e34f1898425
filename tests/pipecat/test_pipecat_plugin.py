"""The Pipecat example and YAML transcripts through pytest itself (pytester subprocesses): the
bot's own ``run_bot`` on a real pipeline, its verdicts, and every bad input as one clear error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
from strict_session import STRICT, assert_clean_exit, set_config_speed, streamed_speeds

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-pipecat"

FAST = ("--agent-eval-live", "--agent-eval-runs", "1", "-p", "no:cacheprovider")
"""Live, one run per transcript: enough where only a failure's message is checked."""


@pytest.fixture(scope="session")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with its fixtures synthesized (once per session), as run_demo.sh does."""
    target = tmp_path_factory.mktemp("example") / "voice-pipecat"
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
    result.stdout.fnmatch_lines(
        ["*booking_remembered*3*3*PASS*", "*menu_barge_in*3*3*PASS*", "*2/2 evals passed*"]
    )


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
            "*reply: 'It is under None.'",
            "*heard (WER 0.00): 'What name is the booking under?'",
        ]
    )


def test_a_bot_that_does_not_stop_when_interrupted_fails(project: pytest.Pytester) -> None:
    evals = project.path / "evals"
    text = (evals / "interrupt.yaml").read_text()
    # The bot stops about 0.4 s after the interrupting speech begins: a 100 ms budget fails.
    (evals / "interrupt.yaml").write_text(
        text.replace("stop_within_ms: 1500", "stop_within_ms: 100")
    )
    result = project.runpytest_subprocess(*FAST, "evals/interrupt.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        # 1000 ms asked, placed at the next boundary of the VAD's 32 ms windows.
        ["*the agent stopped * ms after the interrupting speech began (at 10?? ms into the reply)*"]
    )


def test_missing_fixture_fails_before_the_bot_runs(project: pytest.Pytester) -> None:
    (project.path / "evals" / "audio" / "vegan.wav").unlink()
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*audio fixture evals/audio/vegan.wav is missing*"])


NEVER_RETURNS = """
import asyncio

import pytest
import bot

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


async def check_menu(params, diet: str) -> None:
    await asyncio.Event().wait()  # the backend never answers


@pytest.fixture
def llm_eval_agent(monkeypatch):
    monkeypatch.setattr(bot, "check_menu", check_menu)
    return PipecatAdapter(run_bot=bot.run_bot, timeout_s=30.0)
"""

NEVER_RETURNS_YAML = """
id: stuck_function
turns:
  - user: "Do you have vegan dishes?"
"""


def test_a_turn_that_never_ends_errors_naming_what_it_waits_for(project: pytest.Pytester) -> None:
    folder = project.path / "evals" / "stuck"
    folder.mkdir()
    (folder / "conftest.py").write_text(NEVER_RETURNS)
    (folder / "stuck.yaml").write_text(NEVER_RETURNS_YAML)
    result = project.runpytest_subprocess(*FAST, "--durations=1", "evals/stuck")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*turn 1 ?FAIL? user: 'Do you have vegan dishes?'",
            "*error: AgentTimeoutError: turn 1: no end within timeout_s=30 s of the pipeline's time; "
            "still waiting for the function call check_menu (*) to return. If the bot is only "
            "slow, raise PipecatAdapter(timeout_s=...).*",
        ]
    )


NETWORK_BOT = """
import pytest
import bot

from pipecat.services.openai.llm import OpenAILLMService

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent(monkeypatch):
    real = bot.create_services

    def create_services():
        stt, _llm, tts = real()
        return stt, OpenAILLMService(api_key="sk-not-a-real-key"), tts

    monkeypatch.setattr(bot, "create_services", create_services)
    return PipecatAdapter(run_bot=bot.run_bot, timeout_s=20.0)
"""


def test_a_service_that_needs_the_network_errors_saying_so(project: pytest.Pytester) -> None:
    folder = project.path / "evals" / "online"
    folder.mkdir()
    (folder / "conftest.py").write_text(NETWORK_BOT)
    (folder / "online.yaml").write_text(NEVER_RETURNS_YAML.replace("stuck_function", "online"))
    result = project.runpytest_subprocess(*FAST, "evals/online")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR*",
            "*the pipeline tried to reach the network (api.openai.com:443*), which PipecatAdapter "
            "refuses*",
        ]
    )


WRONG_TRANSPORT = """
import pytest

from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import LLMContextAggregatorPair
from pipecat.transports.local.audio import LocalAudioTransport

from pytest_agent_eval.adapters.pipecat import PipecatAdapter, ScriptedLLMService, Rule


def make_bot(transport):
    llm = ScriptedLLMService([Rule("vegan", reply="Yes.")])
    pair = LLMContextAggregatorPair(LLMContext())
    return Pipeline([pair.user(), llm, pair.assistant()])  # never uses the transport


@pytest.fixture
def llm_eval_agent():
    return PipecatAdapter(make_bot, timeout_s=5.0)
"""


def test_a_pipeline_without_the_transport_errors_with_the_fix(project: pytest.Pytester) -> None:
    folder = project.path / "evals" / "wrong"
    folder.mkdir()
    (folder / "conftest.py").write_text(
        WRONG_TRANSPORT.replace(
            "from pipecat.transports.local.audio import LocalAudioTransport\n", ""
        )
    )
    (folder / "wrong.yaml").write_text(NEVER_RETURNS_YAML.replace("stuck_function", "wrong"))
    result = project.runpytest_subprocess(*FAST, "evals/wrong")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*run 1: ERROR*",
            "*error: starting the conversation failed: AdapterError: the pipeline's start: the "
            "pipeline the bot factory built does not contain transport.input() and "
            "transport.output() of the transport it was given*",
        ]
    )


OLD_PIPECAT = """
import importlib.metadata

import pytest
from bot import run_bot

from pytest_agent_eval.adapters.pipecat import PipecatAdapter

_version = importlib.metadata.version


def _pretend(name):
    return "1.3.0" if name == "pipecat-ai" else _version(name)


@pytest.fixture
def llm_eval_agent(monkeypatch):
    # The installed release as an older one would report itself (what cannot be installed
    # beside the supported one).
    monkeypatch.setattr(importlib.metadata, "version", _pretend)
    return PipecatAdapter(run_bot=run_bot)
"""


def test_a_pipecat_outside_the_supported_range_errors_with_the_fix(
    project: pytest.Pytester,
) -> None:
    folder = project.path / "evals" / "old"
    folder.mkdir()
    (folder / "conftest.py").write_text(OLD_PIPECAT)
    (folder / "old.yaml").write_text(NEVER_RETURNS_YAML.replace("stuck_function", "old"))
    result = project.runpytest_subprocess(*FAST, "evals/old")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*pipecat-ai 1.3.0 is outside the range PipecatAdapter supports (>=1.14,<2): install "
            "a supported release with pip install 'pipecat-ai>=1.14,<2'*"
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_the_speed_option_reaches_the_pipeline_and_nothing_outlives_it(
    project: pytest.Pytester,
) -> None:
    """Issue 32: ``speed`` in the config reaches the pipeline's clock (real time here, not the
    virtual clock the adapter's default gives), and a strict run (-W error) exits 0 with
    nothing the package opened left to the garbage collector (Pipecat's own deprecation
    warnings at import included: tests/pipecat/test_pipecat_strict_import.py)."""
    set_config_speed(project.path / "pyproject.toml", '"realtime"')
    result = project.runpytest_subprocess(
        *STRICT,
        *("--agent-eval-live", "--agent-eval-runs", "1", "--agent-eval-results=r.json"),
        "evals/booking.yaml",
    )
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)
    assert streamed_speeds(project.path / "r.json") == {1.0}
