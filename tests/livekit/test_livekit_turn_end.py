"""When a LiveKit turn ends, what it is charged with, and what it says when it cannot end.

Real AgentSessions with the Silero VAD and TTS-made WAVs; the corpus in
test_livekit_corpus.py covers the agent structures, these tests the edges: timeouts that name
the real cause, impossible latencies, tool errors in their own words, speech that never
reaches the chat, LiveKit's ``RunAssert`` over handoffs, the session factory's information,
and LiveKit's loggers shared by parallel conversations.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest
from corpus_agents import (
    INSTRUCTIONS,
    PHRASES,
    RULES,
    VAD,
    BillingAgent,
    ChattyOrderAgent,
    Kitchen,
    Receptionist,
)
from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit_support import converse, run, transcript, turn_input

from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    SessionInfo,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit._logs import LiveKitLogScope
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import ToolCall, Turn


def session_for(agent: Agent, *, rules: list[Rule] | None = None) -> tuple[AgentSession, Agent]:
    session: AgentSession = AgentSession(
        stt=FixtureTextSTT(),
        vad=VAD,
        llm=ScriptedLLM(rules or RULES, instructions=INSTRUCTIONS),
        **eval_session_kwargs(),
    )
    return session, agent


# -- a turn that cannot end names what was pending ------------------------------------------


class StuckToolAgent(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="Tracks orders with a backend that never answers.")

    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the order up."""
        await asyncio.Event().wait()  # a backend that never answers
        return "never"


class StuckIntroAgent(Agent):
    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="Billing.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        await asyncio.Event().wait()  # an intro that never finishes


class ToStuckIntro(Receptionist):
    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to billing."""
        return StuckIntroAgent(chat_ctx=self.chat_ctx)


@pytest.mark.parametrize(
    ("agent", "phrase", "pending"),
    [
        (StuckToolAgent, "order", "the tool lookup_order of StuckToolAgent to return"),
        (ToStuckIntro, "to_billing", "StuckIntroAgent.on_enter() to finish"),
    ],
    ids=["tool", "on_enter"],
)
def test_a_turn_that_cannot_end_names_what_was_pending(
    corpus_audio: dict[str, Path], agent: type[Agent], phrase: str, pending: str
) -> None:
    """Not the VAD, and not the reply: the tool or the new agent's intro still running."""
    # Long enough to get past the VAD and endpointing (0.5 s of wall time) on a busy machine.
    adapter = LiveKitAdapter(lambda: session_for(agent()), timeout_s=3.0)
    script = transcript(Turn(user=PHRASES[phrase], audio=corpus_audio[phrase]))

    async def scenario() -> str:
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            with pytest.raises(AdapterError) as info:
                await conversation.respond(turn_input(script, 0))
        finally:
            # LiveKit waits for a running tool before it lets a session close: closing is
            # cut short (and reported apart by the runner) after a failed turn.
            with contextlib.suppress(AdapterError):
                await conversation.aclose()
        return str(info.value)

    message = run(scenario())
    assert message.startswith(
        f"turn 1: no result within timeout_s=3 s; still waiting for {pending}"
    )
    assert f"heard so far {PHRASES[phrase]!r}" in message
    assert "VAD" not in message


# -- latency is measured or the turn fails --------------------------------------------------


class Interrupter(Agent):
    """Talks over the user as soon as they start speaking."""

    def __init__(self) -> None:
        super().__init__(instructions="Impatient.")

    async def on_enter(self) -> None:
        def on_user_state(ev: Any) -> None:
            if ev.new_state == "speaking":
                self.session.say("Are you still there?", allow_interruptions=False)

        self.session.on("user_state_changed", on_user_state)


def test_speech_before_the_end_of_the_users_speech_is_no_latency(
    corpus_audio: dict[str, Path],
) -> None:
    """A reply that starts before the speech it would answer ends fails the turn, instead of
    handing max_latency_ms a negative number it would pass on."""
    adapter = LiveKitAdapter(lambda: session_for(Interrupter()), speed=1.0, tail_silence_s=0.7)
    script = transcript(Turn(user=PHRASES["hello"], audio=corpus_audio["hello"]))
    with pytest.raises(AdapterError) as info:
        run(converse(adapter, script))
    message = str(info.value)
    assert message.startswith("turn 1: the first reply text came ")
    assert "s before the end of the user's speech" in message
    assert "the latency cannot be measured" in message


def test_latency_counts_from_this_turns_speech(corpus_audio: dict[str, Path]) -> None:
    """The intro a handoff starts at the end of an audio turn belongs to that turn: the next
    (text) turn's latency counts from its own sending, not from the left-over intro."""
    script = transcript(
        Turn(user=PHRASES["to_billing"], audio=corpus_audio["to_billing"]),
        Turn(user="Why was I charged twice?"),
    )
    first, second = run(converse(LiveKitAdapter(lambda: session_for(Receptionist())), script))
    assert first.reply == "Hi, this is billing. How can I help?"
    assert first.latency_s is not None and first.latency_s >= 0
    assert second.reply == "I see a duplicate charge and I have refunded it."
    assert second.latency_s is not None and second.latency_s >= 0


# -- tool calls ------------------------------------------------------------------------------


def test_a_tool_exception_is_captured_in_its_own_words(
    caplog: pytest.LogCaptureFixture, corpus_audio: dict[str, Path]
) -> None:
    """LiveKit tells the model "An internal error occurred"; the ToolCall keeps the real
    error, and the traceback stays out of the log (it is at DEBUG)."""
    caplog.set_level(logging.INFO)
    # (A call to a tool the agent does not have, refused by LiveKit, is pinned in
    # test_livekit_adapter.py: the scripted LLM no longer makes one.)
    script = transcript(Turn(user=PHRASES["dessert"], audio=corpus_audio["dessert"]))
    (raised,) = run(converse(LiveKitAdapter(lambda: session_for(Kitchen(), rules=RULES)), script))
    (call,) = raised.calls
    assert (call.output, call.is_error) == ("An internal error occurred", True)
    assert call.error == "RuntimeError: the dessert menu service is down"
    assert not [r for r in caplog.records if "executing tool" in r.getMessage()]


def test_tool_call_error_survives_pickle_and_dict() -> None:
    call = ToolCall("t", {"a": 1}, output="x", is_error=True, call_id="c", error="E: boom")
    for copy in (pickle.loads(pickle.dumps(call)), ToolCall.from_dict(call.to_dict())):
        assert (copy.error, copy.is_error, copy.output) == ("E: boom", True, "x")
    assert ToolCall("t").error is None


# -- speech that leaves no message ------------------------------------------------------------


class QuietFiller(ChattyOrderAgent):
    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the caller's order up."""
        self.session.say("One moment while I check.", add_to_chat_ctx=False)
        await asyncio.sleep(0.05)
        return "ships tomorrow"


def test_speech_kept_out_of_the_chat_is_still_in_the_reply() -> None:
    (reply,) = run(
        converse(
            LiveKitAdapter(lambda: session_for(QuietFiller())),
            transcript(Turn(user="Where is my order?")),
        )
    )
    assert reply.reply == "One moment while I check. Your order ships tomorrow."
    assert reply.metadata["livekit"]["agent_speech"] == [
        {
            "text": "One moment while I check.",
            "cause": "tool",
            "agent": "QuietFiller",
            "turn_index": 0,
        }
    ]


# -- LiveKit's own assertions see the handoff --------------------------------------------------


def test_run_assert_sees_the_handoff_of_an_audio_turn(corpus_audio: dict[str, Path]) -> None:
    async def scenario() -> None:
        adapter = LiveKitAdapter(lambda: session_for(Receptionist()))
        script = transcript(Turn(user=PHRASES["to_billing"], audio=corpus_audio["to_billing"]))
        conversation = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        try:
            await conversation.respond(turn_input(script, 0))
            expect = conversation.expect
            expect.next_event().is_function_call(name="transfer_to_billing")
            expect.next_event().is_function_call_output()
            expect.next_event().is_agent_handoff(new_agent_type=BillingAgent)
            expect.next_event().is_message(role="assistant")
            expect.no_more_events()
        finally:
            await conversation.aclose()

    run(scenario())


# -- the session factory may know the run ------------------------------------------------------


def test_a_factory_that_takes_an_argument_gets_the_runs_information() -> None:
    seen: list[SessionInfo] = []

    def factory(info: SessionInfo) -> tuple[AgentSession, Agent]:
        seen.append(info)
        return session_for(Receptionist())

    async def scenario() -> None:
        adapter = LiveKitAdapter(factory)
        script = transcript(Turn(user="hello"), id="seeded")
        for run_index in (0, 1):
            await converse(adapter, script, run_index=run_index)

    run(scenario())
    assert [(i.transcript_id, i.run_index) for i in seen] == [("seeded", 0), ("seeded", 1)]
    assert all(i.transcript.id == "seeded" for i in seen)


def test_a_factory_with_only_optional_arguments_is_called_without() -> None:
    calls: list[tuple[Any, ...]] = []

    def factory(stt: Any = None) -> tuple[AgentSession, Agent]:
        calls.append((stt,))
        return session_for(Receptionist())

    run(converse(LiveKitAdapter(factory), transcript(Turn(user="hello"))))
    assert calls == [(None,)]


# -- LiveKit's loggers, shared by parallel conversations -------------------------------------


def test_parallel_conversations_share_the_log_scope_and_keep_their_own_errors(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Overlapping conversations of two adapters (one quiet, one leaving logging alone): each
    gets its own tool error, the levels come back when the last one closes, and the scope
    leaves the logger with it."""
    caplog.set_level(logging.INFO)
    agents_logger = logging.getLogger("livekit.agents")
    before = {name: logging.getLogger(name).level for name in ("livekit", "livekit.agents")}
    quiet = LiveKitAdapter(lambda: session_for(Kitchen()))
    loud = LiveKitAdapter(lambda: session_for(Kitchen()), log_level=None)
    script = transcript(Turn(user="Do you have dessert?"))

    async def scenario() -> list[list[Any]]:
        first = await quiet.start_conversation(ConversationInfo(transcript=script, run_index=0))
        second = await loud.start_conversation(ConversationInfo(transcript=script, run_index=1))
        assert agents_logger.level == logging.WARNING
        scopes = [f for f in agents_logger.filters if isinstance(f, LiveKitLogScope)]
        assert len(scopes) == 1
        try:
            replies = await asyncio.gather(
                first.respond(turn_input(script, 0)), second.respond(turn_input(script, 0))
            )
        finally:
            await first.aclose()
            # The quiet one left; the other asked for no level change.
            assert agents_logger.level == before["livekit.agents"]
            await second.aclose()
        return [r.calls for r in replies]

    calls = run(scenario())
    for (call,) in calls:
        assert call.error == "RuntimeError: the dessert menu service is down"
    assert {n: logging.getLogger(n).level for n in before} == before
    assert not [f for f in agents_logger.filters if isinstance(f, LiveKitLogScope)]
    # The conversation that left logging alone let its traceback through.
    tracebacks = [r for r in caplog.records if "executing tool" in r.getMessage()]
    assert len(tracebacks) == 1 and tracebacks[0].levelno == logging.ERROR


class CancelledFetch(Agent):
    def __init__(self) -> None:
        super().__init__(instructions="Fetches from a backend whose request gets cancelled.")

    @function_tool
    async def fetch_status(self, ctx: RunContext) -> str:
        """Fetch the order status."""
        raise asyncio.CancelledError  # the request was cancelled under the tool


def test_a_cancelled_tool_call_is_unfinished_not_a_call_that_returned_nothing() -> None:
    """Issue 21: a call LiveKit reports cancelled (its task ended cancelled, no output) read
    as a finished call with no result; it did not return, so it is shown unfinished, and
    (issue 23) its outcome says it was cancelled."""
    rules = [Rule(r"status", tool="fetch_status", reply="Status: {output}.")]
    (reply,) = run(
        converse(
            LiveKitAdapter(lambda: session_for(CancelledFetch(), rules=rules)),
            transcript(Turn(user="What is my order status?")),
        )
    )
    (call,) = reply.calls
    assert call.name == "fetch_status" and call.outcome == "cancelled" and not call.done
    assert reply.metadata["livekit"]["pending_tool_calls"] == [
        {"call_id": call.call_id, "name": "fetch_status", "cancelled": True}
    ]


# -- the rule a turn ends by -------------------------------------------------------------------


def test_a_turn_has_had_its_fixture_only_when_every_segment_was_heard_and_taken_in() -> None:
    from pytest_agent_eval.voice._hearing import Hearing

    hearing = Hearing(fixture="q.wav", segments=2)
    assert "ended 0 of the 2 speech segment(s) of q.wav" in (hearing.missing() or "")
    # A VAD that split the question: the first half heard, recognized and answered.
    hearing.ended, hearing.transcripts, hearing.taken = 1, ["What time do you"], 1
    assert hearing.has_had(1) and not hearing.has_had(2)
    assert "ended 1 of the 2" in (hearing.missing() or "")
    hearing.ended = 2
    assert "STT finished 1 of the 2" in (hearing.missing() or "")
    hearing.transcripts.append("open on Sunday?")
    # Recognized, but the session has not taken the words in yet: not answered.
    assert not hearing.has_had(2)
    assert hearing.missing() == (
        "the agent's turn handling took in 1 of the 2 transcript(s) its STT made of q.wav "
        "(the last: 'open on Sunday?'), so it has not answered all of it"
    )
    hearing.taken = 2
    assert hearing.has_had(2) and hearing.missing() is None
    # A segment heard as nothing has nothing to take in.
    quiet = Hearing(fixture="q.wav", segments=2, ended=2, transcripts=["hi", ""], taken=1)
    assert quiet.missing() is None
