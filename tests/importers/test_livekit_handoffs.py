"""Handoffs and failing tools, drafted from a real multi-agent session's report and replayed:
the same agent passes, the agent whose tool was fixed fails at that turn."""

from __future__ import annotations

import asyncio
import json

import pytest
from call_support import HERE

from pytest_agent_eval.__main__ import main
from pytest_agent_eval._loader import load_transcript_file

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

LINES = ["I have a question about my bill.", "Why was I charged twice?"]

REPLAY_CONFTEST = """
import sys

import pytest

sys.path.insert(0, {here!r})


@pytest.fixture
def llm_eval_agent(request):
    from call_agent import desk_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    fixed = request.path.parent.name == "fixed"
    return LiveKitAdapter(lambda: desk_session(refunds_work=fixed), timeout_s=30.0)
"""


def test_handoffs_and_tool_errors_are_drafted_and_replayed(
    pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    import call_agent
    from call_support import typed_call

    async def call() -> dict[str, object]:
        return await typed_call(*call_agent.desk_session(), LINES)  # built inside the loop

    report = asyncio.run(call())
    path = pytester.path / "session_report.json"
    path.write_text(json.dumps(report))
    out = pytester.path / "tests" / "evals" / "same" / "desk.yaml"
    assert main(["import", "livekit", str(path), "--out", str(out)]) == 0
    capsys.readouterr()

    first, second = load_transcript_file(out).turns
    assert first.audio is None and second.audio is None  # typed in the call: text turns
    assert first.expect.tool_calls_include == ["transfer_to_billing"]
    assert first.expect.handoff_to == "BillingDesk"  # from LiveKit's id 'billing_desk'
    assert "Billing" in first.expect.reply_contains_all  # the new desk's introduction
    assert [(a.tool, a.args) for a in second.expect.tool_calls_args] == [
        ("refund", {"charge": "duplicate"})
    ]
    assert [(o.tool, o.status) for o in second.expect.tool_calls_outcome] == [("refund", "error")]
    text = out.read_text()
    assert "(refund failed there)" in text
    assert "typed in the call, not spoken: a text turn" in text

    fixed = out.parent.parent / "fixed" / "desk.yaml"
    fixed.parent.mkdir()
    fixed.write_text(text.replace("id: desk\n", "id: desk_fixed\n"))
    pytester.makepyfile(conftest=REPLAY_CONFTEST.format(here=str(HERE)))
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*transcript: desk_fixed*",
            "*turn 1 ?ok? user: 'I have a question about my bill.'",
            "*turn 2 ?FAIL? user: 'Why was I charged twice?'",
            "*refund*",
            "*desk * 1 * 1 * PASS*",
        ]
    )
