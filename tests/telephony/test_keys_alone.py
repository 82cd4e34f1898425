"""A turn of keys alone (``dtmf:`` and no ``user:``), through pytest itself (pytester
subprocesses): the same transcript on an in-process LiveKit session and on a Pipecat pipeline,
each agent written from its framework's docs (LiveKit: ``sip_dtmf_received`` on the job's room;
Pipecat: ``DTMFAggregator``). The agent's answer to the keys is the turn's reply on both; a
LiveKit agent that never answers the keys fails the turn at its deadline, as a spoken turn the
agent does not answer fails; a Pipecat bot answering after its own timer (no '#') is waited
for, within the turn's deadline in the pipeline's time (the same verdict at every speed)."""

from __future__ import annotations

import importlib.util
import shutil
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FAST = ("--agent-eval-live", "-p", "no:cacheprovider")

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 1
threshold = 1.0
"""

KEYS_ALONE = """
id: balance_keys_alone
turns:
  - user: "Hello, this is about my account."
    expect:
      reply_contains_all: ["account number on the keypad"]
  - dtmf: {digits: "4521#", interval_ms: 200}
    expect:
      reply_contains_all: ["Account 4521", "42 euros"]
"""

NO_POUND = """
id: keys_without_pound
turn_timeout_s: 3
turns:
  - user: "Hello, this is about my account."
  - dtmf: "4521"
"""


def _project(pytester: pytest.Pytester, agent: str, conftest: str) -> pytest.Pytester:
    shutil.copy(HERE / agent, pytester.path / agent)
    pytester.makeconftest(conftest)
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "keys_alone.yaml").write_text(KEYS_ALONE)
    return pytester


@pytest.mark.skipif(not importlib.util.find_spec("livekit.agents"), reason="needs livekit")
def test_livekit_answers_keys_alone_and_an_unanswered_turn_fails(
    pytester: pytest.Pytester,
) -> None:
    from strict_session import STRICT

    project = _project(
        pytester,
        "livekit_phone_agent.py",
        """
import pytest

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent():
    from livekit_phone_agent import make_session

    return LiveKitAdapter(make_session, timeout_s=20.0)
""",
    )
    (project.path / "evals" / "no_pound.yaml").write_text(NO_POUND)
    result = project.runpytest_subprocess("--agent-eval-live", *STRICT, "-v")
    # Without '#' the agent is still collecting the keys: it never answers, and the turn fails
    # naming the keys it waited on (not an error, and not a pass on an empty reply).
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*balance_keys_alone PASSED*",
            "*keys_without_pound FAILED*",
            "turn 2: no reply within turn_timeout_s=3s*",
        ]
    )


@pytest.mark.skipif(not importlib.util.find_spec("pipecat"), reason="needs the pipecat extra")
def test_pipecat_answers_keys_alone_also_after_its_own_timer(pytester: pytest.Pytester) -> None:
    project = _project(
        pytester,
        "phone_bot.py",
        """
import pytest

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent():
    from phone_bot import run_bot

    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
""",
    )
    # Without '#' the bot's DTMFAggregator answers once its own idle timer runs out: the turn
    # waits for that answer, as a text turn waits for the bot's response.
    (project.path / "evals" / "timer.yaml").write_text(
        NO_POUND.replace("keys_without_pound", "keys_on_a_timer")
        + '    expect:\n      reply_contains_all: ["Account 4521"]\n'
    )
    result = project.runpytest_subprocess(*FAST, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*balance_keys_alone PASSED*", "*keys_on_a_timer PASSED*"])


DEADLINE = """
id: {id}
turn_timeout_s: 1
turns:
  - dtmf: "{keys}"
    expect:
      reply_contains_all: ["Account 4521"]
"""


@pytest.mark.skipif(not importlib.util.find_spec("pipecat"), reason="needs the pipecat extra")
@pytest.mark.parametrize("speed", ["max", "1"])
def test_pipecat_keys_alone_deadline_is_the_same_at_every_speed(
    pytester: pytest.Pytester, speed: str
) -> None:
    """The turn's ``turn_timeout_s`` (1 s) holds in the pipeline's time: the bot's
    DTMFAggregator (2 s idle timer) answers "4521" too late at max speed as in real time (a
    FAIL saying what the runner's deadline says), and answers "4521#" in time at both."""
    shutil.copy(HERE / "phone_bot.py", pytester.path / "phone_bot.py")
    pytester.makeconftest(
        """
import pytest

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent():
    from phone_bot import run_bot

    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
"""
    )
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "late.yaml").write_text(DEADLINE.format(id="keys_late", keys="4521"))
    (evals / "pound.yaml").write_text(DEADLINE.format(id="keys_in_time", keys="4521#"))
    result = pytester.runpytest_subprocess(*FAST, f"--agent-eval-speed={speed}", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*keys_in_time PASSED*"])
    result.stdout.fnmatch_lines(
        ["*keys_late FAILED*", "turn 1: no reply within turn_timeout_s=1s*"]
    )
