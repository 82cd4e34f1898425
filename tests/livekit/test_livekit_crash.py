"""An agent that crashes in a LiveKit session is CRASHED, with its exception and its place: a
hook that raises (``on_enter`` of the agent a handoff brings in, of the first agent, and
``on_user_turn_completed``) is seen through the log record LiveKit writes for it, never
answered as an empty reply; a model the session cannot recover from is a crash too."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from corpus_agents import INSTRUCTIONS, RULES, OrderAgent, Receptionist
from livekit.agents import Agent, AgentSession, APIStatusError, RunContext, function_tool, llm
from livekit.agents.types import DEFAULT_API_CONNECT_OPTIONS
from livekit_support import HELLO_TEXT, Fixtures, booking, run, transcript

from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.models import Expect, Turn


class BrokenBilling(Agent):
    """Entered by a handoff; its on_enter raises, as a bug in a user's agent would."""

    def __init__(self, chat_ctx: Any = None) -> None:
        super().__init__(instructions="You are the billing assistant.", chat_ctx=chat_ctx)

    async def on_enter(self) -> None:
        raise RuntimeError("billing database is not configured")


class HandsToBrokenBilling(Receptionist):
    @function_tool
    async def transfer_to_billing(self, ctx: RunContext) -> Agent:
        """Transfer the caller to the billing assistant."""
        return BrokenBilling(chat_ctx=self.chat_ctx)


class BrokenGreeter(Receptionist):
    async def on_enter(self) -> None:
        raise KeyError("greeting_template")


class BrokenBriefing(Receptionist):
    async def on_user_turn_completed(self, turn_ctx: Any, new_message: Any) -> None:
        raise ValueError("CRM lookup failed")


def _factory(agent: type[Agent], llm_: Any = None) -> Any:
    def make() -> tuple[AgentSession, Agent]:
        session: AgentSession = AgentSession(
            stt=FixtureTextSTT(),
            vad=booking.VAD,
            llm=llm_ or ScriptedLLM(RULES, instructions=INSTRUCTIONS),
            **eval_session_kwargs(),
        )
        return session, agent()

    return make


def _run(agent: type[Agent], *turns: Turn, runs: int = 1, llm_: Any = None) -> Any:
    script = transcript(*turns)
    script.runs, script.threshold = runs, 0.0
    return run(run_transcript(script, LiveKitAdapter(_factory(agent, llm_), timeout_s=20)))


def test_on_user_turn_completed_that_raises_is_a_crash_of_its_turn(fixtures: Fixtures) -> None:
    # LiveKit logs the hook's exception and drops the turn: without the log, a timeout. (First
    # in the file: the fixtures are made before any session's threads run.)
    result = _run(BrokenBriefing, Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))
    (turn,) = result.runs[0].turns
    assert turn.crash is not None
    assert (turn.crash.type, turn.crash.message) == ("ValueError", "CRM lookup failed")
    assert turn.crash.where is not None and turn.crash.where.endswith(" in on_user_turn_completed")


def test_a_handed_off_agent_whose_on_enter_raises_is_a_crash_not_an_empty_reply() -> None:
    result = _run(
        HandsToBrokenBilling,
        Turn(user="Transfer me to billing", expect=Expect(reply_contains_any=["billing"])),
        runs=2,
    )
    # Threshold 0: a FAIL would pass; a crash fails the eval whatever the pass rate.
    assert result.verdict == "crashed" and not result.passed
    for run_ in result.runs:
        (turn,) = run_.turns
        assert turn.verdict == "crashed"
        crash = turn.crash
        assert crash is not None
        assert (crash.type, crash.message) == ("RuntimeError", "billing database is not configured")
        assert crash.where is not None
        assert crash.where.startswith("test_livekit_crash.py:") and crash.where.endswith(
            " in on_enter"
        )
        assert turn.error is not None and "BrokenBilling" in turn.error
    assert result.crash_reason is not None
    assert result.crash_reason.startswith("2 of 2 run(s) crashed: run 1, turn 1: RuntimeError")


def test_a_first_agent_whose_on_enter_raises_crashes_before_turn_one() -> None:
    result = _run(BrokenGreeter, Turn(user="hello"))
    (run_,) = result.runs
    assert run_.verdict == "crashed" and run_.turns == []
    assert run_.crash is not None and run_.crash.type == "KeyError"
    assert run_.crash.where is not None and run_.crash.where.endswith(" in on_enter")


class ExplodingLLM(llm.LLM):  # type: ignore[misc]
    def chat(self, **kwargs: Any) -> Any:
        return _Exploding(self, kwargs)


class _Exploding(llm.LLMStream):  # type: ignore[misc]
    def __init__(self, owner: Any, kwargs: dict[str, Any]) -> None:
        super().__init__(
            owner,
            chat_ctx=kwargs["chat_ctx"],
            tools=kwargs.get("tools") or [],
            conn_options=DEFAULT_API_CONNECT_OPTIONS,
        )

    async def _run(self) -> None:
        await asyncio.sleep(0)
        raise APIStatusError("model exploded", status_code=500, retryable=False)


def test_a_model_the_session_cannot_recover_from_is_a_crash() -> None:
    result = _run(Receptionist, Turn(user="hello"), llm_=ExplodingLLM())
    (turn,) = result.runs[0].turns
    assert turn.verdict == "crashed", turn.error
    assert turn.crash is not None and turn.crash.type == "APIStatusError"
    assert "model exploded" in turn.crash.message


def _broken_args(ctx: Any) -> dict[str, Any]:
    raise RuntimeError("the order lookup broke")


def _broken_reply(ctx: Any) -> str:
    raise RuntimeError("the greeting broke")


@pytest.mark.parametrize(
    ("rule", "message", "function"),
    [
        (
            Rule(r"hello", tool="transfer_to_billing", args=_broken_args),
            "the order lookup broke",
            "_broken_args",
        ),
        (Rule(r"hello", reply=_broken_reply), "the greeting broke", "_broken_reply"),
    ],
    ids=["args", "reply"],
)
def test_a_rule_callback_that_raises_is_a_crash_at_the_callback(
    rule: Rule, message: str, function: str
) -> None:
    """The rule's callback is the user's code, though our ScriptedLLM calls it: CRASHED with
    its file and line, as on Pipecat (tests/pipecat/test_pipecat_crash.py)."""
    scripted = ScriptedLLM([rule, *RULES], instructions=INSTRUCTIONS)
    result = _run(Receptionist, Turn(user="hello"), llm_=scripted)
    assert result.errored_run_count == 0
    (turn,) = result.runs[0].turns
    assert turn.verdict == "crashed", turn.error
    crash = turn.crash
    assert crash is not None
    assert (crash.type, crash.message) == ("RuntimeError", message)
    line = {"_broken_args": _broken_args, "_broken_reply": _broken_reply}[function]
    where = f"test_livekit_crash.py:{line.__code__.co_firstlineno + 1} in {function}"
    assert crash.where == where


def test_our_scripted_model_failing_in_its_own_code_stays_an_error() -> None:
    """A reply template naming a group its pattern lacks fails in our code (no function of the
    user's ran): an ERROR naming the model, not a crash of the agent."""
    scripted = ScriptedLLM([Rule(r"hello", reply="Hello {nobody}!"), *RULES])
    result = _run(Receptionist, Turn(user="hello"), llm_=scripted)
    (turn,) = result.runs[0].turns
    assert turn.verdict == "error" and turn.crash is None, turn.error
    assert turn.error is not None and "ScriptedLLM failed answering from its rules" in turn.error


class WarehouseNeverAnswers(OrderAgent):
    @function_tool
    async def check_warehouse(self, ctx: RunContext) -> str:
        """Ask the warehouse about stock."""
        await asyncio.Event().wait()  # the warehouse never answers
        return "never"


def test_a_silent_agent_is_a_fail_naming_what_it_last_did() -> None:
    """No crash: a live agent whose tool outlasts the turn said nothing in time, a FAIL (as in
    a room and on Pipecat) whose message names the tool it last ran."""
    script = transcript(Turn(user="Check the warehouse."))
    adapter = LiveKitAdapter(_factory(WarehouseNeverAnswers), timeout_s=3)
    result = run(run_transcript(script, adapter))
    (turn,) = result.runs[0].turns
    assert turn.verdict == "failed" and turn.crash is None and result.errored_run_count == 0
    assert turn.error is not None
    assert turn.error.startswith("AgentTimeoutError: turn 1: no result within timeout_s=3 s")
    assert "last it ran tool 'check_warehouse' (still running)" in turn.error


class IgnoresTheCaller(Receptionist):
    """Decides not to answer, LiveKit's documented way: ``StopResponse`` from the hook."""

    async def on_user_turn_completed(self, turn_ctx: Any, new_message: Any) -> None:
        from livekit.agents import StopResponse

        raise StopResponse()


class ModelSaysNothing(Receptionist):
    """An ``llm_node`` that produces nothing: the session has no reply to speak."""

    async def llm_node(self, chat_ctx: Any, tools: Any, model_settings: Any) -> None:
        return None


def test_an_agent_that_ignores_a_spoken_turn_fails_as_on_pipecat(fixtures: Fixtures) -> None:
    """An agent that heard the caller and went back to listening without a word, a tool or a
    handoff is a FAIL, as the same agent is on Pipecat and in room mode (where it is waited
    for until the timeout). Before, the turn ended at once with an empty reply, and a turn
    with no reply check passed."""
    result = _run(IgnoresTheCaller, Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))
    (turn,) = result.runs[0].turns
    assert turn.verdict == "failed" and turn.crash is None and result.errored_run_count == 0
    assert turn.error is not None and turn.error.startswith("AgentFailedError: turn 1: ")
    assert "the agent (IgnoresTheCaller) said nothing: it heard 'Hello" in turn.error
    assert "StopResponse" in turn.error


def test_a_reply_begun_that_says_nothing_is_a_reply_not_silence() -> None:
    """A model that answers with no text began a reply (as an outbound agent does to a
    voicemail greeting, waiting for the beep): on Pipecat the model's response starting ends
    the wait, so here too the turn is not an agent that ignored the caller."""
    result = _run(ModelSaysNothing, Turn(user="What are your opening hours?"))
    (turn,) = result.runs[0].turns
    assert turn.verdict == "passed", turn.error
    assert turn.reply == ""


def test_an_agent_that_answers_is_not_taken_for_silent(fixtures: Fixtures) -> None:
    result = _run(Receptionist, Turn(user=HELLO_TEXT, audio=fixtures.hello_44k))
    (turn,) = result.runs[0].turns
    assert turn.verdict == "passed", turn.error
    assert turn.reply.strip()


def test_a_crash_ends_the_turn_s_wait_there_not_at_its_deadline() -> None:
    """A crash is what its turn reports, whatever the agent does next, so a wait for a reply
    that may never come (a realtime model's turn after on_user_turn_completed raised) ends
    with it: the wait is cancelled, and a crash once taken ends no later wait."""
    from pytest_agent_eval.adapters.livekit._crash_wait import CrashedWhileWaiting, unless_crashed
    from pytest_agent_eval.adapters.livekit._turn import TurnRecorder

    async def check() -> None:
        session, agent = _factory(Receptionist)()
        recorder = TurnRecorder(session)
        await session.start(agent)
        try:
            reply = asyncio.Event()  # never set: the answer that does not come
            cancelled = asyncio.Event()

            async def wait_for_reply() -> None:
                try:
                    await reply.wait()
                except asyncio.CancelledError:
                    cancelled.set()
                    raise

            waiting = asyncio.ensure_future(unless_crashed(recorder, wait_for_reply()))
            await asyncio.sleep(0)  # one pass of the loop: the wait is under way
            assert not waiting.done()
            try:
                raise ValueError("CRM lookup failed")
            except ValueError as exc:
                recorder.on_agent_exception(exc, "error in on_user_turn_completed")
            with pytest.raises(CrashedWhileWaiting):  # bounded: a wait the crash misses fails
                await asyncio.wait_for(waiting, timeout=10)
            assert cancelled.is_set()
            crash = recorder.take_crash()
            assert crash is not None and (crash.kind, crash.detail) == (
                "ValueError",
                "CRM lookup failed",
            )
            done = asyncio.Event()
            done.set()
            assert await unless_crashed(recorder, done.wait()) is True
        finally:
            await session.aclose()

    run(check())
