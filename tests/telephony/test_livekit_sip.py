"""The caller on an in-process LiveKit phone call (a transcript's ``phone:``): the fake job's
room holds a SIP participant with LiveKit's SIP attributes, which an agent written from
LiveKit's docs reads unchanged; a number that is not one is refused naming the file, the
line and the field; an adapter with no SIP participant makes ``phone`` error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from pytest_agent_eval.evaluators._keypad import PhoneCallCheck
from pytest_agent_eval.models import RunResult, TurnResult
from strict_session import STRICT

HERE = Path(__file__).resolve().parent
FAST = ("--agent-eval-live", *STRICT)

CONFTEST = """
import pytest

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent():
    from livekit_caller_agent import make_session

    return LiveKitAdapter(make_session, timeout_s=20.0)
"""

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 1
threshold = 1.0
"""

CALLER = """
id: caller_by_number
phone:
  caller_number: "+15550123"
turns:
  - user: "I am calling about my prescription."
    expect:
      reply_contains_all: ["calling from +15550123"]
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(HERE / "livekit_caller_agent.py", pytester.path / "livekit_caller_agent.py")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "caller.yaml").write_text(CALLER)
    return pytester


def test_the_agent_reads_the_callers_number_from_the_sip_participant(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1)
    # Another number in the transcript is another caller: the same check now fails.
    evals = project.path / "evals"
    (evals / "caller.yaml").write_text(
        CALLER.replace('  caller_number: "+15550123"', '  caller_number: "+442071838750"')
    )
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*calling from +442071838750*"])
    # And a phone call with no number given: the default caller, +15550100.
    (evals / "caller.yaml").write_text(
        CALLER.replace('phone:\n  caller_number: "+15550123"\n', "phone: {}\n").replace(
            "0123", "0100"
        )
    )
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1)


def test_a_number_that_is_not_one_is_refused_naming_file_line_and_field(
    project: pytest.Pytester,
) -> None:
    evals = project.path / "evals"
    (evals / "caller.yaml").write_text(CALLER.replace('"+15550123"', '"555-0123"'))
    result = project.runpytest_subprocess(*FAST)
    assert result.ret != 0
    result.stdout.fnmatch_lines(
        ["*caller.yaml:4*phone.caller_number*'555-0123' is not a phone number*'+15550100'*"]
    )


def test_an_adapter_with_no_sip_participant_makes_phone_error() -> None:
    check = PhoneCallCheck("+15550123")
    no_sip = RunResult(index=0, turns=[TurnResult(index=0, user="hi", reply="hello")])
    verdict = check.check(no_sip)
    assert verdict.errored and "gives the agent no SIP participant" in verdict.reasoning
    on_call = RunResult(
        index=0,
        turns=[TurnResult(index=0, user="hi", reply="hello", metadata={"sip_caller": "+15550123"})],
    )
    assert check.check(on_call).passed
