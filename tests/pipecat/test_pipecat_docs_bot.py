"""A Pipecat bot written from Pipecat's own examples (``pipecat_weather_bot.py``: their
function-calling bot with offline services), under YAML transcripts through pytest: it passes
where its behaviour matches the transcript and fails, saying why, where it does not."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures

HERE = Path(__file__).resolve().parent

CONFTEST = """
import pytest


@pytest.fixture
def llm_eval_agent():
    from pipecat_weather_bot import run_bot

    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    return PipecatAdapter(run_bot=run_bot)
"""

PASSING = """
id: weather_in_sf
greeting:
  contains_all: ["weather"]
turns:
  - user: "What is the weather like in San Francisco?"
    audio: audio/sf_weather.wav
    expect:
      heard_contains_all: ["San Francisco"]
      tool_calls_args:
        - tool: get_current_weather
          args: {location: "San Francisco, CA", format: "fahrenheit"}
      tool_calls_outcome:
        - {tool: get_current_weather, status: ok}
      reply_contains_all: ["Let me check on that.", "75 degrees"]
      max_latency_ms: 5000
  - user: "Where should I eat tonight?"
    expect:
      tool_calls_include: [get_restaurant_recommendation]
      reply_contains_any: ["Golden Dragon"]
"""

FAILING = """
id: wrong_expectations
turns:
  - user: "What is the weather like in San Francisco?"
    audio: audio/sf_weather.wav
    expect:
      tool_calls_args:
        - tool: get_current_weather
          args: {format: "celsius"}
      tool_calls_exclude: [get_current_weather]
"""


@pytest.fixture(scope="session")
def bot_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("weather-bot")
    shutil.copy(HERE / "pipecat_weather_bot.py", folder)
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    evals = folder / "evals"
    evals.mkdir()
    (evals / "passing.yaml").write_text(PASSING)
    (evals / "failing.yaml").write_text(FAILING)
    transcripts = [load_transcript_file(p) for p in sorted(evals.glob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return folder


@pytest.fixture
def project(pytester: pytest.Pytester, bot_project: Path) -> pytest.Pytester:
    shutil.copytree(bot_project, pytester.path, dirs_exist_ok=True)
    return pytester


def test_the_bot_passes_what_it_does(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--agent-eval-live",
        "--agent-eval-runs",
        "2",
        "-p",
        "no:cacheprovider",
        "evals/passing.yaml",
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*weather_in_sf*2*2*PASS*"])


def test_the_bot_fails_what_it_does_not_do(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(
        "--agent-eval-live",
        "--agent-eval-runs",
        "1",
        "-p",
        "no:cacheprovider",
        "evals/failing.yaml",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*turn 1 ?FAIL? user: 'What is the weather like in San Francisco?'",
            "*reply: 'Let me check on that. It is nice in San Francisco, 75 degrees.'",
            "*turns[[]0[]].expect.tool_calls_exclude (failing.yaml:10) fail: forbidden tool calls "
            "made: ?'get_current_weather'?*",
            "*turns[[]0[]].expect.tool_calls_args[[]0[]] (failing.yaml:8) fail: no call to "
            "get_current_weather has matching arguments (subset): format: expected 'celsius', "
            "got 'fahrenheit' (saw get_current_weather("
            '{"format": "fahrenheit", "location": "San Francisco, CA"}))',
        ]
    )
