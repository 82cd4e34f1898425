"""Issue 32's ``-W error`` report: a green LiveKit suite ended in "unclosed event loop" and an
unclosed socket pair at ``pytest_unconfigure``, collected by the ``gc.collect()`` of the
session loop's close. One way there, reproduced here: LiveKit's ``AgentSession()`` built
outside a running loop (a conftest that builds one to check the agent, before the evals)
takes ``asyncio.get_event_loop()``, which on the main thread makes a loop and sets it as the
current one. The session's loop then took its place and dropped it: garbage, never closed,
an error under ``-W error``. The session's loop now gives the current loop back when it
closes, as it found it; nothing of ours is left for the garbage collector."""

from __future__ import annotations

import pytest

from strict_session import STRICT, assert_clean_exit

CONFTEST = """\
import pytest


@pytest.fixture
def llm_eval_agent():
    from livekit.agents import Agent, AgentSession

    from pytest_agent_eval.adapters.livekit import (
        LiveKitAdapter,
        Rule,
        ScriptedLLM,
        eval_session_kwargs,
    )

    def make_session():
        session = AgentSession(
            llm=ScriptedLLM([Rule(r"hours", reply="We open at nine.")]), **eval_session_kwargs()
        )
        return session, Agent(instructions="You are the front desk.")

    make_session()  # a quick check that the agent builds, outside any event loop
    return LiveKitAdapter(make_session, timeout_s=20.0)
"""

TRANSCRIPT = """\
id: hours
turns:
  - user: "What are your hours?"
    expect:
      reply_contains_any: ["nine"]
"""


def test_a_session_built_outside_the_loop_leaves_no_loop_to_the_collector(
    pytester: pytest.Pytester,
) -> None:
    pytester.makeconftest(CONFTEST)
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\nruns = 2\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "hours.yaml").write_text(TRANSCRIPT)
    result = pytester.runpytest_subprocess(*STRICT, "--agent-eval-live")
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)
