"""The Pipecat committed-turns twin leaves a bot's own turn strategies alone (issue 35): a bot
whose `UserTurnStrategies` and smart-turn analyzer are module-level shares them with every
pipeline it builds, so the twin works on a copy: after its conversation the bot's strategies
still hold their own stop strategy, which the twin never cleaned up nor left listened to, and
the next ordinary pipeline takes them as they were."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")


class _Shared:
    """What the bot keeps at module level, built once, on first use: building the analyzer
    loads its ONNX model, which collecting the suite must not do (tests/unit/test_suite_tiers.py)."""

    def __init__(self) -> None:
        from pipecat.audio.turn.smart_turn.local_smart_turn_v3 import LocalSmartTurnAnalyzerV3
        from pipecat.turns.user_stop import TurnAnalyzerUserTurnStopStrategy
        from pipecat.turns.user_turn_strategies import UserTurnStrategies

        self.analyzer = LocalSmartTurnAnalyzerV3()
        self.stop = TurnAnalyzerUserTurnStopStrategy(turn_analyzer=self.analyzer)
        self.strategies = UserTurnStrategies(stop=[self.stop])
        self.cleaned: list[str] = []
        own_cleanup = self.analyzer.cleanup

        async def counted_cleanup() -> None:
            self.cleaned.append("analyzer")
            await own_cleanup()

        self.analyzer.cleanup = counted_cleanup  # type: ignore[method-assign]


@functools.cache
def shared() -> _Shared:
    """The bot's module-level strategies and analyzer (one per process)."""
    return _Shared()


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
            vad_analyzer=SileroVADAnalyzer(), user_turn_strategies=shared().strategies
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

    bot = shared()
    asyncio.run(converse(adapter.with_committed_turns(), 0))
    assert bot.strategies.stop == [bot.stop] and bot.strategies.stop[0] is bot.stop
    assert bot.cleaned == []  # the twin never cleaned up the bot's stop strategy or its analyzer
    assert _listeners(bot.stop) == 0  # nor left its dead controller listening to it

    asyncio.run(converse(adapter, 1))  # the next ordinary pipeline takes them as they were
    assert bot.cleaned == ["analyzer"] and _listeners(bot.stop) == 0
