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

import copy
import functools
from collections.abc import Callable
from typing import Any, TypeVar

from pipecat.turns.user_stop.base_user_turn_stop_strategy import BaseUserTurnStopStrategy

from ...errors import AdapterError
from ._compat import processors_of, stop_turns_only_with, user_turn_controller
from ._hearing_twin import _BuildsPipelines

__all__ = ["CommitAtFixtureEnd", "committed_turns_twin"]

_Adapter = TypeVar("_Adapter", bound=_BuildsPipelines)


class CommitAtFixtureEnd(BaseUserTurnStopStrategy):  # type: ignore[no-untyped-call]
    """A user-turn stop strategy that ends the turn only when told to (`commit`): manual turn
    detection, the end of the turn where the fixture ends."""

    async def commit(self) -> None:
        await self.trigger_user_turn_stopped()


def committed_turns_twin(adapter: _Adapter) -> _Adapter:
    """A copy of ``adapter`` whose every pipeline ends the caller's turns only when the
    conversation commits them, at the end of each fixture; the copy's conversation start
    raises `AdapterError` where that cannot be made (no user aggregator, or more than one)."""
    twin = copy.copy(adapter)
    refused: dict[int, str] = {}
    """Why the turn detection could not be replaced, by the id of the pipeline's transport."""
    made_by: Callable[..., Any] | None = adapter.run_bot or adapter.bot
    assert made_by is not None

    @functools.wraps(made_by)  # the bot's module still names the code that is the user's
    def build(transport: Any, *rest: Any) -> Any:
        _commit_at_setup(transport, refused)
        return made_by(transport, *rest)

    if adapter.run_bot is not None:
        twin.run_bot = build
    else:
        twin.bot = build

    own_start = type(adapter).start_conversation  # type: ignore[attr-defined]

    async def start_conversation(info: Any) -> Any:
        conversation = await own_start(twin, info)
        why = refused.pop(id(conversation.session.transport), None)
        if why is not None:
            await conversation.aclose()
            raise AdapterError(why)
        return conversation

    twin.start_conversation = start_conversation  # type: ignore[attr-defined]
    return twin


def _commit_at_setup(transport: Any, refused: dict[int, str]) -> None:
    """Have ``transport``'s input replace the user aggregator's stop strategies when its
    pipeline sets it up (before the StartFrame: the input holds it till its setup is done),
    or note in ``refused`` why it could not."""
    mic = transport.input()
    own_setup = mic.setup

    async def setup(setup_: Any) -> None:
        try:
            commit = await _replace_stop(setup_.pipeline_worker.pipeline)
        except AdapterError as exc:
            refused[id(transport)] = str(exc)
        else:
            transport.commit_turn = commit.commit
        await own_setup(setup_)

    mic.setup = setup


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
