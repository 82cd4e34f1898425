"""The offline Pipecat services on their own: the scripted LLM's rules, the fixture-text STT's
reading of segments, Whisper hearing a fixture for real."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from corpus_bots import voice_bot
from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
from pipecat_support import PHRASES, converse, run, spoken, transcript

from pytest_agent_eval.adapters.pipecat import (
    FixtureTextSTTService,
    PipecatAdapter,
    Rule,
    ScriptContext,
    ScriptedLLMService,
    WhisperSTTService,
    parse_number,
)
from pytest_agent_eval.models import Turn

NAME = r"my name is (\w+)"


def booking(ctx: ScriptContext) -> dict[str, object]:
    return {"party": parse_number(ctx.group("party")), "name": ctx.recall(NAME)}


LLM = ScriptedLLMService(
    [
        Rule(
            r"table for (?P<party>\w+)",
            tool="book",
            args=booking,
            preamble="One moment.",
            reply="Booked: {output}.",
        ),
        Rule(r"prescription (?P<rx>\d+)", tool="refill", args={"rx": "{rx}"}, reply="Done."),
        Rule(
            r"dessert",
            tool="dessert_menu",
            reply=lambda ctx: "No dessert today." if ctx.tool_error else "Cake.",
        ),
    ],
    greeting="Welcome!",
    instructions=[Rule(r"introduce the billing desk", reply="Billing here.")],
)


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def test_a_rule_with_a_tool_calls_it_then_replies_from_its_output() -> None:
    messages = [
        user("My name is Alice."),
        {"role": "assistant", "content": "Hi Alice."},
        user("A table for two, please."),
    ]
    text, calls = LLM.respond_to(messages)
    assert (text, calls) == ("One moment.", [("book", {"party": 2, "name": "Alice"})])
    done = [
        *messages,
        {"role": "assistant", "tool_calls": [{"id": "c1"}]},
        {"role": "tool", "tool_call_id": "c1", "content": '"table for 2"'},
    ]
    assert LLM.respond_to(done) == ("Booked: table for 2.", [])


def test_a_function_in_progress_is_not_its_output() -> None:
    messages = [user("A table for two"), {"role": "tool", "content": "IN_PROGRESS"}]
    assert LLM.respond_to(messages)[1] == [("book", {"party": 2, "name": None})]


def test_a_failed_function_is_seen_as_an_error() -> None:
    failed = '"The function `dessert_menu` failed and returned no result."'
    messages = [user("Any dessert?"), {"role": "tool", "content": failed}]
    assert LLM.respond_to(messages) == ("No dessert today.", [])
    missing = '"The function `dessert_menu` is not currently available."'
    assert LLM.respond_to([user("Any dessert?"), {"role": "tool", "content": missing}])[0] == (
        "No dessert today."
    )


def test_a_declared_string_argument_stays_a_string() -> None:
    tools = ToolsSchema(
        standard_tools=[
            FunctionSchema(
                name="refill",
                description="Refill.",
                properties={"rx": {"type": "string"}},
                required=["rx"],
            )
        ]
    )
    assert LLM.respond_to([user("prescription 1234")], tools)[1] == [("refill", {"rx": "1234"})]
    assert LLM.respond_to([user("prescription 1234")])[1] == [("refill", {"rx": 1234})]


def test_instructed_replies_and_the_greeting() -> None:
    # Before the user has spoken: the greeting.
    assert LLM.respond_to([{"role": "system", "content": "You are a bot."}]) == ("Welcome!", [])
    # A developer message after the user's: matched against the instructions rules.
    messages = [
        user("I have a billing question."),
        {"role": "developer", "content": "Introduce the billing desk."},
    ]
    assert LLM.respond_to(messages) == ("Billing here.", [])
    # An instructed reply no rule matches: the greeting.
    other = [user("Hello."), {"role": "developer", "content": "Say something."}]
    assert LLM.respond_to(other) == ("Welcome!", [])
    # No rule: the default reply.
    assert LLM.respond_to([user("What?")]) == ("Sorry, I can't help with that.", [])


def test_a_rule_needs_a_reply_or_a_tool() -> None:
    with pytest.raises(ValueError, match="needs a reply, a tool, or both"):
        Rule(r"x")


def test_the_fixture_text_stt_answers_the_phrases_in_the_segment_it_was_given(
    phrases: dict[str, Path],
) -> None:
    stt = FixtureTextSTTService()
    # The two-sentence fixture, starting 10 s into the stream.
    stt.expect_fixture(phrases["bill_pause_charge"], PHRASES["bill_pause_charge"], 10.0)

    async def hear(start: float, end: float) -> str:
        return await stt._transcribe(b"", (start, end))

    async def main() -> list[str]:
        return [
            await hear(0.0, 9.9),  # silence before the fixture: nothing
            await hear(9.9, 12.5),  # the first sentence
            await hear(12.5, 13.0),  # the pause
            await hear(13.0, 20.0),  # the second sentence
        ]

    assert asyncio.run(main()) == [
        "",
        "I have a question about my bill.",
        "",
        "Why was I charged twice?",
    ]


def test_whisper_hears_the_fixtures_for_real(phrases: dict[str, Path]) -> None:
    """The corpus bot with WhisperSTTService instead of the fixture's text: real recognition
    of the synthesized audio, offline; a fixture heard again is recognized once per process."""
    pytest.importorskip("faster_whisper")
    stts: list[WhisperSTTService] = []

    def make(transport):  # type: ignore[no-untyped-def]
        stt = WhisperSTTService(cpu_threads=1)
        stts.append(stt)
        return voice_bot(transport, stt=stt)[0]

    script = transcript(spoken("hello", phrases), spoken("weather", phrases))
    for _ in range(2):
        _, replies = run(converse(PipecatAdapter(make), script))
        assert replies[0].reply == "Hello! How can I help you?"
        assert "weather in paris" in (replies[1].heard or "").lower()
        assert [c.name for c in replies[1].calls] == ["get_weather"]
    first, second = stts
    assert first.stats.misses >= 2
    assert second.stats.misses == 0  # the same PCM, the same model: answered from memory


def test_audio_conditions_change_what_the_pipeline_hears(
    phrases: dict[str, Path], tmp_path: Path
) -> None:
    """A turn's conditions are applied to the fixture before it streams (the file on disk is
    never changed): the audio the microphone played is the conditioned one, and Whisper hears
    the words through it."""
    pytest.importorskip("faster_whisper")
    import numpy as np
    import soundfile

    from pytest_agent_eval.models import AudioCondition, Turn

    turn = Turn(
        user=PHRASES["weather"],
        audio=phrases["weather"],
        conditions=[AudioCondition("gain", {"db": -12.0})],
    )
    adapter = PipecatAdapter(
        lambda transport: voice_bot(transport, stt=WhisperSTTService(cpu_threads=1))[0],
        audio_in_dir=tmp_path,
    )
    (reply,) = run(converse(adapter, transcript(turn, id="quiet")))[1]
    assert "weather in paris" in (reply.heard or "").lower()
    streamed, _ = soundfile.read(str(reply.audio_in), dtype="float32")
    clean, _ = soundfile.read(str(phrases["weather"]), dtype="float32")
    # -12 dB is a quarter of the amplitude.
    assert np.abs(streamed).max() == pytest.approx(np.abs(clean).max() / 4, rel=0.05)


# One sentence: hibari at half speed pauses 0.86 s after "payment:", where the bot's VAD ends a
# segment. The sidecar's phrase is the whole sentence; only its word timings see the pause.
SPLIT = "I would like two large pizzas with extra cheese and for payment: cash please."
SPLIT_FIRST = "I would like two large pizzas with extra cheese and for payment:"


@pytest.fixture(scope="module")
def split(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("split")
    (folder / "slow.yaml").write_text(
        f'id: slow\nvoice: {{speed: 0.5}}\nturns:\n  - user: "{SPLIT}"\n    audio: split.wav\n'
    )
    ensure_fixtures([load_transcript_file(folder / "slow.yaml")], jobs=1).raise_for_failures()
    return folder / "split.wav"


def test_a_sentence_cut_at_a_pause_is_heard_word_by_word_as_it_is_said(split: Path) -> None:
    """Issue 32: a bot had every argument of a tool call ("cash please", said after a pause)
    when the VAD ended the segment before the pause: the STT answered with each phrase whose
    middle the segment reached. It must answer with the words whose audio ended within the
    audio it was given, so a rule keyed on the later words cannot fire early."""
    from corpus_bots import voice_pipeline
    from pipecat.adapters.llm.schemas.function_schema import FunctionSchema
    from pipecat.adapters.llm.schemas.tools_schema import ToolsSchema
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.pipeline.worker import PipelineWorker
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )

    events: list[str] = []

    class ListeningSTT(FixtureTextSTTService):
        async def _transcribe(self, audio: bytes, span: tuple[float, float]) -> str:
            text = await super()._transcribe(audio, span)
            events.append(f"heard {text}")
            return text

    def note(ctx: ScriptContext) -> str:
        events.append(f"asked {ctx.user}")
        return "Noted."

    def bot(transport):  # type: ignore[no-untyped-def]
        llm = ScriptedLLMService(
            [Rule(r"\bcash\b", tool="pay", reply=note), Rule(r".", reply=note)]
        )
        llm.register_function("pay", _pay)
        tools = ToolsSchema(
            standard_tools=[
                FunctionSchema(name="pay", description="Pay.", properties={}, required=[])
            ]
        )
        pair = LLMContextAggregatorPair(
            LLMContext(tools=tools),
            user_params=LLMUserAggregatorParams(vad_analyzer=SileroVADAnalyzer()),
        )
        return PipelineWorker(voice_pipeline(transport, llm, pair, stt=ListeningSTT()))

    _, (reply,) = run(converse(PipecatAdapter(bot), transcript(Turn(user=SPLIT, audio=split))))
    heard = [e for e in events if e.startswith("heard ") and e != "heard "]
    assert heard == [f"heard {SPLIT_FIRST}", "heard cash please."]
    # Whatever the LLM was asked before "cash please." was heard did not hold it.
    before = events[: events.index("heard cash please.")]
    assert not [e for e in before if e.startswith("asked ") and "cash" in e]
    assert [c.name for c in reply.calls] == ["pay"]
    assert reply.heard == SPLIT


async def _pay(params: Any) -> None:
    await params.result_callback("paid")
