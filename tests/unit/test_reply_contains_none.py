"""``reply_contains_none``: the first expectation added through the registry."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from pytest_agent_eval import Expect, TurnContext
from pytest_agent_eval._expectations import build_evaluators
from pytest_agent_eval._expectations._reply_contains_none import ReplyContainsNoneEvaluator


def _ctx(reply: str) -> TurnContext:
    return TurnContext(user="Book", reply=reply, tool_calls=[], history=[])


def test_fails_naming_every_forbidden_string_found_case_insensitively() -> None:
    evaluator = ReplyContainsNoneEvaluator(["sorry", "Refund", "cancel"])
    result = asyncio.run(evaluator.evaluate(_ctx("SORRY, no tables. A refund is on its way.")))
    assert not result.passed and not result.errored
    assert result.name == "reply_contains_none"
    assert result.reasoning.startswith("reply contains ['sorry', 'Refund'], which must not appear")
    assert "'cancel'" not in result.reasoning.split("(reply was")[0]
    assert "(reply was 'SORRY, no tables. A refund is on its way.')" in result.reasoning


def test_passes_when_none_appears() -> None:
    result = asyncio.run(ReplyContainsNoneEvaluator(["sorry"]).evaluate(_ctx("Booked for two.")))
    assert result.passed and result.reasoning == "reply contains none of ['sorry']"


def test_expect_field_builds_it_after_the_other_reply_checks() -> None:
    expect = Expect(reply_contains_any=["booked"], reply_contains_none=["sorry"])
    kinds = [type(e).__name__ for e in build_evaluators(expect)]
    assert kinds == ["ContainsEvaluator", "ReplyContainsNoneEvaluator"]
    assert build_evaluators(Expect(reply_contains_none=[])) == []


def test_a_yaml_transcript_fails_with_the_forbidden_words(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(
        """
        import pytest

        @pytest.fixture
        def llm_eval_agent():
            async def agent(history):
                return "Sorry, we are fully booked."
            return agent
        """
    )
    evals = pytester.mkdir("evals")
    (evals / "polite.yaml").write_text(
        textwrap.dedent(
            """
            id: polite
            turns:
              - user: A table for two?
                expect:
                  reply_contains_none: [sorry, unfortunately]
            """
        )
    )
    result = pytester.runpytest("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    assert (
        "      - turns[0].expect.reply_contains_none (polite.yaml:6) fail: reply contains "
        "['sorry'], which must not appear "
        "(reply was 'Sorry, we are fully booked.')"
    ) in result.outlines
