"""The defect classes found on the LiveKit side, each tried on Pipecat: a user turn running
into the next fixture, speech counted in the wrong turn, a latency that is not a number, and
a fixture that lost its sidecar passing for words it does not say."""

from __future__ import annotations

import asyncio
import re
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from corpus_bots import single_bot, smart_turn_bot, voice_bot
from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InputAudioRawFrame,
    InterruptionFrame,
    LLMFullResponseStartFrame,
    TTSSpeakFrame,
    UserSpeakingFrame,
    UserStartedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor
from pipecat_support import PHRASES, converse, run, spoken, transcript

from pytest_agent_eval.adapters.pipecat import (
    FixtureTextSTTService,
    InProcessTransport,
    PipecatAdapter,
    SynthesizerTTSService,
)
from pytest_agent_eval.errors import AdapterError, AgentTimeoutError, AudioFixtureError
from pytest_agent_eval.evaluators._barge_in import InterruptEvaluator
from pytest_agent_eval.models import (
    AgentReply,
    AudioCondition,
    InterruptConfig,
    Turn,
    TurnContext,
)

# -- turns split across fixtures ------------------------------------------------------------------


@pytest.mark.parametrize("bot", [single_bot, smart_turn_bot], ids=["speech_timeout", "smart_turn"])
def test_a_users_turn_never_runs_into_the_next_fixture(bot: Any, phrases: dict[str, Path]) -> None:
    """No silence after the fixtures, and a stop strategy that waits (smart-turn waits up to
    3 s of silence for an incomplete sentence): the next fixture still streams only once the
    pipeline closed the user's turn and the bot answered it, so each turn hears its own words."""
    script = transcript(
        spoken("order", phrases), spoken("hello", phrases), spoken("weather", phrases)
    )
    _, replies = run(converse(PipecatAdapter(bot, tail_silence_s=0.0), script))
    assert [r.heard_segments for r in replies] == [
        [PHRASES["order"]],
        [PHRASES["hello"]],
        [PHRASES["weather"]],
    ]
    assert [r.metadata["pipecat"]["user_turns"] for r in replies] == [1, 1, 1]
    assert [r.reply for r in replies] == [
        "Your order ships tomorrow.",
        "Hello! How can I help you?",
        "It is sunny in Paris.",
    ]


# -- speech in the wrong turn -------------------------------------------------------------------


def test_a_slow_functions_answer_belongs_to_the_turn_that_called_it(
    phrases: dict[str, Path],
) -> None:
    """get_forecast takes 2 s: its answer comes long after the bot's first silence, and is
    still turn 1's; the text turn after it hears only its own reply."""
    script = transcript(spoken("forecast", phrases), Turn(user="Hello!"))
    _, (first, second) = run(converse(PipecatAdapter(single_bot), script))
    assert first.reply == "Tomorrow will be rainy."
    assert [c.outcome for c in first.calls] == ["ok"]
    assert second.reply == "Hello! How can I help you?"
    assert second.calls == []
    assert second.metadata["pipecat"]["late_tool_results"] == []


def test_the_greeting_is_not_part_of_turn_one(phrases: dict[str, Path]) -> None:
    from corpus_bots import GREETING, greeting_bot

    greeting, (first,) = run(
        converse(PipecatAdapter(greeting_bot), transcript(spoken("hello", phrases)))
    )
    assert greeting.text == GREETING
    assert first.reply == "Hello! How can I help you?"
    assert first.metadata["pipecat"]["greeting"][0]["text"] == GREETING


def test_the_interrupted_words_belong_to_the_interrupted_turn(phrases: dict[str, Path]) -> None:
    """What the bot says of its reply between the interruption and its stopping is the
    interrupted turn's, not the interrupting turn's."""
    script = transcript(
        spoken("story", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=2000)),
    )
    _, (first, second) = run(converse(PipecatAdapter(single_bot), script))
    assert first.reply and "Once upon a time" in first.reply
    assert "Once" not in second.reply and second.reply == "Okay, I will stop."
    assert second.barge_in is not None and second.barge_in.stopped
    assert second.barge_in.interrupted_text == first.reply


def test_the_vad_hears_an_interruption_start_at_the_same_point_wherever_it_falls(
    phrases: dict[str, Path],
) -> None:
    """Where the interrupting speech falls among the VAD's 32 ms windows decides in which
    window the VAD hears it start; in real time that phase follows the compute the reply took
    to start. The speech starts on a window boundary, so the bot stops the same time after
    it starts whatever the phase (here moved by after_ms, at max speed), and the interruption
    starts at or just after the moment asked for (the next window boundary)."""
    latencies, positions = [], []
    for after_ms in (1500, 1510, 1520, 1530):
        script = transcript(
            spoken("story", phrases),
            spoken(
                "stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=after_ms)
            ),
        )
        _, (_first, second) = run(converse(PipecatAdapter(single_bot), script))
        barge = second.barge_in
        assert barge is not None and barge.stopped and barge.reply_position_s is not None
        assert barge.stop_latency_s is not None
        latencies.append(barge.stop_latency_s)
        positions.append(barge.reply_position_s)
        assert after_ms / 1000 - 1e-3 <= barge.reply_position_s < after_ms / 1000 + 0.033
        assert second.metadata["pipecat"]["barge_in_behind_s"] == 0.0
    # The same window each time; the bot stops within one microphone chunk (20 ms) of the
    # same point (which chunk completes that window depends on the phase of the two grids).
    assert max(latencies) - min(latencies) < 0.02, (latencies, positions)


def test_an_interruption_at_a_word_cuts_the_reply_there(phrases: dict[str, Path]) -> None:
    """at_word: the interrupting speech starts as word 8 of the reply leaves the speaker; the
    reply holds the words said until the bot stopped, word 8 among them, and not the rest."""
    script = transcript(
        spoken("story", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, at_word=8)),
    )
    _, (first, second) = run(converse(PipecatAdapter(single_bot), script))
    story = "Once upon a time there was a small robot who lived by the sea."
    assert first.reply.startswith("Once upon a time there was a small robot")
    assert len(first.reply.split()) < len(story.split())
    assert second.barge_in is not None and second.barge_in.stopped
    assert second.barge_in.interrupted_text == first.reply
    assert second.barge_in.precondition is None


def test_a_reply_that_ends_before_the_interruption_is_due_is_not_a_barge_in(
    phrases: dict[str, Path],
) -> None:
    """Nothing passes for the wrong reason: the reply to "hello" lasts about 2 s, the
    interruption is due at 6 s; the barge-in is not tested and says why, and the turn runs as
    an ordinary one."""
    script = transcript(
        spoken("hello", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=6000)),
    )
    _, (first, second) = run(converse(PipecatAdapter(single_bot), script))
    assert first.reply == "Hello! How can I help you?"
    assert second.reply == "Okay, I will stop."
    assert second.barge_in is not None
    assert second.barge_in.precondition is not None
    assert "before the interruption was due (6000 ms into the reply)" in (
        second.barge_in.precondition
    )


class LoopLoad(FrameProcessor):
    """A loaded process in real time: chunks of the caller's audio (20 ms each) cost
    ``cost_s`` of blocking compute, so the pipeline's loop falls behind and has no idle moment
    until it caught up again. ``during`` limits it to those chunks counted from each time the
    bot starts speaking (never while it is silent); None loads every chunk, for good."""

    def __init__(self, cost_s: float, during: tuple[int, int] | None = None) -> None:
        super().__init__()
        self.cost_s, self.during = cost_s, during
        self.chunks: int | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame):
            self.chunks = 0
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self.chunks = None
        elif isinstance(frame, InputAudioRawFrame):
            if self.chunks is not None:
                self.chunks += 1
            if self.during is None or (
                self.chunks is not None and self.during[0] <= self.chunks < self.during[1]
            ):
                time.sleep(self.cost_s)
        await self.push_frame(frame, direction)


def loaded_bot(load: Callable[[], LoopLoad]) -> Callable[[InProcessTransport], Any]:
    def bot(transport: InProcessTransport) -> Any:
        return voice_bot(transport, stt=Pipeline([load(), FixtureTextSTTService()]))[0]

    return bot


# From 1 s into each reply, 1.2 s of the caller's audio costs 25 ms per 20 ms chunk: no idle
# moment until about 2.5 s into the reply.
busy_bot = loaded_bot(lambda: LoopLoad(0.025, during=(50, 110)))
# Every chunk costs 21 ms per 20: a process past what it can run in real time, for good.
always_behind_bot = loaded_bot(lambda: LoopLoad(0.021))


def test_a_barge_in_on_a_loop_with_no_idle_moment_splits_the_turns_at_the_interruption(
    phrases: dict[str, Path],
) -> None:
    """In real time on a loaded process, the interrupted turn ends and the interrupting one
    begins when the interruption is due, not at the loop's next idle moment (which comes only
    once the bot stopped): the interrupting turn keeps its own speech and the bot's stop, and
    the barge-in is judged from them. Split at the idle moment, the interrupting turn lost its
    start and the interruption (the capacity test's Pipecat conversations that "stopped
    answering" under load)."""
    script = transcript(
        spoken("story", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=3000, after_ms=1500)),
    )
    _, (first, second) = run(converse(PipecatAdapter(busy_bot, speed=1.0, timeout_s=15.0), script))
    assert first.reply.startswith("Once upon a time")
    assert second.reply == "Okay, I will stop."
    barge = second.barge_in
    assert barge is not None and barge.precondition is None
    assert barge.stopped and barge.interrupted_text == first.reply
    # The load was there: the microphone fell behind its schedule while the reply played.
    assert second.metadata["pipecat"]["barge_in_behind_s"] > 0.1


def test_a_loop_that_never_goes_idle_is_an_error_not_a_bot_that_stopped_answering(
    phrases: dict[str, Path],
) -> None:
    """In real time on a process that cannot keep pace, the bot answers, but the loop never has
    an idle moment to confirm the turn is over: the run could not evaluate the bot, and says
    so, rather than calling it a bot that never finished (a FAIL a gate could absorb)."""
    adapter = PipecatAdapter(always_behind_bot, speed=1.0, timeout_s=6.0)
    with pytest.raises(AdapterError, match="never went idle to confirm it") as caught:
        run(converse(adapter, transcript(spoken("hello", phrases))))
    assert not isinstance(caught.value, AgentTimeoutError)
    # It begins at the start already: the microphone's silence keeps the loop behind.
    assert str(caught.value).startswith("the pipeline's start: no end within timeout_s=6 s")
    assert "speed=0" in str(caught.value)


class FillerLine(FrameProcessor):
    """Says "Sure." before each answer of its LLM, as a bot covering its LLM's latency does:
    its own TTS context, so the reply stops and starts again between the two."""

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM and isinstance(frame, LLMFullResponseStartFrame):
            await self.push_frame(TTSSpeakFrame("Sure."), direction)
        await self.push_frame(frame, direction)


class GoesOn(FrameProcessor):
    """Goes quiet at an interruption, then talks on over the caller (``line``)."""

    def __init__(self, line: str) -> None:
        super().__init__()
        self.line, self.speaking = line, False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if isinstance(frame, BotStartedSpeakingFrame | BotStoppedSpeakingFrame):
            self.speaking = isinstance(frame, BotStartedSpeakingFrame)
        elif isinstance(frame, InterruptionFrame) and self.speaking:
            self.speaking = False
            await self.push_frame(TTSSpeakFrame(self.line))


class SlowAnswer(FrameProcessor):
    """Says "Sure." the moment its LLM starts an answer; the first answer it passes on 2 s
    later (the LLM's latency a filler line covers): the bot is quiet between the two."""

    def __init__(self) -> None:
        super().__init__()
        self.answers = 0

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        if direction == FrameDirection.DOWNSTREAM and isinstance(frame, LLMFullResponseStartFrame):
            await self.push_frame(TTSSpeakFrame("Sure."), direction)
            self.answers += 1
            if self.answers == 1:
                await asyncio.sleep(2.0)
        await self.push_frame(frame, direction)


def _interrupted_across_a_pause(
    part: FrameProcessor, phrases: dict[str, Path]
) -> tuple[AgentReply, AgentReply, float]:
    """The story, interrupted 800 ms in, by a bot with ``part`` between its LLM and its TTS
    (its "Sure." lasts about 0.84 s); the two turns' replies and when the interruption reached
    the pipeline (seconds from when it was due). Checks the case is the one meant: the bot went
    quiet (the end of "Sure.") after the interruption was due, before the VAD heard it."""
    script = transcript(
        spoken("story", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=800)),
    )
    bot = lambda transport: voice_bot(transport, after_llm=[part])[0]  # noqa: E731
    _, (first, second) = run(converse(PipecatAdapter(bot), script))
    events = [(e["t"], e["frame"]) for e in second.metadata["pipecat"]["events"]]
    cut = next(t for t, name in events if name == "InterruptionFrame")
    assert any(name == "BotStoppedSpeakingFrame" and t < cut for t, name in events)
    return first, second, cut


def test_a_pause_between_two_parts_of_the_reply_is_not_its_stop(
    phrases: dict[str, Path],
) -> None:
    """The interruption is due just before the pause between a filler line and the answer,
    and the VAD hears it just after: what the bot says after the pause is still the
    interrupted reply (the interrupting turn's answer cannot come before that turn ended), and
    the barge-in is judged on the stop the interruption caused, not on the pause. Before, the
    answer's first words went to the interrupting turn as audio before its speech ended (an
    ERROR), and a stop 16 ms after the interruption was due passed the check."""
    first, second, cut = _interrupted_across_a_pause(FillerLine(), phrases)
    assert first.reply.startswith("Sure. Once upon a time")
    assert second.reply == "Sure. Okay, I will stop."
    barge = second.barge_in
    assert barge is not None and barge.stopped and not barge.resumed
    assert barge.interrupted_text == first.reply
    assert barge.min_interruption_s is not None and barge.stop_latency_s is not None
    assert barge.stop_latency_s >= barge.min_interruption_s  # not before the VAD heard it
    assert barge.stop_latency_s == pytest.approx(cut, abs=0.001)


@pytest.mark.parametrize("line", ["As I was saying, once upon a time.", "Right."])
def test_a_bot_that_goes_quiet_then_talks_on_over_the_caller_resumed(
    line: str, phrases: dict[str, Path]
) -> None:
    """A bot that stops at the interruption, then talks on while the caller is still speaking,
    did not stop, however short its second go: the barge-in reads resumed and not stopped (its
    second go ended on its own, no interruption stopped it), and the check fails saying so.
    Before, the second go went to the interrupting turn as audio before its speech ended (an
    ERROR about the latency)."""
    script = transcript(
        spoken("story", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=1500)),
    )
    bot = lambda transport: voice_bot(transport, after_llm=[GoesOn(line)])[0]  # noqa: E731
    _, (first, second) = run(converse(PipecatAdapter(bot), script))
    assert second.reply == "Okay, I will stop."
    assert first.reply.endswith(line)
    barge = second.barge_in
    assert barge is not None and barge.resumed and not barge.stopped
    assert barge.stop_latency_s is None
    assert barge.quiet_after_s is not None and barge.quiet_after_s < 1.0
    turn = TurnContext(user=PHRASES["stop"], reply=second.reply, tool_calls=[], history=[])
    turn.barge_in = barge
    result = InterruptEvaluator(stop_within_ms=1500)._check(turn)
    assert not result.passed and not result.errored
    assert "went quiet, then resumed" in result.reasoning


def test_an_interruption_in_a_pause_of_the_reply_stops_it_there(
    phrases: dict[str, Path],
) -> None:
    """The interruption reaches the pipeline while the bot is quiet between its filler line
    and its answer, and the answer never comes: the bot stopped, at the interruption (it
    yielded then; the caller had heard it quiet since the pause), not "kept speaking"."""
    first, second, cut = _interrupted_across_a_pause(SlowAnswer(), phrases)
    assert first.reply == "Sure."
    assert second.reply == "Sure. Okay, I will stop."
    barge = second.barge_in
    assert barge is not None and barge.stopped and not barge.resumed
    assert barge.stop_latency_s == pytest.approx(cut, abs=0.001)
    assert barge.played_s is not None and barge.played_s < 1.0  # "Sure." alone played


# -- negative latency ------------------------------------------------------------------------------


class Impatient(FrameProcessor):
    """Talks over the caller: once the user has been speaking a moment (the first
    ``UserSpeakingFrame`` after the interruption that opens the user's turn), it speaks."""

    def __init__(self) -> None:
        super().__init__()
        self._waiting = False

    async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
        await super().process_frame(frame, direction)
        await self.push_frame(frame, direction)
        if direction != FrameDirection.DOWNSTREAM:
            return
        if isinstance(frame, UserStartedSpeakingFrame):
            self._waiting = True
        elif isinstance(frame, UserSpeakingFrame) and self._waiting:
            self._waiting = False
            await self.push_frame(TTSSpeakFrame("Are you still there?"))


def test_speech_before_the_end_of_the_users_speech_is_no_latency(
    phrases: dict[str, Path],
) -> None:
    """A reply text that comes before the speech it would answer ends fails the turn, instead of
    handing max_latency_ms a negative number it would pass on."""
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker

    from pytest_agent_eval.adapters.pipecat import (
        FixtureTextSTTService,
        ScriptedLLMService,
        SynthesizerTTSService,
    )

    def bot(transport: InProcessTransport) -> Any:
        from corpus_bots import RULES
        from pipecat.audio.vad.silero import SileroVADAnalyzer
        from pipecat.processors.aggregators.llm_context import LLMContext
        from pipecat.processors.aggregators.llm_response_universal import (
            LLMContextAggregatorPair,
            LLMUserAggregatorParams,
        )

        pair = LLMContextAggregatorPair(
            LLMContext(), user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
        )
        pipeline = Pipeline(
            [
                transport.input(),
                FixtureTextSTTService(),
                pair.user(),
                Impatient(),
                ScriptedLLMService(RULES),
                SynthesizerTTSService(),
                transport.output(),
                pair.assistant(),
            ]
        )
        return PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True))

    with pytest.raises(AdapterError) as info:
        run(converse(PipecatAdapter(bot), transcript(spoken("hello", phrases))))
    message = str(info.value)
    assert re.match(
        r"turn 1: the bot's first reply text came \d+\.\d\d s before the end of the user's "
        r"speech \(it talked over them\)",
        message,
    ), message
    assert "its latency cannot be measured" in message


def test_latency_counts_from_this_turns_own_input(phrases: dict[str, Path]) -> None:
    """A text turn after an audio one counts from its own sending, never from the speech of
    the turn before."""
    script = transcript(spoken("weather", phrases), Turn(user="Hello!"))
    _, (first, second) = run(converse(PipecatAdapter(single_bot), script))
    assert first.latency_s is not None and 0.5 < first.latency_s < 3
    assert second.latency_s is not None and 0 <= second.latency_s < 0.5


# -- a lost sidecar passing -------------------------------------------------------------------------


def test_a_wav_that_lost_its_sidecar_and_says_something_else_is_refused(
    phrases: dict[str, Path], tmp_path: Path
) -> None:
    """A CI cache that restored *.wav but not the sidecars: a WAV saying "Hello there!" given to
    a turn whose text is the weather question must not be heard as that question."""
    wav = tmp_path / "weather.wav"
    shutil.copy(phrases["hello"], wav)
    script = transcript(Turn(user=PHRASES["weather"], audio=wav))
    with pytest.raises(AudioFixtureError) as info:
        run(converse(PipecatAdapter(single_bot), script))
    message = str(info.value)
    assert message.startswith("turn 1: ")
    assert f"it was synthesized from {PHRASES['hello']!r}, not from {PHRASES['weather']!r}" in (
        message
    )
    assert "WhisperSTT" in message


def test_a_wav_that_lost_its_sidecar_is_refused_with_the_fix(
    phrases: dict[str, Path], tmp_path: Path
) -> None:
    """Without its sidecar, the key inside the WAV proves the words but not when each is said:
    a stand-in STT cannot hand them over as the audio says them (issue 32), so the fixture is
    refused, naming the command that makes the sidecar again."""
    wav = tmp_path / "hello.wav"
    shutil.copy(phrases["hello"], wav)
    with pytest.raises(AudioFixtureError, match=r"its sidecar is missing.*synthesize_audio"):
        run(
            converse(PipecatAdapter(single_bot), transcript(Turn(user=PHRASES["hello"], audio=wav)))
        )


def test_a_recording_proves_nothing(phrases: dict[str, Path], tmp_path: Path) -> None:
    import soundfile

    wav = tmp_path / "recorded.wav"
    data, rate = soundfile.read(str(phrases["hello"]), dtype="int16")
    soundfile.write(str(wav), data, rate, subtype="PCM_16")
    with pytest.raises(AudioFixtureError, match=r"it is a recording .*WhisperSTT"):
        run(
            converse(PipecatAdapter(single_bot), transcript(Turn(user=PHRASES["hello"], audio=wav)))
        )


def test_fixture_text_is_refused_under_audio_conditions(phrases: dict[str, Path]) -> None:
    """Under noise, an STT that does not listen would hear every word: refused, naming the
    turn and an STT that listens."""
    turn = Turn(
        user=PHRASES["hello"],
        audio=phrases["hello"],
        conditions=[AudioCondition("noise", {"color": "white", "snr_db": 5})],
    )
    with pytest.raises(AdapterError) as info:
        run(converse(PipecatAdapter(single_bot), transcript(turn)))
    message = str(info.value)
    assert "turn 1: audio conditions (noise(" in message
    assert "FixtureTextSTTService" in message and "WhisperSTTService()" in message


def test_a_word_said_only_because_real_time_fell_behind_is_reported() -> None:
    """The lag is the microphone's lateness plus the compute from the VAD hearing the user
    start to the bot stopping; a word that left the speaker within it before the cut is named
    (it would not have been said with no lag), and none is with no lag (max speed)."""
    from pytest_agent_eval.adapters.pipecat._barge_in import _barge_lag
    from pytest_agent_eval.adapters.pipecat._record import TurnLog
    from pytest_agent_eval.adapters.pipecat._session import BargeInRun

    first = TurnLog(index=0, kind="audio", started_at=0.0)
    first.spoken = [(1.0, "Once", False), (1.85, "small", False)]
    # The pipeline's InterruptionFrame as the VAD heard the user, the halt 10 ms later.
    first.carried = [(1.94, "cut"), (1.95, "stop")]
    second = TurnLog(index=1, kind="audio", started_at=1.5)
    second.events = [(1.94, "VADUserStartedSpeakingFrame")]
    second.halts = [1.95]
    on_time = BargeInRun(first=first, second=second, due_at=1.5, behind_s=0.0)
    lag, decided = _barge_lag(on_time, second)
    assert round(lag, 3) == 0.01 and decided == []
    late = BargeInRun(first=first, second=second, due_at=1.5, behind_s=0.1)
    lag, decided = _barge_lag(late, second)
    assert round(lag, 3) == 0.11 and decided == ["small"]
    second.events = [(1.95, "VADUserStartedSpeakingFrame")]
    assert _barge_lag(on_time, second) == (0.0, [])


# -- a function the interruption cancels ----------------------------------------------------------

LOOKING = (
    "Let me look at the forecast for you, the weather service is slow today, so this may take "
    "a little while."
)


async def _slow_forecast(params: Any) -> None:
    """Says a line of its own, then waits on a backend far slower than the caller's patience."""
    import asyncio

    await params.llm.push_frame(TTSSpeakFrame(LOOKING))
    await asyncio.sleep(20.0)
    await params.result_callback({"sky": "rainy"})


def _slow_tool_bot(transport: InProcessTransport) -> Any:
    from corpus_bots import voice_bot

    worker, _context, llm, _pair = voice_bot(transport)
    llm.register_function("get_forecast", _slow_forecast)  # cancel_on_interruption: Pipecat's
    return worker


def test_a_function_the_interruption_cancels_reads_cancelled(phrases: dict[str, Path]) -> None:
    """Issue 23: Pipecat cancels a function running when the caller interrupts (a
    ``FunctionCallCancelFrame``); the cut turn's call reads ``cancelled``, not ``error``."""
    script = transcript(
        spoken("forecast", phrases),
        spoken("stop", phrases, interrupt=InterruptConfig(stop_within_ms=1500, after_ms=1000)),
    )
    _, (first, second) = run(converse(PipecatAdapter(_slow_tool_bot), script))
    assert second.barge_in is not None and second.barge_in.stopped
    (call,) = first.calls
    assert (call.name, call.outcome, call.cancelled) == ("get_forecast", "cancelled", True)
    assert "rainy" not in first.reply + second.reply


# -- a slow stand-in voice ---------------------------------------------------------------------


class _LoadedMachineTTS(SynthesizerTTSService):
    """The offline voice as a loaded machine runs it: each sentence takes 3.5 s to synthesize,
    longer than Pipecat's default 3 s wait for a TTS context's first audio."""

    def _speak(self, text: str) -> tuple[bytes, list[tuple[str, float]]]:
        spoken = super()._speak(text)
        time.sleep(3.5)  # the synthesis thread's own time, as under load; not a test's wait
        return spoken

    _speak._agent_eval_inline = True  # type: ignore[attr-defined]


def test_a_reply_the_offline_voice_is_slow_to_synthesize_is_still_spoken(
    phrases: dict[str, Path],
) -> None:
    """In real time on a loaded machine the stand-in TTS once took over 3 s for a sentence;
    Pipecat closed the reply's audio context as silent and the bot never answered (a capacity
    run read it as the agent stopping). The reply is spoken, however long synthesis takes."""
    from corpus_bots import RULES, offered_tools
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineParams, PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    from pytest_agent_eval.adapters.pipecat import FixtureTextSTTService, ScriptedLLMService

    def bot(transport: InProcessTransport) -> Any:
        pair = LLMContextAggregatorPair(
            LLMContext(tools=offered_tools()),
            user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer()),
        )
        pipeline = Pipeline(
            [
                transport.input(),
                FixtureTextSTTService(),
                pair.user(),
                ScriptedLLMService(RULES),
                _LoadedMachineTTS(),
                transport.output(),
                pair.assistant(),
            ]
        )
        return PipelineWorker(pipeline, params=PipelineParams(enable_metrics=True))

    _, (reply,) = run(
        converse(PipecatAdapter(bot, speed=1.0), transcript(spoken("hello", phrases)))
    )
    assert reply.reply == "Hello! How can I help you?", reply
    assert reply.metadata["pipecat"]["reply_audio_s"] > 0.5, reply.metadata
