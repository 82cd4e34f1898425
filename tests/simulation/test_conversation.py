"""A simulated conversation through the Python API: real pydantic-ai agents on `FunctionModel`
as the caller and as the judge, a plain callable as the agent. How the call ends, scripted
openings, per-turn expectations, criteria, runs and intervals."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sim_models import CallerCall, End, ScriptedCaller, ScriptedJudge

from pytest_agent_eval import AgentReply, ToolCall, Transcript
from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval._runner import RunSettings
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import Expect, TranscriptResult, Turn, wilson_interval
from pytest_agent_eval.simulation import (
    CallerSettings,
    Simulation,
    SimulationSettings,
    run_simulation,
)

REFUND = "Refund of 40 euros issued for order 1234, reference RF-9."


async def refund_agent(history: Any) -> AgentReply:
    """Looks the order up, then refunds it."""
    last = history[-1].content if history else ""
    if "1234" in last:
        return AgentReply(REFUND, [ToolCall("lookup_order", {"order": "1234"})])
    return AgentReply("Which order is it about?")


def polite_caller(call: CallerCall) -> str | End:
    """Asks, gives the order number when asked, and hangs up once it has a reference."""
    if call.may_end and any("RF-" in line for line in call.agent_lines):
        return End("goal_reached", "The refund is issued.")
    if call.agent_lines and "Which order" in call.agent_lines[-1]:
        return "It is order 1234."
    return "Hi, my blender arrived broken and I want my money back."


def always_met(criterion: str, conversation: str) -> tuple[str, str]:
    return "met", f"Turn 2 shows it: {criterion}"


def simulation(**values: Any) -> Simulation:
    transcript = values.pop("transcript", None) or Transcript(
        id="refund",
        turns=values.pop("turns", []),
        runs=values.pop("runs", 1),
        threshold=values.pop("threshold", 1.0),
    )
    values.setdefault("persona", "Dana, polite, in a hurry.")
    values.setdefault("goal", "A refund for order 1234.")
    values.setdefault("criteria", ["The agent looks the order up before refunding."])
    return Simulation(transcript=transcript, **values)


def run(
    sim: Simulation,
    caller: ScriptedCaller,
    judge: ScriptedJudge | None = None,
    agent: Any = refund_agent,
    *,
    retries: int = 2,
    cache_dir: Any = None,
    refresh: bool = False,
) -> TranscriptResult:
    judge = judge or ScriptedJudge(always_met)
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=judge.model, retries=retries)),
        caller=CallerSettings(
            model=caller.model,
            retries=retries,
            cache_dir=cache_dir,
            refresh=refresh,
            sleep=_no_sleep,
        ),
    )
    return asyncio.run(run_simulation(sim, agent, settings=settings))


async def _no_sleep(seconds: float) -> None:
    return None


# --------------------------------------------------------------------------------------------
# How the call ends
# --------------------------------------------------------------------------------------------


def test_the_caller_ends_the_call_through_its_tool_once_its_goal_is_reached() -> None:
    caller = ScriptedCaller(polite_caller)
    result = run(simulation(), caller)
    assert result.verdict == "passed"
    (only,) = result.runs
    record = only.simulation
    assert record is not None
    assert (record.ended_by, record.outcome) == ("caller", "goal_reached")
    assert record.reason == "The refund is issued."
    assert record.turns == 2 and record.simulated_turns == 2 and record.scripted_turns == 0
    assert [t.user for t in only.turns] == [
        "Hi, my blender arrived broken and I want my money back.",
        "It is order 1234.",
    ]
    assert only.turns[1].reply == REFUND
    # The caller heard the agent: its third request carries both replies.
    assert caller.calls[2].agent_lines == ["Which order is it about?", REFUND]
    assert record.requests == 3 and record.cached_turns == 0


def test_the_caller_is_offered_no_way_to_end_before_min_turns() -> None:
    # A caller that hangs up as soon as it may: it is offered the tool only after min_turns.
    caller = ScriptedCaller(lambda call: End("gave_up", "Bored.") if call.may_end else "Hello?")
    result = run(simulation(min_turns=3, max_turns=6), caller)
    assert [c.may_end for c in caller.calls] == [False, False, False, True]
    assert "you cannot hang up yet" in caller.calls[0].instructions
    assert "end_conversation" in caller.calls[3].instructions
    record = result.runs[0].simulation
    assert record is not None
    assert (record.ended_by, record.outcome, record.turns) == ("caller", "gave_up", 3)


def test_max_turns_ends_a_call_the_caller_never_ends_and_says_so() -> None:
    caller = ScriptedCaller(lambda call: "Are you still there?")
    result = run(simulation(max_turns=4), caller)
    record = result.runs[0].simulation
    assert record is not None
    assert record.ended_by == "max_turns" and record.outcome is None
    assert record.turns == 4 and len(caller.calls) == 4
    assert "max_turns (4) reached" in record.reason
    assert "This is your turn 4 of at most 4" in caller.calls[-1].prompt


def test_scripted_opening_turns_run_first_with_their_own_expectations() -> None:
    opening = [
        Turn(user="Hello, I need help with an order.", expect=Expect(reply_contains_all=["order"]))
    ]
    caller = ScriptedCaller(polite_caller)
    result = run(simulation(turns=opening, max_turns=5), caller)
    assert result.verdict == "passed"
    turns = result.runs[0].turns
    assert turns[0].user == "Hello, I need help with an order."
    assert turns[0].evaluations and all(e.passed for e in turns[0].evaluations)
    record = result.runs[0].simulation
    assert record is not None and record.scripted_turns == 1 and record.simulated_turns == 1
    # The caller's first request already saw the scripted turn and its reply.
    assert "YOU: Hello, I need help with an order." in caller.calls[0].prompt
    assert "This is your turn 2 of at most 5" in caller.calls[0].prompt

    # The same opening failing its own check fails the run.
    failing = [Turn(user="Hello.", expect=Expect(reply_contains_all=["welcome"]))]
    result = run(simulation(turns=failing, max_turns=5), ScriptedCaller(polite_caller))
    assert result.verdict == "failed"
    assert not result.runs[0].turns[0].passed


def test_an_every_turn_expectation_failing_on_one_simulated_turn_fails_the_run() -> None:
    # Criteria all met, but one reply says what it must never say.
    sim = simulation(every_turn=Expect(reply_contains_none=["RF-"]))
    result = run(sim, ScriptedCaller(polite_caller))
    assert result.verdict == "failed"
    run_ = result.runs[0]
    assert all(e.passed for e in run_.evaluations)
    assert [t.passed for t in run_.turns] == [True, False]
    failed = [e for e in run_.turns[1].evaluations if not e.passed]
    assert failed and "RF-" in failed[0].reasoning


def test_a_latency_limit_an_agent_cannot_measure_is_an_error_not_a_pass() -> None:
    # A plain callable measures no latency: the limit could not be observed, so the run is an
    # ERROR saying why (the voice tests fail a slow LiveKit agent on the same key).
    sim = simulation(every_turn=Expect(max_latency_ms=150))
    result = run(sim, ScriptedCaller(polite_caller))
    assert result.verdict == "error"
    checks = [e for t in result.runs[0].turns for e in t.evaluations]
    assert checks and all(e.errored for e in checks)
    assert "no latency was measured" in checks[0].reasoning


# --------------------------------------------------------------------------------------------
# Criteria, runs, threshold
# --------------------------------------------------------------------------------------------


def test_each_criterion_is_judged_on_its_own_with_its_reason() -> None:
    def decide(criterion: str, conversation: str) -> tuple[str, str]:
        if "looks the order up" in criterion:
            ok = "[agent called tool lookup_order]" in conversation
            return ("met" if ok else "not_met"), "Turn 2 calls lookup_order."
        return "not_met", "The agent never apologised."

    judge = ScriptedJudge(decide)
    sim = simulation(
        criteria=["The agent looks the order up before refunding.", "The agent apologises."]
    )
    result = run(sim, ScriptedCaller(polite_caller), judge)
    assert result.verdict == "failed"
    first, second = result.runs[0].evaluations
    assert (first.passed, first.reasoning, first.key) == (
        True,
        "Turn 2 calls lookup_order.",
        "criteria[0]",
    )
    assert (second.passed, second.reasoning, second.key) == (
        False,
        "The agent never apologised.",
        "criteria[1]",
    )
    assert sorted(c for c, _ in judge.calls) == sorted(c.text for c in sim.criteria)
    # The judge saw what the agent did, and how the call ended.
    conversation = judge.calls[0][1]
    assert '[agent called tool lookup_order] arguments: {"order": "1234"}' in conversation
    assert "The caller ended the call (its goal reached): The refund is issued." in conversation


def test_a_criterion_the_judge_cannot_tell_is_an_error_never_a_pass_or_fail() -> None:
    judge = ScriptedJudge(lambda c, conv: ("cannot_tell", "The subject never came up."))
    result = run(simulation(), ScriptedCaller(polite_caller), judge)
    assert result.verdict == "error"
    (evaluation,) = result.runs[0].evaluations
    assert evaluation.errored and not evaluation.passed
    assert "could not tell" in evaluation.reasoning and "never came up" in evaluation.reasoning


def test_a_judge_that_is_down_is_an_error_after_its_retries() -> None:
    from pydantic_ai.exceptions import ModelHTTPError

    def down(criterion: str, conversation: str) -> tuple[str, str]:
        raise ModelHTTPError(503, "judge", body="overloaded")

    judge = ScriptedJudge(down)
    result = run(simulation(), ScriptedCaller(polite_caller), judge, retries=1)
    assert result.verdict == "error"
    (evaluation,) = result.runs[0].evaluations
    assert evaluation.errored and "503" in evaluation.reasoning
    assert len(judge.calls) == 2  # one retry


def test_runs_threshold_and_wilson_interval_as_for_transcripts() -> None:
    # Each run is its own caller (its own seed): half of them never give the order number.
    seeds = []

    def caller_by_seed(call: CallerCall) -> str | End:
        seed = call.model_settings["seed"]
        if seed not in seeds:
            seeds.append(seed)
        if seeds.index(seed) % 2:
            return "I just want my money." if not call.may_end else End("gave_up", "Useless.")
        return polite_caller(call)

    def decide(criterion: str, conversation: str) -> tuple[str, str]:
        ok = "lookup_order" in conversation
        return ("met" if ok else "not_met"), "lookup_order called" if ok else "no lookup"

    sim = simulation(runs=4, threshold=0.75)
    result = run(sim, ScriptedCaller(caller_by_seed), ScriptedJudge(decide))
    assert len(seeds) == 4  # four different callers
    assert [r.verdict for r in result.runs] == ["passed", "failed", "passed", "failed"]
    assert result.score == 0.5
    assert result.interval == wilson_interval(2, 4)
    assert result.verdict == "failed"
    with pytest.raises(AssertionError, match="0.75"):
        result.assert_threshold()


def test_simulation_records_refuse_what_cannot_work() -> None:
    base = Transcript(id="s", turns=[])
    with pytest.raises(TranscriptError, match="needs a persona"):
        Simulation(transcript=base, persona=" ", criteria=["x"])
    with pytest.raises(TranscriptError, match="needs criteria"):
        Simulation(transcript=base, persona="p", criteria=[])
    with pytest.raises(TranscriptError, match=r"max_turns \(2\) is below min_turns \(3\)"):
        Simulation(transcript=base, persona="p", criteria=["x"], max_turns=2, min_turns=3)
