"""Evals as Python tests: the `agent_eval` fixture runs turns; the marker sets runs/threshold."""

from __future__ import annotations

import pytest

from pytest_agent_eval import EvalResult, Expect, ToolCallArgsConfig, Turn


@pytest.mark.agent_eval(threshold=1.0, runs=3, tags=["smoke"])
@pytest.mark.parametrize("party", [1, 4, 8])
async def test_books_small_groups(agent_eval, party):
    # No async plugin needed: the plugin runs `async def` eval tests itself.
    result = await agent_eval.run(
        turns=[
            Turn(
                f"Please book a table for {party}.",
                expect=Expect(
                    reply_contains_all=[f"table for {party}"],
                    tool_calls_args=[ToolCallArgsConfig("create_booking", {"party": party})],
                ),
            )
        ]
    )
    result.assert_threshold()


@pytest.mark.agent_eval(runs=2)
@pytest.mark.parametrize("party", [9, 20])
def test_large_groups_are_sent_to_the_phone(agent_eval, party):
    # Synchronous tests use run_sync; agent= defaults to the llm_eval_agent fixture.
    result = agent_eval.run_sync(
        turns=[
            Turn(
                f"A table for {party}?",
                expect=Expect(
                    reply_contains_any=["call us"], tool_calls_exclude=["create_booking"]
                ),
            )
        ]
    )
    assert len(result.runs) == 2
    result.assert_threshold()


class PolitenessEvaluator:
    """A custom check: any object with `evaluate(ctx) -> EvalResult`, sync or async."""

    name = "politeness"

    def evaluate(self, ctx):
        polite = not ctx.reply.isupper()
        return EvalResult(polite, "reply is not shouted" if polite else "reply is all caps")


@pytest.mark.agent_eval
async def test_asks_for_party_size_then_books(agent_eval, llm_eval_agent):
    result = await agent_eval.run(
        agent=llm_eval_agent,
        turns=[
            Turn("I'd like a table.", expect=Expect(reply_contains_any=["how many"])),
            Turn(
                "Oh, for 2.",
                expect=Expect(
                    tool_calls_include=["create_booking"], evaluators=[PolitenessEvaluator()]
                ),
            ),
        ],
    )
    assert result.score == 1.0
