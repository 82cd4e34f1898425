"""Hang-ups on a real Pipecat pipeline (``call_ended``): a bot written from Pipecat's docs
whose ``end_call`` function pushes an ``EndTaskFrame`` (or queues an ``EndFrame`` or
``CancelFrame``) ends the call in that turn and not before, the turn keeps what it said, a
turn after the hang-up errors saying the bot hung up, and a bot that says goodbye without
ending the call fails ``call_ended: true``."""

from __future__ import annotations

import asyncio
import importlib
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")

from pytest_agent_eval.adapters.base import ConversationInfo, TurnInput
from pytest_agent_eval.adapters.pipecat import PipecatAdapter
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.evaluators._keypad import CallEndedEvaluator
from pytest_agent_eval.models import AgentReply, PhoneCall, Transcript, Turn, TurnContext

HERE = Path(__file__).resolve().parent


def converse(
    monkeypatch: pytest.MonkeyPatch, *, frame: str = "end_task", buggy: bool = False
) -> list[AgentReply | AdapterError]:
    """The three turns hello, goodbye, hello again: each turn's reply, or its error."""
    monkeypatch.setenv("HANG_UP_BOT_FRAME", frame)
    monkeypatch.setenv("HANG_UP_BOT_BUG", "1" if buggy else "0")
    monkeypatch.syspath_prepend(str(HERE))
    sys.modules.pop("hang_up_bot", None)
    bot = importlib.import_module("hang_up_bot")
    turns = [Turn("Hello?"), Turn("Thanks, goodbye."), Turn("Hello again?")]
    script = Transcript(id="hang_up", turns=turns, phone=PhoneCall())
    adapter = PipecatAdapter(run_bot=bot.run_bot, timeout_s=20.0)

    async def run() -> list[AgentReply | AdapterError]:
        await adapter.prepare(script)
        conversation: Any = await adapter.start_conversation(
            ConversationInfo(transcript=script, run_index=0)
        )
        replies: list[AgentReply | AdapterError] = []
        try:
            for index in range(3):
                try:
                    replies.append(await conversation.respond(TurnInput.of(script, index, 0)))
                except AdapterError as exc:
                    replies.append(exc)
        finally:
            await conversation.aclose()
        return replies

    return asyncio.run(run())


def verdict(reply: AgentReply | AdapterError, ended: bool) -> tuple[bool, bool]:
    assert isinstance(reply, AgentReply), reply
    ctx = TurnContext(
        user="", reply=reply.reply, tool_calls=[], history=[], call_ended=reply.call_ended
    )
    result = asyncio.run(CallEndedEvaluator(ended).evaluate(ctx))
    return result.passed, result.errored


@pytest.mark.parametrize(
    ("frame", "seen"),
    [
        ("end_task", "EndTaskFrame"),
        ("end_worker", "EndWorkerFrame"),
        ("end", "EndFrame"),
        ("cancel", "CancelFrame"),
    ],
)
def test_the_bot_ends_the_call_in_the_turn_it_hangs_up(
    monkeypatch: pytest.MonkeyPatch, frame: str, seen: str
) -> None:
    hello, goodbye, after = converse(monkeypatch, frame=frame)
    assert isinstance(hello, AgentReply) and isinstance(goodbye, AgentReply)
    assert hello.call_ended is False and goodbye.call_ended is True
    assert goodbye.metadata["hang_up"] == seen
    assert verdict(hello, False) == (True, False) and verdict(goodbye, True) == (True, False)
    assert verdict(hello, True) == (False, False) and verdict(goodbye, False) == (False, False)
    assert isinstance(after, AdapterError)
    assert f"the bot hung up in turn 2 (it pushed {seen})" in str(after)


def test_the_hang_up_turn_keeps_what_the_bot_said(monkeypatch: pytest.MonkeyPatch) -> None:
    _, goodbye, _ = converse(monkeypatch)
    assert isinstance(goodbye, AgentReply)
    assert goodbye.reply == "Goodbye, thanks for calling!"
    assert [call.name for call in goodbye.tool_calls] == ["end_call"]


def test_a_bot_that_says_goodbye_and_stays_on_fails_call_ended(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hello, goodbye, after = converse(monkeypatch, buggy=True)
    assert isinstance(hello, AgentReply) and hello.call_ended is False
    assert isinstance(goodbye, AgentReply) and goodbye.call_ended is False
    assert "hang_up" not in goodbye.metadata
    assert verdict(goodbye, True) == (False, False)
    assert isinstance(after, AgentReply) and after.call_ended is False


CONFTEST = """
import pytest

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent():
    from hang_up_bot import run_bot

    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
"""

GOODBYE = """
id: goodbye
turns:
  - user: "Hello?"
    expect:
      call_ended: false
  - user: "Thanks, goodbye."
    expect:
      reply_contains_all: ["Goodbye"]
      call_ended: true
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copy(HERE / "hang_up_bot.py", pytester.path / "hang_up_bot.py")
    pytester.makeconftest(CONFTEST)
    (pytester.path / "pyproject.toml").write_text(
        '[tool.agent_eval]\nyaml_dirs = ["evals"]\nruns = 1\nthreshold = 1.0\n'
    )
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "goodbye.yaml").write_text(GOODBYE)
    return pytester


FAST = ("--agent-eval-live", "-p", "no:cacheprovider")


def test_a_transcript_ending_in_a_hang_up_passes(project: pytest.Pytester) -> None:
    project.runpytest_subprocess(*FAST).assert_outcomes(passed=1)


def test_a_bot_that_says_goodbye_and_stays_on_fails_the_transcript(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HANG_UP_BOT_BUG", "1")
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the agent did not end the call*"])


def test_a_turn_after_the_hang_up_is_an_error_saying_so(project: pytest.Pytester) -> None:
    evals = project.path / "evals"
    (evals / "goodbye.yaml").write_text(GOODBYE + '  - user: "Hello again?"\n')
    result = project.runpytest_subprocess(*FAST)
    result.stdout.fnmatch_lines(["*the bot hung up in turn 2 (it pushed EndTaskFrame)*"])
    result.assert_outcomes(errors=1)
