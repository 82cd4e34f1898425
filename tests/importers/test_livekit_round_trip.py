"""The round trip: a real call's report and recording, imported, replayed against the same
agent (passes) and against changed agents (fails at the turn that changed)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from call_support import HERE, RecordedCall

from pytest_agent_eval.__main__ import main

REPLAY_CONFTEST = """
import sys

import pytest

sys.path.insert(0, {here!r})


@pytest.fixture
def llm_eval_agent(request):
    from call_agent import make_replay_session

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    variant = request.path.parent.name
    return LiveKitAdapter(lambda: make_replay_session(variant), timeout_s=30.0)
"""


def _import(call: RecordedCall, out: Path, *extra: str) -> int:
    return main(
        [
            "import",
            "livekit",
            str(call.report),
            "--recording",
            str(call.recording),
            "--out",
            str(out),
            *extra,
        ]
    )


def test_an_imported_call_passes_against_its_agent_and_fails_where_a_changed_one_differs(
    recorded_call: RecordedCall, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    imported = pytester.path / "imported"
    assert _import(recorded_call, imported / "call.yaml") == 0
    printed = capsys.readouterr().out
    assert "cut    turn 1" in printed and "cut    turn 2" in printed
    text = (imported / "call.yaml").read_text()
    assert "tool: book_table" in text and "BK-101" in text and "Chez Pytest" in text

    pytester.makepyfile(conftest=REPLAY_CONFTEST.format(here=str(HERE)))
    for variant in ("same", "changed_reference", "forgetful"):
        folder = pytester.path / "tests" / "evals" / variant
        folder.mkdir(parents=True)
        for wav in imported.glob("*.wav"):
            shutil.copy(wav, folder / wav.name)
        (folder / "call.yaml").write_text(text.replace("id: call\n", f"id: call_{variant}\n"))
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=2)
    # The same agent passes; each changed agent fails at the turn that changed, and only there.
    result.stdout.fnmatch_lines(
        [
            "*transcript: call_changed_reference*",
            "*greeting ?ok?",
            "*turn 1 ?FAIL? user: 'Hi, I am Alice*",
            '*reply: "You\'re all set: table for 2 at 19:00 under Alice, reference BK-201."',
            "*reply_contains_all (call.yaml:*) fail: reply is missing [[]'BK-101'[]]*",
            "*turn 2 ?ok? user: 'What name is the booking under?'",
            "*transcript: call_forgetful*",
            "*turn 1 ?ok? user: 'Hi, I am Alice*",
            "*turn 2 ?FAIL? user: 'What name is the booking under?'",
            "*reply_contains_all (call.yaml:*) fail: reply is missing [[]'Alice'[]]*",
            "*call_same * 1 * 1 * PASS*",
        ]
    )
