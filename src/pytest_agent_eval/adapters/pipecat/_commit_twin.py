"""The turn-taking counterfactual of failure attribution on Pipecat (issue 35,
docs/attribution.md): the same bot hearing the same audio, with the end of each caller's turn
committed exactly at the end of its fixture instead of where its VAD and turn analyzer put it.

`committed_turns_twin` gives a copy of a `PipecatAdapter` whose every pipeline is the bot's
own, built by its own ``run_bot`` or ``make_bot``, with the user-turn stop strategies of its
user aggregator replaced by `CommitAtFixtureEnd` before the pipeline starts: a strategy that
never ends a turn by itself. The conversation streams each fixture whole (its pauses and tail
included), waits for the pipeline to take it all in, and then commits the turn (the
transport's ``commit_turn``): the bot answers everything the caller said, once. Its VAD still
starts the turn; its STT, LLM, tools and TTS stay its own. Where the turn detection cannot be
replaced, the twin's conversation start fails with one line saying why (an `AdapterError`),
which attribution writes as its evidence before falling back to the text rerun.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

from ...errors import AdapterError
from ._compat import processors_of, stop_turns_only_with, user_turn_controller
from ._twin import BuildsPipelines, pipeline_twin

__all__ = ["CommitAtFixtureEnd", "committed_turns_twin"]

_Adapter = TypeVar("_Adapter", bound=BuildsPipelines)


class CommitAtFixtureEnd(BaseUserTurnStopStrategy):  # type: ignore[no-untyped-call]
    """A user-turn stop strategy that ends the turn only when told to (`commit`): manual turn
    detection, the end of the turn where the fixture ends."""

    async def commit(self) -> None:
        await self.trigger_user_turn_stopped()


def committed_turns_twin(adapter: _Adapter) -> _Adapter:
    """A copy of ``adapter`` whose every pipeline ends the caller's turns only when the
    conversation commits them, at the end of each fixture; the copy's conversation start
    raises `AdapterError` where that cannot be made (no user aggregator, or more than one)."""
    return pipeline_twin(adapter, _commit_at_setup)


async def _commit_at_setup(pipeline: Any, setup: Any, transport: Any) -> None:
    """Replace the user aggregator's stop strategies, before the StartFrame (the input holds
    it till its setup is done), and have ``transport`` commit the turn through the new one."""
    commit = await _replace_stop(pipeline)
    transport.commit_turn = commit.commit


async def _replace_stop(pipeline: Any) -> CommitAtFixtureEnd:
    from pipecat.processors.aggregators.llm_response_universal import LLMUserAggregator

    aggregators = [p for p in processors_of(pipeline) if isinstance(p, LLMUserAggregator)]
    if len(aggregators) != 1:
        raise AdapterError(
            f"the bot's pipeline has {len(aggregators)} user aggregators (LLMUserAggregator); "
            "the end of the caller's turn is committed through exactly one"
        )
    commit = CommitAtFixtureEnd()
    await stop_turns_only_with(user_turn_controller(aggregators[0]), commit)
    return commit
