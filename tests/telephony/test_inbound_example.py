"""examples/phone-inbound-livekit through pytest itself (pytester subprocesses): the inbound
agent, written from LiveKit's docs, collects an account number with ``GetDtmfTask`` and looks it
up. Its evals pass as shipped (the caller's words from the committed fixtures, their keys on the
fake job's room), and the planted bug (the last digit dropped before the lookup) fails the
balance eval, naming the lookup's argument; the unknown account's eval stays green."""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

import pytest

from strict_session import STRICT

if TYPE_CHECKING:
    from conftest import ExampleProjects

pytestmark = pytest.mark.skipif(
    not importlib.util.find_spec("livekit.agents"), reason="needs the livekit extra"
)


def test_the_inbound_example_passes_as_shipped(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    examples.copy("phone-inbound-livekit")
    result = pytester.runpytest_subprocess("--agent-eval-live", *STRICT, "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*evals/balance.yaml::balance_by_keypad PASSED*",
            "*evals/unknown_account.yaml::unknown_account PASSED*",
            "2/2 evals passed",
        ]
    )


def test_dropping_the_last_digit_fails_the_balance_eval_on_the_lookup_s_argument(
    pytester: pytest.Pytester, examples: ExampleProjects, monkeypatch: pytest.MonkeyPatch
) -> None:
    examples.copy("phone-inbound-livekit")
    monkeypatch.setenv("ACCOUNT_BUG", "1")
    result = pytester.runpytest_subprocess("--agent-eval-live", *STRICT)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            '*tools: collect_account_number({}), lookup_account({"account_number": "452"})*',
            "*tool_calls_args[[]0] (balance.yaml:12) fail: no call to lookup_account has matching"
            " arguments (subset): account_number: expected '4521', got '452'*",
            "*cause: agent_logic*",
            "FAILED evals/balance.yaml::balance_by_keypad*",
        ]
    )
