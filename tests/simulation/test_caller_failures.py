"""A simulated caller that fails makes its run an ERROR, never an agent FAIL: a model that is
down, an empty or runaway utterance, a refusal, an answer that is no utterance. Each is retried
under the judges' budget first, and told why its last answer could not be used."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai.exceptions import ModelHTTPError
from sim_models import CallerCall, End, ScriptedCaller
from test_conversation import polite_caller, run, simulation

RUNAWAY = " ".join(["and"] * 81)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ("", "an empty utterance"),
        ("   ", "an empty utterance"),
        (RUNAWAY, "a runaway utterance (81 words, more than max_words=80)"),
        (
            "As an AI language model, I can't role-play as a customer.",
            "a refusal to play the caller",
        ),
        (
            "Hi, I need a refund.\nAgent: Sure, which order?",
            "not an utterance: it speaks for the agent or writes a dialogue",
        ),
        ('{"utterance": "hello"}', "not an utterance: markup or data, not words"),
        ("end_conversation", "not an utterance: it writes end_conversation as text"),
    ],
    ids=["empty", "blank", "runaway", "refusal", "dialogue", "json", "tool-as-text"],
)
def test_an_unusable_utterance_is_retried_then_makes_the_run_an_error(
    answer: str, why: str
) -> None:
    caller = ScriptedCaller(lambda call: answer)
    result = run(simulation(runs=2), caller, retries=2)
    assert result.verdict == "error"
    assert result.errored_run_count == 2 and result.passed_run_count == 0
    for run_ in result.runs:
        assert run_.verdict == "error"
        assert run_.error is not None
        assert "the simulated caller failed at turn 1" in run_.error
        assert why in run_.error
        assert run_.simulation is not None and run_.simulation.ended_by == "error"
        assert not run_.evaluations  # never judged: the agent was not what failed
    assert len(caller.calls) == 6  # 1 + 2 retries, per run
    # The retries were told why (2 per run; the runs' requests interleave).
    told = [c for c in caller.calls if "Your previous answer could not be used" in c.prompt]
    assert len(told) == 4


def test_a_caller_model_that_is_down_is_an_error_after_its_retries() -> None:
    def down(call: CallerCall) -> str:
        raise ModelHTTPError(503, "caller", body="overloaded")

    caller = ScriptedCaller(down)
    result = run(simulation(), caller, retries=1)
    assert result.verdict == "error"
    error = result.runs[0].error
    assert error is not None and "simulated caller failed at turn 1" in error and "503" in error
    assert len(caller.calls) == 2


def test_a_caller_that_fails_mid_call_keeps_the_turns_before_it() -> None:
    def breaks(call: CallerCall) -> str | End:
        if call.turn == 2:
            return ""
        return polite_caller(call)

    result = run(simulation(), ScriptedCaller(breaks), retries=0)
    (run_,) = result.runs
    assert run_.verdict == "error"
    assert len(run_.turns) == 1 and run_.turns[0].passed
    assert run_.error is not None and "failed at turn 2" in run_.error


def test_a_caller_that_recovers_within_its_budget_passes() -> None:
    answers = iter(["", '"Caller: Hi, my blender arrived broken."'])

    def flaky(call: CallerCall) -> str | End:
        if call.turn == 1:
            return next(answers)
        return polite_caller(call)

    caller = ScriptedCaller(flaky)
    result = run(simulation(), caller)
    assert result.verdict == "passed"
    # The quotes and the caller's own label are taken off, not sent to the agent.
    assert result.runs[0].turns[0].user == "Hi, my blender arrived broken."
    assert "could not be used: an empty utterance" in caller.calls[1].prompt
    record = result.runs[0].simulation
    assert record is not None and record.requests == len(caller.calls)


def test_an_unknown_caller_model_is_an_error_naming_the_setting() -> None:
    from pytest_agent_eval.simulation import CallerConfig

    sim = simulation(caller=CallerConfig(model="nosuchprovider:model-x"))
    result = run(sim, ScriptedCaller(polite_caller))
    assert result.verdict == "error"
    error = result.runs[0].error
    assert error is not None
    assert "cannot use the model 'nosuchprovider:model-x'" in error
    assert "caller.model" in error


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        (
            lambda call: End(),
            "it called end_conversation at turn 1, before it may end the call (from turn 3 "
            "on: min_turns is 2); if a caller should be able to hang up sooner, lower "
            "min_turns in the simulation",
        ),
        (
            lambda call: End(outcome="bored") if call.may_end else polite_caller(call),
            "it called end_conversation with arguments that do not fit ({'outcome': 'bored', "
            "'reason': 'I have what I called for.'}): it needs outcome goal_reached or "
            "gave_up, and a one-line reason",
        ),
    ],
    ids=["before-min-turns", "malformed"],
)
def test_a_refused_hang_up_says_what_the_caller_did_and_the_setting_that_changes_it(
    answer: Any, said: str
) -> None:
    caller = ScriptedCaller(answer)
    result = run(simulation(), caller, retries=1)
    assert result.verdict == "error"
    error = result.runs[0].error or ""
    assert said in error
    # Not "neither words nor the tool" when it called the tool, and no pydantic-ai retry
    # limit the caller does not expose.
    assert "neither" not in error and "retry limit" not in error
    # The retry was told the same.
    assert said in caller.calls[-1].prompt
