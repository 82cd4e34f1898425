"""The Pipecat committed-turns twin leaves a bot's own turn strategies alone (issue 35): a bot
whose `UserTurnStrategies` and smart-turn analyzer are module-level shares them with every
pipeline it builds, so the twin works on a copy: after its conversation the bot's strategies
still hold their own stop strategy, which the twin never cleaned up nor left listened to, and
the next ordinary pipeline takes them as they were."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")

from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
from pipecat.turns.user_turn_strategies import UserTurnStrategies

ANALYZER = LocalSmartTurnAnalyzerV3()
STOP = TurnAnalyzerUserTurnStopStrategy(turn_analyzer=ANALYZER)
STRATEGIES = UserTurnStrategies(stop=[STOP])
CLEANED: list[str] = []
_own_cleanup = ANALYZER.cleanup


async def _counted_cleanup() -> None:
    CLEANED.append("analyzer")
    await _own_cleanup()


ANALYZER.cleanup = _counted_cleanup  # type: ignore[method-assign]


async def run_bot(transport: Any, runner_args: Any) -> None:
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.workers.runner import WorkerRunner

    from pytest_agent_eval.adapters.pipecat import (
        FixtureTextSTTService,
        ScriptedLLMService,
        SynthesizerTTSService,
    )

    context = LLMContext([{"role": "system", "content": "Answer."}])
    user, assistant = LLMContextAggregatorPair(
        context,
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(), user_turn_strategies=STRATEGIES
        ),
    )
    pipeline = Pipeline(
        [
            transport.input(),
            FixtureTextSTTService(),
            user,
            ScriptedLLMService([], greeting="Hello."),
            SynthesizerTTSService(),
            transport.output(),
            assistant,
        ]
    )
    worker = PipelineWorker(pipeline)
    runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport: Any, client: object) -> None:
        await runner.cancel()

    await runner.add_workers(worker)
    await runner.run()


def _listeners(strategy: Any) -> int:
    return sum(len(h.handlers) for h in strategy._event_handlers.values())


def test_the_twin_leaves_the_bots_shared_strategies_and_analyzer_alone() -> None:
    from pytest_agent_eval.adapters.base import ConversationInfo
    from pytest_agent_eval.adapters.pipecat import PipecatAdapter
    from pytest_agent_eval.models import Transcript, Turn

    adapter = PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
    transcript = Transcript(id="t", turns=[Turn(user="hi")])

    async def converse(agent: Any, index: int) -> None:
        conversation = await agent.start_conversation(
            ConversationInfo(transcript=transcript, run_index=index)
        )
        await conversation.aclose()

    asyncio.run(converse(adapter.with_committed_turns(), 0))
    assert STRATEGIES.stop == [STOP] and STRATEGIES.stop[0] is STOP
    assert CLEANED == []  # the twin never cleaned up the bot's stop strategy or its analyzer
    assert _listeners(STOP) == 0  # nor left its dead controller listening to it

    asyncio.run(converse(adapter, 1))  # the next ordinary pipeline takes them as they were
    assert CLEANED == ["analyzer"] and _listeners(STOP) == 0
