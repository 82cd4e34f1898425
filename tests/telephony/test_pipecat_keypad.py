"""The keypad on a real Pipecat pipeline, through pytest itself (pytester subprocesses): the
caller's keys reach a bot written from Pipecat's docs (`DTMFAggregator`) as ``InputDTMFFrame``s
and it acts on them; the keys it sends (``OutputDTMFUrgentFrame``) pass ``dtmf_sent``; the
planted bug (says it pressed, sends nothing) fails; a key Pipecat has no frame for errors."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")

HERE = Path(__file__).resolve().parent
FAST = ("--agent-eval-live", "-p", "no:cacheprovider")

CONFTEST = """
import pytest

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent():
    from phone_bot import run_bot

    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
"""

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 1
threshold = 1.0
"""

BALANCE = """
id: balance_by_keypad
turns:
  - user: "I want my account balance."
    dtmf: {digits: "4521#", at: after, interval_ms: 200}
    expect:
      reply_contains_all: ["Account 4521", "42 euros"]
      dtmf_sent: ""
"""

BILLING = """
id: billing_menu
turns:
  - user: "Get me billing, please."
    expect:
      dtmf_sent: "2"
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(HERE / "phone_bot.py", pytester.path / "phone_bot.py")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "balance.yaml").write_text(BALANCE)
    (evals / "billing.yaml").write_text(BILLING)
    return pytester


def test_keys_reach_the_bot_and_the_keys_it_sends_pass(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=2)


def test_a_bot_that_says_it_pressed_a_key_and_sent_none_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PHONE_BOT_BUG", "1")
    result = project.runpytest_subprocess(*FAST, "evals/billing.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*the agent sent no keys, expected '2'; the reply claims pressing '2', a key press never*"]
    )


def test_keys_the_bot_plays_in_band_in_its_audio_count_as_sent(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No DTMF frame at all: the key is only a tone in the bot's reply audio, heard there.
    monkeypatch.setenv("PHONE_BOT_IN_BAND", "1")
    evals = project.path / "evals"
    result = project.runpytest_subprocess(*FAST, "evals/billing.yaml")
    result.assert_outcomes(passed=1)
    # And the tone is what counted: expecting another key fails, naming the one heard.
    (evals / "billing.yaml").write_text(BILLING.replace('dtmf_sent: "2"', 'dtmf_sent: "3"'))
    result = project.runpytest_subprocess(*FAST, "evals/billing.yaml")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the agent sent '2', expected '3'*"])


def test_without_the_keys_the_bot_does_not_answer_the_balance(project: pytest.Pytester) -> None:
    # The same turn with its keys taken away: the check of the balance fails, so it is the
    # keys, delivered, that made it pass.
    evals = project.path / "evals"
    text = (evals / "balance.yaml").read_text()
    (evals / "balance.yaml").write_text(
        text.replace('    dtmf: {digits: "4521#", at: after, interval_ms: 200}\n', "")
    )
    result = project.runpytest_subprocess(*FAST, "evals/balance.yaml")
    result.assert_outcomes(failed=1)


def test_a_key_pipecat_has_no_frame_for_errors_naming_it(project: pytest.Pytester) -> None:
    evals = project.path / "evals"
    (evals / "balance.yaml").write_text(BALANCE.replace('"4521#"', '"45A1#"'))
    result = project.runpytest_subprocess(*FAST, "evals/balance.yaml")
    result.stdout.fnmatch_lines(
        ["*dtmf presses 'A', which Pipecat's keypad (KeypadEntry) does not have*"]
    )
    assert result.ret != 0
