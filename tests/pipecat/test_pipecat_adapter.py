"""PipecatAdapter's contract: the shapes of bot it takes, runs in parallel on their own
pipelines, what a turn records, what it saves, and how it refuses bad settings."""

from __future__ import annotations

import re
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from corpus_bots import RULES, offered_tools, single_bot, voice_bot, voice_pipeline
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat_support import PHRASES, converse, run, spoken, transcript

from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.pipecat import (
    BotInfo,
    FixtureTextSTTService,
    InProcessTransport,
    PipecatAdapter,
    ScriptedLLMService,
)
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import Turn


def text_bot(transport: InProcessTransport) -> list[Any]:
    """No STT, no TTS: a text bot, given as a list of processors."""
    pair = LLMContextAggregatorPair(LLMContext())
    return [
        transport.input(),
        pair.user(),
        ScriptedLLMService(RULES),
        transport.output(),
        pair.assistant(),
    ]


def test_a_text_bot_given_as_processors_answers_text_turns() -> None:
    script = transcript(Turn(user="Hello!"), Turn(user="Where is my order?"))
    greeting, replies = run(converse(PipecatAdapter(text_bot), script))
    assert greeting.text == ""
    assert [r.reply for r in replies] == [
        "Hello! How can I help you?",
        "Your order ships tomorrow.",
    ]
    assert all(r.heard is None and r.heard_segments == [] for r in replies)
    # Without a TTS the reply is the LLM's text; there is no audio to time.
    assert all(r.first_audio_latency_s is None for r in replies)
    assert all(r.latency_s is not None and r.latency_s >= 0 for r in replies)
    assert [r.metadata["pipecat"]["input"] for r in replies] == ["text", "text"]


def test_a_factory_returning_a_pipeline_and_async_factories_work(phrases: dict[str, Path]) -> None:
    async def make(transport: InProcessTransport) -> Pipeline:
        pair = LLMContextAggregatorPair(
            LLMContext(), user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
        )
        return voice_pipeline(transport, ScriptedLLMService(RULES), pair)

    (reply,) = run(converse(PipecatAdapter(make), transcript(spoken("hello", phrases))))[1]
    assert reply.reply == "Hello! How can I help you?"


def test_a_factory_that_takes_a_second_argument_gets_the_runs_information() -> None:
    seen: list[BotInfo] = []

    def make(transport: InProcessTransport, info: BotInfo) -> list[Any]:
        seen.append(info)
        return text_bot(transport)

    script = transcript(Turn(user="Hello!"), id="with_info")
    run(converse(PipecatAdapter(make), script, run_index=2))
    assert [(i.transcript_id, i.run_index) for i in seen] == [("with_info", 2)]


def test_a_run_bot_that_takes_a_third_argument_gets_the_runs_information() -> None:
    """Issue 32: a bot given as ``run_bot=`` got no run information; one that takes a third
    positional parameter now gets the `BotInfo` a ``make_bot`` gets (with tags and variant)."""
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.workers.runner import WorkerRunner

    seen: list[BotInfo] = []

    async def run_bot(transport: InProcessTransport, runner_args: Any, info: BotInfo) -> None:
        seen.append(info)
        worker = PipelineWorker(Pipeline(text_bot(transport)))
        runner = WorkerRunner(handle_sigint=runner_args.handle_sigint)
        await runner.add_workers(worker)

        @transport.event_handler("on_client_disconnected")
        async def on_client_disconnected(transport: Any, client: Any) -> None:
            await runner.cancel()

        await runner.run()

    script = transcript(Turn(user="Hello!"), id="booking[phone]")
    script.tags, script.variant = ["gate:booking"], "phone"
    (reply,) = run(converse(PipecatAdapter(run_bot=run_bot), script, run_index=1))[1]
    assert reply.reply == "Hello! How can I help you?"
    assert [(i.transcript_id, i.run_index, i.tags, i.variant) for i in seen] == [
        ("booking[phone]", 1, ["gate:booking"], "phone")
    ]
    assert seen[0].transcript is script


def test_runs_in_parallel_each_get_their_own_pipeline_and_thread(phrases: dict[str, Path]) -> None:
    """Three runs at once through the runner: each keeps its own conversation, on its own
    thread and clock, and nothing of them is left once they closed."""
    before = {t for t in threading.enumerate() if t.name.startswith("pipecat")}
    pipelines: list[int] = []

    def make(transport: InProcessTransport) -> Any:
        pipelines.append(threading.get_ident())
        return single_bot(transport)

    script = transcript(
        spoken("weather", phrases), Turn(user="Hello!"), spoken("order", phrases), id="parallel"
    )
    script.runs = 3
    result = run(run_transcript(script, PipecatAdapter(make), settings=RunSettings(concurrency=3)))
    assert [r.error for r in result.runs] == [None, None, None]
    assert {tuple(t.reply for t in r.turns) for r in result.runs} == {
        ("It is sunny in Paris.", "Hello! How can I help you?", "Your order ships tomorrow.")
    }
    assert len(set(pipelines)) == 3
    left = {t for t in threading.enumerate() if t.name.startswith("pipecat")} - before
    assert left == set()


def test_reply_and_streamed_audio_share_a_folder_without_overwriting(
    phrases: dict[str, Path], tmp_path: Path
) -> None:
    import soundfile

    adapter = PipecatAdapter(single_bot, audio_out_dir=tmp_path, audio_in_dir=tmp_path)
    (reply,) = run(converse(adapter, transcript(spoken("hello", phrases), id="both")))[1]
    assert reply.audio_in is not None and reply.audio_out is not None
    assert sorted(p.name for p in (tmp_path / "both").iterdir()) == [
        "run1-turn1-reply.wav",
        "run1-turn1.wav",
    ]
    assert soundfile.info(str(reply.audio_in)).samplerate == 16000  # the caller's, not the reply


def test_reply_and_streamed_audio_are_saved_when_asked(
    phrases: dict[str, Path], tmp_path: Path
) -> None:
    import soundfile

    adapter = PipecatAdapter(
        single_bot, audio_out_dir=tmp_path / "out", audio_in_dir=tmp_path / "in"
    )
    (reply,) = run(converse(adapter, transcript(spoken("hello", phrases), id="saved")))[1]
    assert reply.audio_out == (tmp_path / "out" / "saved" / "run1-turn1-reply.wav").resolve()
    assert reply.audio_in == (tmp_path / "in" / "saved" / "run1-turn1.wav").resolve()
    out = soundfile.info(str(reply.audio_out))
    assert out.duration == pytest.approx(reply.metadata["pipecat"]["reply_audio_s"], abs=0.05)
    streamed = soundfile.info(str(reply.audio_in))
    assert streamed.samplerate == 16000
    assert streamed.duration == pytest.approx(
        reply.metadata["pipecat"]["audio_duration_s"], abs=0.01
    )


def test_a_turn_records_what_the_pipeline_did(phrases: dict[str, Path]) -> None:
    (reply,) = run(converse(PipecatAdapter(single_bot), transcript(spoken("weather", phrases))))[1]
    meta = reply.metadata["pipecat"]
    assert meta["input"] == "audio"
    assert meta["user_turns"] == 1 and meta["speech_segments"] == 1
    assert meta["llm_responses"] == 2  # the function call, then the answer
    assert meta["agent"] is None and reply.active_agent is None and reply.handoffs is None
    frames = [e["frame"] for e in meta["events"]]
    assert frames.index("UserStoppedSpeakingFrame") < frames.index("FunctionCallInProgressFrame")
    assert frames[-1] == "BotStoppedSpeakingFrame"
    assert reply.usage is not None and reply.usage.requests == 2
    assert reply.usage.input_tokens > 0 and reply.usage.output_tokens > 0
    assert meta["pipeline_s"] >= meta["audio_duration_s"]
    assert reply.wer is None  # the runner fills it in


def test_a_processor_that_never_yields_is_bounded_on_the_wall(phrases: dict[str, Path]) -> None:
    """A loop that never goes idle stops the virtual clock; the wall bound still ends the turn."""
    import time

    from pipecat.services.llm_service import FunctionCallParams

    def make(transport: InProcessTransport) -> Any:
        worker, _context, llm, _pair = voice_bot(transport)

        async def spin(params: FunctionCallParams) -> None:
            while True:
                time.sleep(0.01)  # blocking work, never awaiting
                await asyncio_sleep0()

        llm.register_function("get_weather", spin)
        return worker

    with pytest.raises(AdapterError) as info:
        run(
            converse(PipecatAdapter(make, timeout_s=1.0), transcript(Turn(user=PHRASES["weather"])))
        )
    message = str(info.value)
    assert message.startswith("turn 1: no end within timeout_s=1 s (+5 s) of wall time")
    assert "raise PipecatAdapter(timeout_s=...)" in message


async def asyncio_sleep0() -> None:
    import asyncio

    await asyncio.sleep(0)


def test_the_constructor_refuses_bad_settings() -> None:
    with pytest.raises(TypeError, match="exactly one of bot"):
        PipecatAdapter()
    with pytest.raises(TypeError, match="exactly one of bot"):
        PipecatAdapter(single_bot, run_bot=single_bot)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="needs a function building the bot"):
        PipecatAdapter(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="whole number of samples per chunk"):
        PipecatAdapter(single_bot, sample_rate=22050, chunk_ms=10)
    with pytest.raises(ValueError, match="speed and tail_silence_s must be >= 0"):
        PipecatAdapter(single_bot, speed=-1)
    with pytest.raises(ValueError, match="log_level='LOUD'"):
        PipecatAdapter(single_bot, log_level="LOUD")


def test_a_factory_that_raises_names_the_fix_for_a_missing_key() -> None:
    import os

    def make(transport: InProcessTransport) -> Any:
        os.environ["AGENT_EVAL_NO_SUCH_KEY"]  # the way a bot reads its service's key
        raise AssertionError("unreachable")

    with pytest.raises(AdapterError) as info:
        run(converse(PipecatAdapter(make), transcript(Turn(user="Hello!"))))
    message = str(info.value)
    assert message.startswith("the pipeline's start: the bot factory raised KeyError")
    assert "offline services such as ScriptedLLMService" in message


def test_missing_pipecat_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_agent_eval.errors import MissingExtraError, install_command

    for name in [m for m in sys.modules if m.startswith("pytest_agent_eval.adapters.pipecat")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pipecat.frames.frames", None)
    import pytest_agent_eval.adapters.pipecat as package

    with pytest.raises(MissingExtraError, match=re.escape(install_command("pipecat"))):
        package.PipecatAdapter  # noqa: B018


def test_pipecat_imported_before_the_clock_is_refused_with_the_fix() -> None:
    """Outside pytest nothing installs the clock first: a bot module importing pipecat before
    the adapter gets one clear error, not a pipeline whose VAD runs on another clock."""
    code = (
        "import pipecat.frames.frames\n"
        "from pytest_agent_eval.adapters.pipecat._compat import check_pipecat\n"
        "try:\n"
        "    check_pipecat()\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.startswith("AdapterError pipecat was imported before pytest-agent-eval could")
    assert "import pytest_agent_eval.adapters.pipecat before anything from pipecat" in out


def test_the_plugin_installs_the_clock_without_importing_pipecat() -> None:
    code = (
        "import sys, time\n"
        "import pytest_agent_eval.plugin\n"
        "from pytest_agent_eval.voice._timeshim import is_time_shim\n"
        "print(is_time_shim(time.time), 'pipecat' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert out.split() == ["True", "False"]


def test_the_offline_services_need_no_key_or_network() -> None:
    """The services of the corpus bots, built alone: nothing reads a key or opens a socket."""
    transport = InProcessTransport()
    pair = LLMContextAggregatorPair(
        LLMContext(), user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer())
    )
    pipeline = Pipeline(
        [transport.input(), FixtureTextSTTService(), pair.user(), ScriptedLLMService(RULES)]
    )
    assert pipeline.processors


def test_a_bot_that_hangs_up_ends_the_conversation_with_a_clear_error() -> None:
    """A function that ends the call (pushes EndWorkerFrame): its turn is answered, and the next
    turn errors saying the bot hung up, in which turn and how, instead of waiting for its
    timeout."""
    from pipecat.frames.frames import EndWorkerFrame
    from pipecat.processors.frame_processor import FrameDirection
    from pipecat.services.llm_service import FunctionCallParams

    from pytest_agent_eval.adapters.pipecat import Rule

    def make(transport: InProcessTransport) -> list[Any]:
        llm = ScriptedLLMService([Rule(r"bye", tool="end_call", reply="Goodbye!")])

        async def end_call(params: FunctionCallParams) -> None:
            await params.result_callback("ended")
            await params.llm.push_frame(EndWorkerFrame(), FrameDirection.UPSTREAM)

        llm.register_function("end_call", end_call)
        pair = LLMContextAggregatorPair(LLMContext(tools=offered_tools(["end_call"])))
        return [transport.input(), pair.user(), llm, transport.output(), pair.assistant()]

    script = transcript(Turn(user="Bye!"), Turn(user="Hello?"))
    with pytest.raises(AdapterError) as info:
        run(converse(PipecatAdapter(make), script))
    message = str(info.value)
    assert message.startswith(
        "turn 2: the pipeline ended before this turn: the bot hung up in turn 1 (it pushed "
        "EndWorkerFrame)"
    )
