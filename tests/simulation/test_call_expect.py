"""``call_expect``: checks over the whole call, in a simulation and in a transcript. The agent
books on a turn no ``expect:`` names in advance; ``tool_called`` finds it wherever it came, and
a ``hook`` of the user's reads the run. A check that cannot answer is an ERROR, never a pass,
and a run that broke off is not checked at all."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from sim_models import CallerCall, End, ScriptedCaller
from test_conversation import run, simulation

from pytest_agent_eval import AgentReply, ToolCall, Transcript
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import CallExpect, RunResult, ToolCalledConfig, Turn


async def booking_agent(history: Any) -> AgentReply:
    """Asks for the party size, then books once it hears it."""
    last = history[-1].content if history else ""
    if "two" in last:
        return AgentReply(
            "Booked a table for two, reference BK-2.",
            [ToolCall("create_booking", {"party_size": 2, "time": "19:00"})],
        )
    return AgentReply("For how many people?")


def booking_caller(call: CallerCall) -> str | End:
    if call.may_end and any("BK-" in line for line in call.agent_lines):
        return End("goal_reached", "Booked.")
    if call.agent_lines and "how many" in call.agent_lines[-1]:
        return "We are two."
    return "A table tonight at seven, please."


def booked_for_two(run: RunResult) -> tuple[bool, str]:
    """A user hook: the run's last booking is for two people."""
    calls = [c for t in run.turns for c in t.tool_calls if c.name == "create_booking"]
    if not calls:
        return False, "no booking in the call"
    size = (calls[-1].args or {}).get("party_size")
    return size == 2, f"the last booking is for {size}"


async def never_books(run: RunResult) -> bool:
    return False


def broken_hook(run: RunResult) -> bool:
    raise RuntimeError("the hook's own bug")


def _sim(**call: Any) -> Any:
    from pytest_agent_eval.simulation import Simulation

    sim = simulation()
    transcript = sim.transcript
    transcript.call_expect = CallExpect(**call)
    return Simulation(
        transcript=transcript, persona=sim.persona, goal=sim.goal, criteria=["It books."]
    )


def _verdicts(result: Any) -> list[tuple[str | None, bool, bool, str]]:
    (run_,) = result.runs
    return [(e.key, e.passed, e.errored, e.reasoning) for e in run_.evaluations]


def test_a_simulation_checks_a_tool_called_at_some_point_and_a_user_hook() -> None:
    sim = _sim(
        tool_called=[ToolCalledConfig("create_booking", {"party_size": 2})],
        hook="test_call_expect:booked_for_two",
    )
    result = run(sim, ScriptedCaller(booking_caller), agent=booking_agent)
    assert result.verdict == "passed"
    criterion, tool, hook = _verdicts(result)
    assert criterion[0] == "criteria[0]"
    assert tool[:3] == ("call_expect.tool_called[0]", True, False)
    assert hook == ("call_expect.hook", True, False, "the last booking is for 2")


@pytest.mark.parametrize(
    ("call", "reason"),
    [
        (
            {"tool_called": [ToolCalledConfig("create_booking", {"party_size": 4})]},
            "no call to create_booking in the call has matching arguments (subset of "
            '{"party_size": 4}): call 1: party_size: expected 4, got 2',
        ),
        (
            {"tool_called": [ToolCalledConfig("cancel_booking")]},
            "cancel_booking was never called in the call (saw create_booking(",
        ),
        ({"hook": "test_call_expect:never_books"}, "test_call_expect:never_books returned False"),
    ],
    ids=["wrong-args", "never-called", "hook-says-no"],
)
def test_a_whole_call_check_that_says_no_fails_the_run_with_its_reason(
    call: dict[str, Any], reason: str
) -> None:
    result = run(_sim(**call), ScriptedCaller(booking_caller), agent=booking_agent)
    assert result.verdict == "failed"
    failed = [v for v in _verdicts(result) if not v[1]]
    assert len(failed) == 1 and not failed[0][2]
    assert failed[0][3].startswith(reason), failed[0][3]


@pytest.mark.parametrize(
    ("hook", "reason"),
    [
        ("test_call_expect:broken_hook", "test_call_expect:broken_hook raised RuntimeError"),
        ("no_such_module_here:check", "cannot import 'no_such_module_here:check'"),
        ("test_call_expect:missing", "cannot import 'test_call_expect:missing'"),
    ],
    ids=["raises", "no-module", "no-function"],
)
def test_a_hook_that_cannot_answer_is_an_error_not_a_verdict(hook: str, reason: str) -> None:
    result = run(_sim(hook=hook), ScriptedCaller(booking_caller), agent=booking_agent)
    assert result.verdict == "error"
    (errored,) = [v for v in _verdicts(result) if v[2]]
    assert reason in errored[3]


def test_a_run_that_broke_off_is_not_checked_over_the_whole_call() -> None:
    sim = _sim(tool_called=[ToolCalledConfig("create_booking")])
    result = run(sim, ScriptedCaller(lambda call: ""), agent=booking_agent, retries=0)
    assert result.verdict == "error"
    assert _verdicts(result) == []  # no FAIL for a booking the broken call never reached


def test_a_transcript_checks_the_whole_call_too() -> None:
    transcript = Transcript(
        id="booking",
        turns=[Turn(user="A table tonight, please."), Turn(user="We are two.")],
        call_expect=CallExpect(
            tool_called=[ToolCalledConfig("create_booking", {"time": "19:00"})],
            hook="test_call_expect:booked_for_two",
        ),
    )
    result = asyncio.run(run_transcript(transcript, booking_agent))
    assert result.verdict == "passed"
    assert [(e.key, e.passed) for e in result.runs[0].evaluations] == [
        ("call_expect.tool_called[0]", True),
        ("call_expect.hook", True),
    ]
    # Without the booking turn, the whole call has no booking: the transcript fails.
    transcript.turns = transcript.turns[:1]
    failed = asyncio.run(run_transcript(transcript, booking_agent))
    assert failed.verdict == "failed"


def test_call_expect_loads_from_yaml_with_its_line_and_refuses_a_bad_hook(tmp_path: Path) -> None:
    text = (
        "id: booking\nturns:\n  - user: hi\ncall_expect:\n  tool_called:\n"
        "    - tool: create_booking\n      args: {party_size: 2}\n"
        "  hook: checks.booking:booked\n"
    )
    transcript = load_transcript_text(text, path=tmp_path / "booking.yaml")
    assert transcript.call_expect == CallExpect(
        [ToolCalledConfig("create_booking", {"party_size": 2})], "checks.booking:booked"
    )
    assert transcript.locations["call_expect"] == "booking.yaml:4"
    with pytest.raises(TranscriptError) as caught:
        load_transcript_text(
            text.replace("checks.booking:booked", "checks/booking.py"),
            path=tmp_path / "booking.yaml",
        )
    assert "booking.yaml:8" in str(caught.value) and "is not module:function" in str(caught.value)


def test_a_saved_conversation_keeps_its_call_expect(tmp_path: Path) -> None:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.simulation._save import save_conversation

    sim = _sim(
        tool_called=[ToolCalledConfig("create_booking", {"party_size": 2})],
        hook="test_call_expect:booked_for_two",
    )
    (call,) = run(sim, ScriptedCaller(booking_caller), agent=booking_agent).runs
    transcript = Transcript(
        id="booking",
        turns=[Turn(user=t.user) for t in call.turns],
        call_expect=sim.transcript.call_expect,
    )
    path = save_conversation(tmp_path, sim, transcript, call)
    assert path is not None
    assert load_transcript_file(path).call_expect == sim.transcript.call_expect


def test_a_call_the_framework_refused_is_not_the_call_tool_called_looks_for() -> None:
    from pytest_agent_eval.evaluators._call import ToolCalledCheck
    from pytest_agent_eval.models import TurnResult

    refused = ToolCall(
        "place_order",
        {"payment": "cash"},
        is_error=True,
        error="not currently available",
        refused=True,
    )
    run_ = RunResult(index=0, turns=[TurnResult(index=0, user="cash please", tool_calls=[refused])])

    verdict = ToolCalledCheck("place_order", {"payment": "cash"}).check(run_)

    assert not verdict.passed
    assert "place_order was never called in the call" in verdict.reasoning
    assert "the framework refused the call to place_order" in verdict.reasoning
