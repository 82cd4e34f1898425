"""The expectations on what only some adapters observe: the greeting, how tool calls ended, the
active agent and handoffs. Each passes on what it sees, fails naming what it saw, and errors,
saying why, when the adapter could not observe it: nothing passes for the wrong reason."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_agent_eval import Expect, ToolCall, TurnContext
from pytest_agent_eval._expectations import build_evaluators, build_greeting_checks
from pytest_agent_eval._expectations._agents import ActiveAgentEvaluator, HandoffEvaluator
from pytest_agent_eval._expectations._base import text_problems
from pytest_agent_eval._expectations._greeting import GreetingEvaluator
from pytest_agent_eval._expectations._tool_outcome import ToolOutcomeEvaluator, given_back
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models import (
    AgentSpeech,
    Greeting,
    GreetingExpect,
    Handoff,
    ToolCallOutcomeConfig,
    Transcript,
    Turn,
)


def _ctx(**values: object) -> TurnContext:
    base: dict[str, object] = {"user": "hi", "reply": "", "tool_calls": [], "history": []}
    return TurnContext(**{**base, **values})  # type: ignore[arg-type]


def _hello(*texts: str) -> Greeting:
    return Greeting([AgentSpeech(text=t, cause="greeting", agent="Host") for t in texts])


# -- text checks shared by the greeting and tool outputs --------------------------------------


def test_text_problems_names_each_failed_check_case_insensitively() -> None:
    assert text_problems("Welcome to Chez Pytest", "greeting", contains_any=["WELCOME"]) == []
    problems = text_problems(
        "Welcome to Chez Pytest",
        "greeting",
        contains_any=["hello", "hi"],
        contains_all=["chez", "table"],
        contains_none=["PYTEST", "sorry"],
        matches_any=[r"\d+"],
        matches_all=[r"chez \w+", r"^bye"],
    )
    assert problems == [
        "greeting contains none of ['hello', 'hi']",
        "greeting is missing ['table']",
        "greeting contains ['PYTEST'], which must not appear",
        "greeting matches none of the patterns ['\\d+']",
        "greeting does not match ['^bye']",
    ]


# -- greeting --------------------------------------------------------------------------------


def test_greeting_checks_pass_on_what_was_said_before_turn_one() -> None:
    check = GreetingEvaluator(GreetingExpect(contains_any=["welcome"], contains_none=["sorry"]))
    result = check._check(_hello("Welcome!", "How can I help?"))
    assert result.passed and result.name == "greeting"


def test_greeting_checks_fail_naming_the_greeting_or_its_absence() -> None:
    check = GreetingEvaluator(GreetingExpect(contains_all=["welcome", "pytest"]))
    failed = check._check(_hello("Welcome!"))
    assert not failed.passed and not failed.errored
    assert failed.reasoning == "greeting is missing ['pytest'] (greeting was 'Welcome!')"
    silent = check._check(Greeting())
    assert not silent.passed and not silent.errored
    assert silent.reasoning.endswith("(the agent said nothing before turn 1)")


def test_a_greeting_the_adapter_cannot_observe_errors_and_never_passes() -> None:
    # contains_none alone would pass on an empty text: it must not pass on no text at all.
    result = GreetingEvaluator(GreetingExpect(contains_none=["sorry"]))._check(None)
    assert not result.passed and result.errored
    assert "does not report what the agent says before turn 1" in result.reasoning
    assert "LiveKitAdapter" in result.reasoning


def test_a_transcript_greeting_builds_one_check_and_none_without_it() -> None:
    plain = Transcript(id="t", turns=[Turn("hi")])
    assert build_greeting_checks(plain) == []
    greeted = Transcript(id="t", turns=[Turn("hi")], greeting=GreetingExpect(matches_any=["hi"]))
    (check,) = build_greeting_checks(greeted)
    assert isinstance(check, GreetingEvaluator)


def _load(text: str) -> Transcript:
    return load_transcript_text(textwrap.dedent(text), path=Path("t.yaml"))


def test_the_loader_reads_greeting_and_checks_its_regexes_with_line_and_field() -> None:
    transcript = _load(
        """\
        id: t
        greeting:
          contains_any: [welcome]
          matches_all: ["chez \\\\w+"]
        turns:
          - user: hi
        """
    )
    assert transcript.greeting == GreetingExpect(
        contains_any=["welcome"], matches_all=[r"chez \w+"]
    )
    with pytest.raises(TranscriptError) as info:
        _load(
            """\
            id: t
            greeting:
              matches_any: ["ok", "(unclosed"]
            turns:
              - user: hi
            """
        )
    assert str(info.value).startswith(
        "t.yaml:3, transcript 't', greeting.matches_any[1]: invalid regex '(unclosed'"
    )
    with pytest.raises(TranscriptError, match=r"t.yaml:2, transcript 't', greeting: is empty"):
        _load("id: t\ngreeting: {}\nturns:\n  - user: hi\n")
    with pytest.raises(TranscriptError, match=r"unknown field 'contains'.*contains_all"):
        _load("id: t\ngreeting: {contains: [x]}\nturns:\n  - user: hi\n")


# -- tool outcomes ---------------------------------------------------------------------------


def test_given_back_puts_a_failures_own_words_before_the_generic_output() -> None:
    call = ToolCall(
        "menu",
        output="An internal error occurred",
        is_error=True,
        error="RuntimeError: the menu service is down",
        done=True,
    )
    assert given_back(call) == "RuntimeError: the menu service is down\nAn internal error occurred"
    assert given_back(ToolCall("n", output={"count": 2}, done=True)) == '{"count": 2}'
    assert given_back(ToolCall("n", output=None, done=True)) == ""


def test_outcome_is_what_the_adapter_saw_and_none_when_it_saw_nothing() -> None:
    assert ToolCall("x").outcome is None  # a bare name: a hand-written agent's list of tools
    assert ToolCall("x", done=True).outcome == "ok"
    assert ToolCall("x", output="fine").outcome == "ok"
    assert ToolCall("x", output="oops", is_error=True).outcome == "error"
    assert ToolCall("x", done=False).outcome == "pending"


def test_status_ok_and_error_pass_on_the_observed_outcome() -> None:
    ok = ToolCall("lookup", output="ships tomorrow", done=True)
    failed = ToolCall("menu", output="An internal error occurred", is_error=True, done=True)
    ctx = _ctx(tool_calls=[ok, failed])
    assert ToolOutcomeEvaluator("lookup", "ok", ["SHIPS"])._check(ctx).passed
    assert ToolOutcomeEvaluator("menu", "error")._check(ctx).passed
    wrong = ToolOutcomeEvaluator("menu", "ok")._check(ctx)
    assert not wrong.passed and not wrong.errored
    assert wrong.reasoning == ("menu failed ('An internal error occurred'): expected it to return")


def test_output_checks_fail_naming_what_the_call_gave_back() -> None:
    ctx = _ctx(tool_calls=[ToolCall("lookup", output="ships tomorrow", done=True)])
    result = ToolOutcomeEvaluator("lookup", None, ["today"], [r"\d+ days"])._check(ctx)
    assert not result.passed
    assert result.reasoning == (
        "lookup returned 'ships tomorrow': what it gave back is missing ['today']; what it gave "
        "back does not match ['\\d+ days']"
    )


def test_some_call_of_several_must_satisfy_every_condition() -> None:
    first = ToolCall("lookup", output="not found", done=True)
    second = ToolCall("lookup", output="ships tomorrow", done=True)
    ctx = _ctx(tool_calls=[first, second])
    passed = ToolOutcomeEvaluator("lookup", "ok", ["ships"])._check(ctx)
    assert passed.passed and passed.reasoning == "call 2 of lookup returned 'ships tomorrow'"
    failed = ToolOutcomeEvaluator("lookup", "ok", ["cancelled"])._check(ctx)
    assert failed.reasoning.startswith("call 1 of lookup returned 'not found': ")
    assert " | call 2 of lookup returned 'ships tomorrow': " in failed.reasoning


def test_a_call_still_running_at_the_end_of_the_turn_fails_a_status_check() -> None:
    ctx = _ctx(tool_calls=[ToolCall("verify", done=False)])
    result = ToolOutcomeEvaluator("verify", "ok", ["verified"])._check(ctx)
    assert not result.passed and not result.errored
    assert result.reasoning == (
        "verify was still running when the turn ended: expected it to return; it gave nothing "
        "back yet"
    )


def test_an_uncalled_tool_fails_and_an_unobserved_outcome_errors() -> None:
    missing = ToolOutcomeEvaluator("lookup", "ok")._check(_ctx(tool_calls=[ToolCall("other")]))
    assert not missing.passed and not missing.errored
    assert missing.reasoning == "lookup was not called in this turn (saw other())"
    # A hand-written agent naming its tools says nothing about how they ended: status "error"
    # must not pass because is_error defaults to False, nor "ok" because nothing failed.
    for status in ("ok", "error"):
        result = ToolOutcomeEvaluator("lookup", status)._check(  # type: ignore[arg-type]
            _ctx(tool_calls=[ToolCall("lookup")])
        )
        assert not result.passed and result.errored
        assert "did not record how 1 call(s) to lookup ended" in result.reasoning


def test_tool_calls_outcome_config_needs_a_condition() -> None:
    with pytest.raises(ValueError, match="needs 'status', 'output_contains' or 'output_matches'"):
        ToolCallOutcomeConfig("lookup")
    with pytest.raises(ValueError, match="status must be 'ok' or 'error'"):
        ToolCallOutcomeConfig("lookup", status="done")  # type: ignore[arg-type]
    with pytest.raises(TranscriptError) as info:
        _load(
            """\
            id: t
            turns:
              - user: hi
                expect:
                  tool_calls_outcome:
                    - tool: lookup
            """
        )
    assert (
        "turns[0].expect.tool_calls_outcome[0]: needs 'status' (ok, error, cancelled or refused)"
        in str(info.value)
    )
    with pytest.raises(TranscriptError, match=r"output_matches\[0\]: invalid regex"):
        _load(
            """\
            id: t
            turns:
              - user: hi
                expect:
                  tool_calls_outcome:
                    - {tool: lookup, output_matches: ["(x"]}
            """
        )


# -- agents and handoffs ---------------------------------------------------------------------


def test_agent_is_compares_the_active_agent_and_errors_without_one() -> None:
    moved = _ctx(active_agent="BillingAgent", handoffs=[Handoff("Receptionist", "BillingAgent")])
    assert ActiveAgentEvaluator("BillingAgent")._check(moved).passed
    wrong = ActiveAgentEvaluator("Receptionist")._check(moved)
    assert not wrong.passed and not wrong.errored
    assert wrong.reasoning == (
        "the active agent at the end of the turn is BillingAgent, not Receptionist; handoffs "
        "in this turn: Receptionist -> BillingAgent"
    )
    blind = ActiveAgentEvaluator("BillingAgent")._check(_ctx())
    assert not blind.passed and blind.errored
    assert "does not report which agent is active" in blind.reasoning


def test_handoff_checks_match_both_ends_of_one_handoff() -> None:
    ctx = _ctx(
        active_agent="Pharmacist",
        handoffs=[
            Handoff("Pharmacist", "CollectIdentity"),
            Handoff("CollectIdentity", "Pharmacist"),
        ],
    )
    assert HandoffEvaluator(to_agent="CollectIdentity")._check(ctx).passed
    assert HandoffEvaluator(from_agent="CollectIdentity")._check(ctx).passed
    assert HandoffEvaluator("Pharmacist", "CollectIdentity")._check(ctx).passed
    crossed = HandoffEvaluator("CollectIdentity", "CollectIdentity")._check(ctx)
    assert not crossed.passed
    assert crossed.reasoning.startswith("no handoff from CollectIdentity to CollectIdentity (")
    none = HandoffEvaluator("BillingAgent")._check(_ctx(active_agent="A", handoffs=[]))
    assert none.reasoning == "no handoff to BillingAgent (no handoff in this turn)"
    blind = HandoffEvaluator("BillingAgent")._check(_ctx())
    assert blind.errored and "does not report handoffs" in blind.reasoning


def test_the_expect_fields_build_their_evaluators() -> None:
    expect = Expect(
        tool_calls_outcome=[ToolCallOutcomeConfig("lookup", "ok")],
        agent_is="B",
        handoff_to="B",
        handoff_from="A",
    )
    kinds = [type(e).__name__ for e in build_evaluators(expect)]
    assert kinds == ["ToolOutcomeEvaluator", "HandoffEvaluator", "ActiveAgentEvaluator"]
    (handoff,) = build_evaluators(Expect(handoff_from="A"))
    assert (handoff.to_agent, handoff.from_agent) == (None, "A")
