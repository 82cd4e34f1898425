"""A user's agent installed as a package (in a site-packages folder outside the rootdir, as
``pip install .`` of the user's own project puts it) is still the user's code: an exception
escaping its hook is a CRASHED run naming that package's frame, as it is for an agent module
beside the tests. Through pytest itself, in a child process whose ``PYTHONPATH`` holds the
installed package."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

AGENT = '''\
"""The front desk of the ACME clinic (installed as a package)."""

from livekit.agents import Agent, RunContext, function_tool


def billing_database() -> str:
    raise RuntimeError("billing database is not configured")


class Billing(Agent):
    def __init__(self, chat_ctx=None) -> None:
        super().__init__(instructions="You are the billing assistant.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        billing_database()


class FrontDesk(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="You are the front desk. Transfer callers.")

    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to the billing assistant."""
        return Billing(chat_ctx=self.chat_ctx)
'''

CONFTEST = """\
import pytest


@pytest.fixture
def llm_eval_agent():
    from acme_desk.agent import FrontDesk
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import (
        LiveKitAdapter,
        Rule,
        ScriptedLLM,
        eval_session_kwargs,
    )

    rules = [Rule(r"billing", tool="transfer_to_billing")]

    def make_session():
        session = AgentSession(llm=ScriptedLLM(rules), **eval_session_kwargs())
        return session, FrontDesk()

    return LiveKitAdapter(make_session, timeout_s=20.0)
"""

TRANSCRIPT = """\
id: billing_transfer
tags: [gate:desk]
turns:
  - user: "Put me through to billing please"
    expect:
      reply_contains_any: ["billing"]
"""


@pytest.fixture
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``acme_desk`` in a site-packages folder of its own, outside any test's rootdir."""
    site = tmp_path_factory.mktemp("venv") / "lib" / "python3" / "site-packages"
    package = site / "acme_desk"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text('"""ACME front desk."""\n')
    (package / "agent.py").write_text(AGENT)
    return site


def test_a_crash_in_an_installed_agent_package_is_crashed_at_its_frame(
    pytester: pytest.Pytester, installed: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyprojecttoml(
        textwrap.dedent(
            """\
            [tool.agent_eval]
            yaml_dirs = ["evals"]
            runs = 2
            threshold = 0.0
            """
        )
    )
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "desk.yaml").write_text(TRANSCRIPT)
    assert not installed.is_relative_to(pytester.path)
    path = os.pathsep.join(p for p in (str(installed), os.environ.get("PYTHONPATH")) if p)
    monkeypatch.setenv("PYTHONPATH", path)

    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")

    # Before, LiveKit's frames and the package's were all "installed": no crash was seen, the
    # handoff's empty reply was a FAIL and threshold 0 passed it.
    result.assert_outcomes(failed=1)
    # Line 7 of agent.py: the raise in the package's helper that on_enter called.
    result.stdout.fnmatch_lines(
        [
            "CRASHED: 2 of 2 run(s) crashed: run 1, turn 1: RuntimeError: billing database is "
            "not configured (at agent.py:7 in billing_database)",
            "billing_transfer *CRASHED",
        ]
    )
    assert "reply was ''" not in result.stdout.str()
