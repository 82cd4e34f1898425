"""A processor of the bot that raises mid-conversation is CRASHED with its exception and its
place, as a LiveKit agent whose hook raises is: the same behaviour, one verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_bots import voice_pipeline
from pipecat.frames.frames import Frame, LLMContextFrame
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat_support import run, spoken, transcript

from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.pipecat import InProcessTransport, PipecatAdapter, Rule
from pytest_agent_eval.models import Turn


class LooksUpTheCaller(FrameProcessor):  # type: ignore[misc]
    """Between the user aggregator and the LLM: its lookup breaks on the second user turn."""

    def __init__(self) -> None:
        super().__init__()
        self.turns = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, LLMContextFrame) and direction == FrameDirection.DOWNSTREAM:
            self.turns += 1
            if self.turns == 2:
                raise RuntimeError("caller lookup failed")
        await self.push_frame(frame, direction)


def crashing_bot(transport: InProcessTransport) -> Any:
    from corpus_bots import FUNCTIONS, RULES
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    from pytest_agent_eval.adapters.pipecat import (
        FixtureTextSTTService,
        ScriptedLLMService,
        SynthesizerTTSService,
    )

    llm = ScriptedLLMService(RULES)
    for name, handler in FUNCTIONS.items():
        llm.register_function(name, handler)
    pair = LLMContextAggregatorPair(
        LLMContext(), user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
    )
    assert voice_pipeline  # the corpus's shape, with the lookup in the middle
    pipeline = Pipeline(
        [
            transport.input(),
            FixtureTextSTTService(),
            pair.user(),
            LooksUpTheCaller(),
            llm,
            SynthesizerTTSService(),
            transport.output(),
            pair.assistant(),
        ]
    )
    return PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True))


def test_a_processor_that_raises_mid_conversation_is_a_crash(phrases: dict[str, Path]) -> None:
    script = transcript(spoken("hello", phrases), Turn(user="Where is my order?"))
    script.threshold = 0.0
    result = run(run_transcript(script, PipecatAdapter(crashing_bot)))
    assert result.errored_run_count == 0  # not an ERROR: the bot was evaluated, and broke
    assert result.verdict == "crashed" and not result.passed
    first, second = result.runs[0].turns
    assert first.verdict == "passed" and first.crash is None
    assert second.verdict == "crashed"
    crash = second.crash
    assert crash is not None
    assert (crash.type, crash.message) == ("RuntimeError", "caller lookup failed")
    assert crash.where is not None
    assert crash.where.startswith("test_pipecat_crash.py:") and crash.where.endswith(
        " in process_frame"
    )
    assert second.error is not None and "LooksUpTheCaller" in second.error


def test_a_variant_the_bot_cannot_hear_fails_naming_the_condition(
    phrases: dict[str, Path],
) -> None:
    """As in process and in a room: under noise the bot cannot hear through (its VAD takes the
    noise for speech that never ends), the bot failed that condition, a FAIL naming it."""
    pytest.importorskip("faster_whisper")
    from corpus_bots import voice_bot

    from pytest_agent_eval.adapters.pipecat import WhisperSTTService
    from pytest_agent_eval.models import AudioCondition

    deaf = Turn(
        user=spoken("weather", phrases).user,
        audio=phrases["weather"],
        conditions=[AudioCondition("noise", {"color": "white", "snr_db": -12, "talkers": 4})],
    )
    adapter = PipecatAdapter(
        lambda transport: voice_bot(transport, stt=WhisperSTTService(cpu_threads=1))[0]
    )
    result = run(run_transcript(transcript(deaf, id="deaf"), adapter))
    (turn,) = result.runs[0].turns
    assert result.errored_run_count == 0 and turn.verdict == "failed", turn.error
    assert turn.error is not None
    assert turn.error.startswith(
        "AgentTimeoutError: turn 1: under the audio conditions noise(color=white, snr_db=-12, "
        "talkers=4): no end within timeout_s="
    )


def _broken_args(ctx: Any) -> dict[str, Any]:
    raise RuntimeError("the weather lookup broke")


def _broken_reply(ctx: Any) -> str:
    raise RuntimeError("the greeting broke")


def bot_with_rules(*rules: Rule) -> Any:
    """The corpus's voice bot, its ScriptedLLMService answering from ``rules`` first."""
    from corpus_bots import RULES, voice_bot

    def bot(transport: InProcessTransport) -> Any:
        worker, _, llm, _ = voice_bot(transport)
        llm.rules = [*rules, *RULES]
        return worker

    return bot


@pytest.mark.parametrize(
    ("phrase", "rule", "message", "function"),
    [
        (
            "weather",
            Rule(r"weather in (?P<city>\w+)", tool="get_weather", args=_broken_args),
            "the weather lookup broke",
            "_broken_args",
        ),
        ("hello", Rule(r"\bhello\b", reply=_broken_reply), "the greeting broke", "_broken_reply"),
    ],
    ids=["args", "reply"],
)
def test_a_rule_callback_that_raises_is_a_crash_at_the_callback(
    phrases: dict[str, Path], phrase: str, rule: Rule, message: str, function: str
) -> None:
    """The rule's callback is the user's code, though our ScriptedLLMService calls it: CRASHED
    with its file and line, as on LiveKit (tests/livekit/test_livekit_crash.py)."""
    result = run(
        run_transcript(transcript(spoken(phrase, phrases)), PipecatAdapter(bot_with_rules(rule)))
    )
    assert result.errored_run_count == 0
    (turn,) = result.runs[0].turns
    assert turn.verdict == "crashed", turn.error
    crash = turn.crash
    assert crash is not None
    assert (crash.type, crash.message) == ("RuntimeError", message)
    lines = {"_broken_args": _broken_args, "_broken_reply": _broken_reply}
    line = lines[function].__code__.co_firstlineno + 1
    assert crash.where == f"test_pipecat_crash.py:{line} in {function}"


def test_our_scripted_service_failing_in_its_own_code_stays_an_error(
    phrases: dict[str, Path],
) -> None:
    """A reply template naming a group its pattern lacks fails in our code (no function of the
    user's ran): an ERROR, not a crash of the bot."""
    rule = Rule(r"\bhello\b", reply="Hello {nobody}!")
    result = run(
        run_transcript(transcript(spoken("hello", phrases)), PipecatAdapter(bot_with_rules(rule)))
    )
    (turn,) = result.runs[0].turns
    assert turn.verdict == "error" and turn.crash is None, turn.error
    assert result.errored_run_count == 1
