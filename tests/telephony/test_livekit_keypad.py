"""The keypad in an in-process LiveKit session, through pytest itself (pytester subprocesses,
warnings as errors): an agent written from LiveKit's docs reads the caller's keys with
LiveKit's ``GetDtmfTask`` (``sip_dtmf_received`` on the job's room) and presses keys with its
``send_dtmf_events`` tool (``publish_dtmf``), unchanged; the planted bug (says it pressed,
sends nothing) fails; the job context it got is gone after the run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

from strict_session import STRICT, assert_clean_exit

HERE = Path(__file__).resolve().parent
FAST = ("--agent-eval-live", *STRICT)

CONFTEST = """
import pytest

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent():
    from livekit_phone_agent import make_session

    return LiveKitAdapter(make_session, timeout_s=20.0)
"""

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 2
threshold = 1.0
"""

BALANCE = """
id: balance_by_keypad
turns:
  - user: "I want my account balance."
    dtmf: {digits: "4521#", at: after, interval_ms: 200}
    expect:
      reply_contains_all: ["Account 4521", "42 euros"]
      tool_calls_include: [collect_account_number]
      dtmf_sent: ""
"""

BILLING = """
id: billing_menu
turns:
  - user: "Get me billing, please."
    expect:
      dtmf_sent: "2"
"""

NOTHING_LEFT = """
from livekit.agents import get_job_context


def test_no_job_context_outlives_the_runs():
    assert get_job_context(required=False) is None
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(HERE / "livekit_phone_agent.py", pytester.path / "livekit_phone_agent.py")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "balance.yaml").write_text(BALANCE)
    (evals / "billing.yaml").write_text(BILLING)
    (pytester.path / "test_zz_after.py").write_text(NOTHING_LEFT)
    return pytester


def test_get_dtmf_task_hears_the_keys_and_sent_keys_pass(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=3)
    assert_clean_exit(result)


def test_an_agent_that_says_it_pressed_a_key_and_sent_none_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHONE_AGENT_BUG", "1")
    result = project.runpytest_subprocess(*FAST, "evals/billing.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the agent sent no keys, expected '2'; the reply claims pressing '2', a key press never*"]
    )


def test_without_the_keys_the_task_never_completes(project: pytest.Pytester) -> None:
    # The same turn with its keys taken away: GetDtmfTask is still waiting for them, so the
    # balance is never said and the check fails. The keys, delivered, made it pass.
    evals = project.path / "evals"
    text = (evals / "balance.yaml").read_text()
    (evals / "balance.yaml").write_text(
        text.replace('    dtmf: {digits: "4521#", at: after, interval_ms: 200}\n', "")
    )
    result = project.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "evals/balance.yaml"
    )
    result.assert_outcomes(failed=1)


LINE_AGENT = """
from livekit.agents import Agent, AgentSession, RunContext, function_tool, get_job_context

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM, eval_session_kwargs


class LineAgent(Agent):
    def __init__(self):
        super().__init__(instructions="Say which line you are on.")

    @function_tool()
    async def which_line(self, context: RunContext) -> str:
        \"\"\"Which line this call is on.\"\"\"
        return "phone" if get_job_context(required=False) is not None else "none"


def make_session():
    llm = ScriptedLLM([Rule(r"line", tool="which_line", reply="Line: {output}.")])
    return AgentSession(llm=llm, **eval_session_kwargs()), LineAgent()
"""


@pytest.mark.parametrize(
    ("keys", "line"), [("", "none"), ('    dtmf: "1"\n', "phone")], ids=["no_keys", "keys"]
)
def test_only_a_transcript_with_keys_gets_a_job_context(
    pytester: pytest.Pytester, keys: str, line: str
) -> None:
    # An agent tested without keys sees no job context, as before the keypad: LiveKit's
    # job-only paths of the session start (IVR detection) stay off for it.
    (pytester.path / "line_agent.py").write_text(LINE_AGENT)
    pytester.makeconftest(CONFTEST.replace("livekit_phone_agent", "line_agent"))
    (pytester.path / "pyproject.toml").write_text(PYPROJECT.replace("runs = 2", "runs = 1"))
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "line.yaml").write_text(
        "id: which_line\nturns:\n  - user: Which line is this?\n"
        + keys
        + f'    expect:\n      reply_contains_all: ["Line: {line}."]\n'
    )
    result = pytester.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1)
