"""LiveKitAdapter through the adapter protocol, with a real AgentSession and Silero VAD."""

from __future__ import annotations

import asyncio
import logging
import re
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import (
    Agent,
    AgentSession,
    APIStatusError,
    RunContext,
    ToolError,
    function_tool,
    llm,
)
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS
from livekit_support import (
    BOOK_TEXT,
    HELLO_TEXT,
    NAME_TEXT,
    TWO_PHRASES_TEXT,
    Fixtures,
    ProjectVoiceTTS,
    booking,
    converse,
    run,
    transcript,
    turn_input,
)

from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    WhisperSTT,
    eval_session_kwargs,
)
from pytest_agent_eval.errors import AdapterError, AudioFixtureError
from pytest_agent_eval.models import Greeting, Turn

BOOKED = {"party_size": 2, "time": "19:00", "name": "Alice"}


def memory_transcript(fx: Fixtures) -> Any:
    return transcript(
        Turn(user=BOOK_TEXT, audio=fx.book),
        Turn(user="Do you have vegan dishes?"),
        Turn(user=NAME_TEXT, audio=fx.name),
    )


def test_audio_text_audio_turns_share_one_session(fixtures: Fixtures) -> None:
    replies = run(converse(LiveKitAdapter(booking.make_session), memory_transcript(fixtures)))

    first, second, third = replies
    assert first.heard == BOOK_TEXT
    assert [c.name for c in first.calls] == ["book_table"]
    call = first.calls[0]
    assert call.args == BOOKED
    assert call.output == "table for 2 at 19:00 under Alice, reference BK-101"
    assert not call.is_error
    assert "reference BK-101" in first.reply
    assert first.latency_s is not None and first.latency_s >= 0
    assert first.metadata["livekit"]["speech_segments"] >= 1

    assert second.heard is None
    assert [(c.name, c.args) for c in second.calls] == [("check_menu", {"diet": "vegan"})]
    assert "risotto" in second.reply

    assert third.heard == NAME_TEXT
    assert third.calls == []
    assert third.reply == "The booking is under Alice."
    assert third.usage is not None and third.usage.input_tokens > 0


def test_third_turn_fails_without_the_first(fixtures: Fixtures) -> None:
    """The memory check can fail: on its own, the name question has nothing to recall."""
    (reply,) = run(
        converse(
            LiveKitAdapter(booking.make_session),
            transcript(Turn(user=NAME_TEXT, audio=fixtures.name)),
        )
    )
    assert reply.reply == "I don't have a booking for you yet."


def test_reply_collects_every_assistant_message_in_order(fixtures: Fixtures) -> None:
    rules = [
        Rule(
            r"vegan",
            preamble="Let me check the menu.",
            tool="check_menu",
            args={"diet": "vegan"},
            reply="We have {output}.",
        )
    ]

    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(llm=ScriptedLLM(rules), **eval_session_kwargs())
        return session, booking.RestaurantAgent()

    (reply,) = run(converse(LiveKitAdapter(factory), transcript(Turn(user="Anything vegan?"))))
    assert reply.reply == "Let me check the menu. We have mushroom risotto and lentil curry."


class _CarelessLLM(ScriptedLLM):
    """A model that names tools without looking at what it is offered, as real models sometimes
    do (the scripted LLM, asked with no tools, does not check them)."""

    def respond_to(self, chat_ctx: Any, tools: Any = None) -> Any:
        return super().respond_to(chat_ctx, None)


def test_tool_errors_are_errored_and_unknown_tools_refused_tool_calls(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rules = [
        Rule(r"cancel", tool="cancel_booking", args={"reference": "BK-101"}, reply="{output}"),
        Rule(r"keto", tool="check_menu", args={"diet": "keto"}, reply="Checked ({error})."),
    ]

    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(llm=_CarelessLLM(rules), **eval_session_kwargs())
        return session, booking.RestaurantAgent()

    unknown, failing = run(
        converse(
            LiveKitAdapter(factory),
            transcript(Turn(user="Please cancel my booking"), Turn(user="Anything keto?")),
        )
    )
    (call,) = unknown.calls
    assert (call.name, call.args, call.is_error, call.outcome) == (
        "cancel_booking",
        {"reference": "BK-101"},
        True,
        "refused",  # LiveKit ran nothing: not a call with those arguments
    )
    assert call.output.startswith("Unknown function: cancel_booking")
    assert call.error == call.output
    (call,) = failing.calls
    assert (call.name, call.args, call.outcome) == ("check_menu", {"diet": "keto"}, "error")
    assert failing.reply == "Checked (error)."
    # The raising tool is captured above; its traceback is not logged as an ERROR.
    assert not [r for r in caplog.records if "executing tool" in r.getMessage()]


class _FullHouse(Agent):
    """Every table is taken: its tool raises LiveKit's ToolError."""

    def __init__(self) -> None:
        super().__init__(instructions="You book tables.")

    @function_tool
    async def book_table(self, ctx: RunContext, party_size: int) -> str:
        """Book a table."""
        raise ToolError(f"no table left for {party_size}")


def test_a_tool_raising_tool_error_reads_error_with_its_text() -> None:
    """Issue 32: LiveKit's ToolError is the tool's way to tell the model it failed: the call
    reads ``error`` with the ToolError's text, as a tool that raised anything else does."""
    from pytest_agent_eval.evaluators._tool_outcome import ToolOutcomeEvaluator
    from pytest_agent_eval.models import TurnContext

    rules = [Rule(r"table", tool="book_table", args={"party_size": 2}, reply="Sorry ({error}).")]

    def factory() -> tuple[AgentSession, Agent]:
        return AgentSession(llm=ScriptedLLM(rules), **eval_session_kwargs()), _FullHouse()

    (reply,) = run(converse(LiveKitAdapter(factory), transcript(Turn(user="A table please"))))
    (call,) = reply.calls
    assert (call.name, call.outcome, call.error) == ("book_table", "error", "no table left for 2")
    assert reply.reply == "Sorry (error)."
    ctx = TurnContext(user="", reply=reply.reply, tool_calls=list(reply.calls), history=[])
    check = ToolOutcomeEvaluator("book_table", "error", ["no table left"])._check(ctx)
    assert check.passed, check.reasoning


def test_a_scripted_rule_calling_a_tool_the_agent_lacks_errors_naming_it() -> None:
    """No real model can call a tool it was not offered: the scripted LLM refuses to, and the
    run errors naming the rule, the tool and the tools offered (before, the call was made)."""
    rules = [Rule(r"cancel", tool="cancel_booking", reply="{output}")]

    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(llm=ScriptedLLM(rules), **eval_session_kwargs())
        return session, booking.RestaurantAgent()

    with pytest.raises(AdapterError) as info:
        run(converse(LiveKitAdapter(factory), transcript(Turn(user="Please cancel my booking"))))
    message = str(info.value)
    assert "the rule 'cancel' calls the tool 'cancel_booking'" in message
    assert "(offered: book_table, check_menu" in message
    assert "No real model can call a tool it was not offered" in message


def test_run_assert_works_on_audio_turns(fixtures: Fixtures) -> None:
    async def scenario() -> None:
        adapter = LiveKitAdapter(booking.make_session)
        script = transcript(Turn(user=BOOK_TEXT, audio=fixtures.book))
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            await conversation.respond(turn_input(script, 0))
            expect = conversation.expect
            expect.next_event().is_function_call(name="book_table", arguments={"party_size": 2})
            expect.next_event().is_function_call_output(is_error=False)
            expect.next_event().is_message(role="assistant")
            expect.no_more_events()
            with pytest.raises(AssertionError, match="cancel_table"):
                conversation.expect[0].is_function_call(name="cancel_table")
        finally:
            await conversation.aclose()

    run(scenario())


def test_any_rate_and_stereo_fixtures_share_the_session_rate(fixtures: Fixtures) -> None:
    script = transcript(
        Turn(user=HELLO_TEXT, audio=fixtures.hello_44k),
        Turn(user=BOOK_TEXT, audio=fixtures.book_stereo),
        Turn(user=BOOK_TEXT, audio=fixtures.book),
    )
    hello, stereo, mono = run(converse(LiveKitAdapter(booking.make_session), script))

    assert hello.metadata["livekit"]["fixture_rate"] == 44100
    assert hello.reply == "Hello! How can I help you?"
    assert stereo.metadata["livekit"]["fixture_channels"] == 2
    assert stereo.metadata["livekit"]["fixture_rate"] == 22050
    assert stereo.calls[0].args == BOOKED
    # 16 kHz after 44.1 and 22.05 kHz in the same session: its audio path still works.
    assert mono.calls[0].args == BOOKED


@pytest.mark.parametrize(
    ("which", "message"),
    [
        ("missing", "does not exist. Create it with: python -m pytest_agent_eval.synthesize_audio"),
        ("empty", "is empty (a valid WAV header but no samples)"),
        ("silent", "is silent: no 20 ms frame is louder than"),
    ],
)
def test_bad_fixtures_fail_before_any_session(fixtures: Fixtures, which: str, message: str) -> None:
    made: list[object] = []

    def factory() -> tuple[AgentSession, Agent]:
        made.append(1)
        return booking.make_session()

    bad = getattr(fixtures, which)
    script = transcript(Turn(user="hello"), Turn(user="book", audio=bad), id="broken")
    with pytest.raises(AudioFixtureError) as info:
        run(converse(LiveKitAdapter(factory), script))
    assert str(info.value).startswith(f"transcript 'broken', turn 2: audio fixture {bad} ")
    assert message in str(info.value)
    assert made == []


class SilentAgent(Agent):
    """An agent whose LLM never answers: its reply hangs until cancelled."""

    def __init__(self) -> None:
        super().__init__(instructions="never answer")

    async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> Any:
        await asyncio.Event().wait()
        yield ""  # pragma: no cover - never reached


def _silent_factory(closed: list[str]) -> Any:
    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(
            stt=FixtureTextSTT(), vad=booking.VAD, llm=ScriptedLLM([]), **eval_session_kwargs()
        )
        session.on("close", lambda ev: closed.append(ev.reason.value))
        return session, SilentAgent()

    return factory


@pytest.mark.parametrize("audio", [True, False], ids=["audio", "text"])
def test_an_agent_that_never_answers_fails_at_timeout(fixtures: Fixtures, audio: bool) -> None:
    closed: list[str] = []
    # Long enough to get past the VAD and endpointing (0.5 s of wall time) on a busy machine.
    adapter = LiveKitAdapter(_silent_factory(closed), timeout_s=3.0)
    script = transcript(Turn(user=BOOK_TEXT, audio=fixtures.book if audio else None))

    async def scenario() -> set[asyncio.Task[Any]]:
        with pytest.raises(AdapterError) as info:
            await converse(adapter, script)
        message = str(info.value)
        assert message.startswith("turn 1: no result within timeout_s=3 s;")
        assert "agent state 'thinking'" in message
        assert "still waiting for SilentAgent's reply to be generated (the LLM;" in message
        if audio:
            assert f"heard so far {BOOK_TEXT!r}" in message
        assert "VAD" not in message
        assert message.endswith("If the agent is only slow, raise LiveKitAdapter(timeout_s=...).")
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    leftover = run(scenario())
    assert closed == ["user_initiated"]
    assert leftover == set()


def test_cancelled_turn_still_closes_the_session(fixtures: Fixtures) -> None:
    closed: list[str] = []
    # Real-time pacing keeps the turn busy streaming audio when it is cancelled.
    adapter = LiveKitAdapter(_silent_factory(closed), speed=1.0)
    script = transcript(Turn(user=BOOK_TEXT, audio=fixtures.book))

    async def scenario() -> set[asyncio.Task[Any]]:
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        speaking = asyncio.Event()
        conversation.session.on(
            "user_state_changed",
            lambda ev: speaking.set() if ev.new_state == "speaking" else None,
        )
        turn = asyncio.create_task(conversation.respond(turn_input(script, 0)))
        await speaking.wait()
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await turn
        await conversation.aclose()
        await conversation.aclose()  # closing twice is harmless
        return asyncio.all_tasks() - {asyncio.current_task()}  # type: ignore[operator]

    assert run(scenario()) == set()
    assert closed == ["user_initiated"]


def test_runs_leave_no_tasks_or_threads_behind(fixtures: Fixtures) -> None:
    sessions: list[AgentSession] = []

    def factory() -> tuple[AgentSession, Agent]:
        session, agent = booking.make_session()
        sessions.append(session)
        return session, agent

    adapter = LiveKitAdapter(factory)
    script = memory_transcript(fixtures)

    async def scenario(runs: int) -> None:
        for index in range(runs):
            await converse(adapter, script, run_index=index)
            assert asyncio.all_tasks() == {asyncio.current_task()}

    run(scenario(1))  # first use: imports and native thread pools that live with the process
    before = set(threading.enumerate())
    run(scenario(3))
    # The loop's executor threads (VAD inference) end with the loop; nothing else may remain.
    assert set(threading.enumerate()) - before == set()
    assert len({id(s) for s in sessions}) == 4
    # No 2 s wait for a last transcript at close, whatever the factory configured.
    assert all(s.options.session_close_transcript_timeout == 0 for s in sessions)


def test_concurrent_runs_keep_their_own_conversation(fixtures: Fixtures) -> None:
    adapter = LiveKitAdapter(booking.make_session)

    def script(name: str) -> Any:
        return transcript(
            Turn(user=f"Hi, I am {name}."),
            Turn(user=NAME_TEXT, audio=fixtures.name),
            id=name,
        )

    async def scenario() -> list[list[Any]]:
        names = ["Alice", "Bruno", "Chen"]
        return await asyncio.gather(
            *(converse(adapter, script(n), run_index=i) for i, n in enumerate(names))
        )

    results = run(scenario())
    assert [r[1].reply for r in results] == [
        "The booking is under Alice.",
        "The booking is under Bruno.",
        "The booking is under Chen.",
    ]


def test_session_without_stt_is_rejected_for_audio_turns(fixtures: Fixtures) -> None:
    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(vad=booking.VAD, llm=ScriptedLLM([]), **eval_session_kwargs())
        return session, booking.RestaurantAgent()

    with pytest.raises(AdapterError, match=r"has audio turns but the AgentSession has no STT;"):
        run(converse(LiveKitAdapter(factory), transcript(Turn(user="x", audio=fixtures.book))))


def test_factory_must_return_session_and_agent() -> None:
    with pytest.raises(AdapterError, match=r"must return a fresh \(AgentSession, Agent\) pair"):
        run(converse(LiveKitAdapter(lambda: "nope"), transcript(Turn(user="hi"))))


def test_async_factory_is_awaited() -> None:
    async def factory() -> tuple[AgentSession, Agent]:
        return booking.make_session()

    (reply,) = run(converse(LiveKitAdapter(factory), transcript(Turn(user="hello"))))
    assert reply.reply == "Hello! How can I help you?"


def test_livekit_logs_are_quiet_unless_asked(
    fixtures: Fixtures, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    script = transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))

    run(converse(LiveKitAdapter(booking.make_session), script))
    quiet = [r for r in caplog.records if r.name.startswith("livekit")]
    assert [r for r in quiet if r.levelno < logging.WARNING] == []
    assert logging.getLogger("livekit.agents").level == logging.NOTSET

    caplog.clear()
    run(converse(LiveKitAdapter(booking.make_session, log_level=None), script))
    assert any(r.name.startswith("livekit") and r.levelno < logging.WARNING for r in caplog.records)


def test_missing_livekit_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from pytest_agent_eval.errors import MissingExtraError, install_command

    for name in [m for m in sys.modules if m.startswith("pytest_agent_eval.adapters.livekit")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "livekit.agents", None)
    with pytest.raises(MissingExtraError, match=re.escape(install_command("livekit"))):
        import pytest_agent_eval.adapters.livekit  # noqa: F401


def test_constructor_rejects_bad_settings() -> None:
    with pytest.raises(ValueError, match="whole number of samples per frame"):
        LiveKitAdapter(booking.make_session, sample_rate=22050, frame_ms=15)
    with pytest.raises(TypeError, match="needs a session_factory"):
        LiveKitAdapter("not callable")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="unknown log_level 'LOUD'"):
        LiveKitAdapter(booking.make_session, log_level="LOUD")
    LiveKitAdapter(booking.make_session, log_level="debug")


def test_grace_period_of_the_earlier_package_is_accepted_with_a_warning_and_ignored(
    fixtures: Fixtures,
) -> None:
    """The earlier package waited grace_period_s after each voice turn; turns now end on
    events, so the value is ignored."""
    with pytest.warns(DeprecationWarning, match="grace_period_s") as caught:
        adapter = LiveKitAdapter(booking.make_session, grace_period_s=8.0)
    (warning,) = caught
    assert str(warning.message).startswith(
        "LiveKitAdapter(grace_period_s=8.0) is ignored: turns now end when the agent is done"
    )
    assert warning.filename == __file__  # points at the caller's line
    assert not hasattr(adapter, "grace_period_s")
    script = transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))
    (reply,) = run(converse(adapter, script))
    assert reply.reply == "Hello! How can I help you?"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        LiveKitAdapter(booking.make_session)  # no warning without the argument


def test_with_a_tts_the_reply_audio_is_captured(fixtures: Fixtures, tmp_path: Path) -> None:
    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(
            stt=FixtureTextSTT(),
            vad=booking.VAD,
            llm=ScriptedLLM(booking.RULES),
            tts=ProjectVoiceTTS(),
            **eval_session_kwargs(),
        )
        return session, booking.RestaurantAgent()

    script = transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k), Turn(user="hello"))
    spoken, typed = run(converse(LiveKitAdapter(factory, audio_out_dir=tmp_path), script))

    for reply in (spoken, typed):
        assert reply.reply == "Hello! How can I help you?"
        assert reply.first_audio_latency_s is not None and reply.first_audio_latency_s >= 0
        assert reply.metadata["livekit"]["reply_audio_s"] > 0.5
    # The one layout of every voice adapter (voice._fixture_pcm.turn_audio_path).
    assert spoken.audio_out == (tmp_path / "t" / "run1-turn1-reply.wav").resolve()
    assert typed.audio_out == (tmp_path / "t" / "run1-turn2-reply.wav").resolve()
    # What was captured is the agent's speech: Whisper hears the reply in it.
    from pytest_agent_eval.voice._fixtures import read_wav, transcribe, word_error_rate

    heard = transcribe(read_wav(spoken.audio_out))
    assert word_error_rate(spoken.reply, heard) <= 0.2


def test_without_a_tts_there_is_no_audio_latency(fixtures: Fixtures) -> None:
    (reply,) = run(
        converse(
            LiveKitAdapter(booking.make_session),
            transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k)),
        )
    )
    assert reply.latency_s is not None
    assert reply.first_audio_latency_s is None
    assert reply.audio_out is None


@pytest.mark.parametrize("speed", [0.0, 2.0])
def test_paced_and_max_speed_streaming_give_the_same_turns(
    fixtures: Fixtures, speed: float
) -> None:
    script = transcript(Turn(user=BOOK_TEXT, audio=fixtures.book))
    (reply,) = run(converse(LiveKitAdapter(booking.make_session, speed=speed), script))
    assert reply.heard == BOOK_TEXT
    assert [(c.name, c.args) for c in reply.calls] == [("book_table", BOOKED)]


class ExplodingLLM(llm.LLM):
    """A model whose every request fails for good (a 500 that is not retried)."""

    def chat(self, *, chat_ctx: llm.ChatContext, tools: Any = None, **kwargs: Any) -> Any:
        return _Exploding(
            self,
            chat_ctx=chat_ctx,
            tools=tools or [],
            conn_options=kwargs.get("conn_options", DEFAULT_API_CONNECT_OPTIONS),
        )


class _Exploding(llm.LLMStream):
    async def _run(self) -> None:
        raise APIStatusError("model exploded", status_code=500, retryable=False)


@pytest.mark.parametrize("audio", [True, False], ids=["audio", "text"])
def test_model_errors_fail_the_turn_with_the_error(fixtures: Fixtures, audio: bool) -> None:
    def factory() -> tuple[AgentSession, Agent]:
        session = AgentSession(
            stt=FixtureTextSTT(), vad=booking.VAD, llm=ExplodingLLM(), **eval_session_kwargs()
        )
        return session, booking.RestaurantAgent()

    script = transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k if audio else None))
    with pytest.raises(AdapterError) as info:
        run(converse(LiveKitAdapter(factory), script))
    message = str(info.value)
    assert message.startswith("turn 1: ")
    assert "APIStatusError: message='model exploded', status_code=500" in message


class GreetingAgent(booking.RestaurantAgent):  # type: ignore[misc, name-defined]
    async def on_enter(self) -> None:
        self.session.say("Welcome to Chez Pytest!")


def test_a_greeting_is_waited_for_and_kept_apart_from_turn_one() -> None:
    def factory() -> tuple[AgentSession, Agent]:
        session, _ = booking.make_session()
        return session, GreetingAgent()

    async def scenario() -> tuple[Greeting, str, Any]:
        adapter = LiveKitAdapter(factory)
        script = transcript(Turn(user="hello"))
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            greeting = conversation.greeting()
            text = conversation.greeting_text
            return greeting, text, await conversation.respond(turn_input(script, 0))
        finally:
            await conversation.aclose()

    greeting, text, reply = run(scenario())
    assert text == greeting.text == "Welcome to Chez Pytest!"
    (said,) = greeting.speech
    assert (said.text, said.cause, said.agent, said.turn_index) == (
        "Welcome to Chez Pytest!",
        "greeting",
        "GreetingAgent",
        None,
    )
    # Measured from the start of the conversation, which is what triggered it.
    assert said.started_at_s is not None and said.latency_s is not None
    assert 0 <= said.latency_s <= said.started_at_s + 1e-6
    assert greeting.tool_calls == []
    assert reply.reply == "Hello! How can I help you?"
    assert reply.agent_speech == [] and reply.active_agent == "GreetingAgent"
    assert reply.handoffs == []
    # The documented metadata keys stay.
    assert reply.metadata["livekit"]["greeting"] == [
        {
            "text": "Welcome to Chez Pytest!",
            "cause": "greeting",
            "agent": "GreetingAgent",
            "turn_index": None,
        }
    ]
    assert reply.metadata["livekit"]["agent_speech"] == []


def test_a_fixture_without_speech_fails_its_turn(fixtures: Fixtures) -> None:
    script = transcript(Turn(user="hello"), Turn(user="beep", audio=fixtures.tone))
    # An STT that listens: FixtureTextSTT would refuse the tone (a recording) at the start.
    adapter = LiveKitAdapter(lambda: booking.make_session(stt=WhisperSTT()))
    with pytest.raises(AdapterError) as info:
        run(converse(adapter, script))
    assert str(info.value).startswith(
        f"turn 2: the session's VAD hears no speech in audio fixture {fixtures.tone} (1.00 s)"
    )


def test_each_phrase_of_a_fixture_is_answered_at_max_speed(fixtures: Fixtures) -> None:
    """A pause the VAD cuts at ends a user turn, as in a live call, at every speed."""
    script = transcript(*[Turn(user=TWO_PHRASES_TEXT, audio=fixtures.two_phrases)] * 3)
    replies = run(converse(LiveKitAdapter(booking.make_session), script))
    for index, reply in enumerate(replies, start=1):
        assert reply.metadata["livekit"]["speech_segments"] == 2
        assert reply.heard == TWO_PHRASES_TEXT
        assert reply.reply == (
            "Hello! How can I help you? You're all set: table for 2 at 19:00 under Alice, "
            f"reference BK-10{index}."
        )


def test_an_stt_or_agent_shared_between_sessions_is_named(fixtures: Fixtures) -> None:
    shared_stt = FixtureTextSTT()
    shared_agent = booking.RestaurantAgent()

    async def two_open(factory: Any) -> None:
        adapter = LiveKitAdapter(factory)
        script = transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))
        first = await adapter.start_conversation(ConversationInfo(transcript=script, run_index=0))
        try:
            await adapter.start_conversation(ConversationInfo(transcript=script, run_index=1))
        finally:
            await first.aclose()

    with pytest.raises(AdapterError, match=r"STT \(FixtureTextSTT\) is already used by another"):
        run(two_open(lambda: booking.make_session(stt=shared_stt)))

    def reused_agent() -> tuple[AgentSession, Agent]:
        session, _ = booking.make_session()
        return session, shared_agent

    with pytest.raises(AdapterError, match=r"RestaurantAgent\) that is already running"):
        run(two_open(reused_agent))


def test_an_stt_that_hears_nothing_fails_the_turn_saying_so(fixtures: Fixtures) -> None:
    class DeafSTT(FixtureTextSTT):
        async def _transcribe(self, frame: Any) -> str:
            return ""

    adapter = LiveKitAdapter(lambda: booking.make_session(stt=DeafSTT()), timeout_s=10)
    with pytest.raises(AdapterError, match=r"the STT \(DeafSTT\) heard nothing in .*hello"):
        run(converse(adapter, transcript(Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))))
