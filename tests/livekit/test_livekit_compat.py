"""The livekit-agents internals the adapter reads, all behind ``_compat``: each read is exercised
on a real session, in a state where it has something to say, so the day a livekit-agents
release moves one, this fails first, naming the installed version and what moved.

Also checked: no other module of the adapter touches a private LiveKit name.
"""

from __future__ import annotations

import asyncio
import logging
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from corpus_agents import INSTRUCTIONS, PHRASES, RULES, VAD, Kitchen, Receptionist
from livekit import rtc
from livekit.agents import Agent, AgentSession, AgentTask, RunContext, function_tool
from livekit.agents import vad as lk_vad
from livekit_support import converse, run, transcript

import pytest_agent_eval.adapters.livekit as adapter_package
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit import _compat as compat
from pytest_agent_eval.models import Turn

VERSION = compat.LIVEKIT_AGENTS_VERSION


def _session(agent: Agent) -> AgentSession:
    return AgentSession(
        stt=FixtureTextSTT(),
        vad=VAD,
        llm=ScriptedLLM(RULES, instructions=INSTRUCTIONS),
        **eval_session_kwargs(),
    )


class Observed(Agent):
    """Records what the task-context reads say from inside its on_enter and its tool."""

    def __init__(self) -> None:
        super().__init__(instructions="Answers and looks orders up.")
        self.seen: dict[str, Any] = {}

    async def on_enter(self) -> None:
        self.seen["on_enter.activity"] = compat.running_activity()
        self.seen["on_enter.in_on_enter"] = compat.running_in_on_enter()
        self.seen["on_enter.tool_call"] = compat.running_tool_call()

    @function_tool
    async def lookup_order(self, ctx: RunContext) -> str:
        """Look the caller's order up."""
        self.seen["tool.call"] = compat.running_tool_call()
        self.seen["tool.speech"] = compat.running_speech()
        self.seen["tool.in_on_enter"] = compat.running_in_on_enter()
        return "ships tomorrow"


class Waiting(AgentTask[str]):
    def __init__(self) -> None:
        super().__init__(instructions="Waits.")


def test_every_internal_read_answers_on_a_real_session() -> None:
    """Fails with "livekit-agents <version> has no <what>" when a release moves one."""

    async def scenario() -> None:
        agent = Observed()
        session = _session(agent)
        assert compat.session_activity(session) is None  # before start
        assert compat.session_target_agent(session) is None
        assert compat.agent_switch_task(session) is None
        assert isinstance(compat.agent_switch_lock(session), asyncio.Lock)
        assert not compat.agent_in_a_session(agent)
        assert not compat.task_hands_back(agent)
        assert not compat.task_hands_back(Waiting())  # not started, not done
        # Outside any LiveKit task, the task-context reads have nothing to say.
        assert compat.running_activity() is None
        assert compat.running_speech() is None
        assert not compat.running_in_on_enter()
        assert compat.running_tool_call() is None
        assert compat.task_answers(asyncio.current_task()) is None

        await session.start(agent)
        try:
            await session.wait_for_idle()
            activity = compat.session_activity(session)
            assert activity is not None
            assert compat.session_target_agent(session) is agent
            assert compat.activity_agent(activity) is agent
            assert compat.agent_in_a_session(agent)
            assert compat.activity_recognition(activity) is not None
            assert compat.activity_scheduling_paused(activity) is False
            assert compat.activity_on_enter_task(activity) is None  # on_enter finished
            assert compat.activity_running_speech_tasks(activity) == []
            assert compat.activity_has_queued_speech(activity) is False
            assert compat.activity_current_speech(activity) is None

            assert compat.activity_agent(agent.seen["on_enter.activity"]) is agent
            assert agent.seen["on_enter.in_on_enter"] is True
            assert agent.seen["on_enter.tool_call"] is None

            await session.run(user_input="Where is my order?")
            call = agent.seen["tool.call"]
            assert call is not None and call.name == "lookup_order"
            assert agent.seen["tool.speech"] is not None  # the reply's speech handle
            assert agent.seen["tool.in_on_enter"] is False
        finally:
            await session.aclose()

    run(scenario())


def test_the_task_of_a_reply_to_the_users_speech_is_recognized(
    corpus_audio: dict[str, Path],
) -> None:
    """An audio turn's reply comes from LiveKit's user-turn task, found by its name."""
    answers: list[str | None] = []

    def factory() -> tuple[AgentSession, Agent]:
        session = _session(Receptionist())
        session.on(
            "speech_created", lambda ev: answers.append(compat.task_answers(asyncio.current_task()))
        )
        return session, Receptionist()

    script = transcript(Turn(user=PHRASES["hello"], audio=corpus_audio["hello"]))
    (reply,) = run(converse(LiveKitAdapter(factory, tail_silence_s=0.7), script))
    assert reply.reply == "Hello! How can I help you?"
    assert answers == ["user"]
    assert reply.agent_speech == []


def test_livekits_log_record_of_a_tool_exception_is_recognized(
    corpus_audio: dict[str, Path], caplog: pytest.LogCaptureFixture
) -> None:
    def factory() -> tuple[AgentSession, Agent]:
        return _session(Kitchen()), Kitchen()

    script = transcript(Turn(user=PHRASES["dessert"], audio=corpus_audio["dessert"]))
    with caplog.at_level(logging.DEBUG, logger="livekit.agents"):
        run(converse(LiveKitAdapter(factory, log_level=None, tail_silence_s=0.7), script))
    found = [r for r in map(compat.tool_exception_record, caplog.records) if r is not None]
    assert [(r.function, r.speech_id is not None) for r in found] == [("dessert_menu", True)]


def test_whether_tool_results_want_a_reply_is_read_from_livekits_event() -> None:
    from livekit.agents import llm
    from livekit.agents.voice.events import FunctionToolsExecutedEvent

    call = llm.FunctionCall(call_id="c1", name="lookup", arguments="{}")

    def executed(reply_required: bool) -> FunctionToolsExecutedEvent:
        out = llm.FunctionCallOutput(call_id="c1", name="lookup", output="found", is_error=False)
        out.reply_required = reply_required
        return FunctionToolsExecutedEvent(function_calls=[call], function_call_outputs=[out])

    assert compat.tools_want_reply(executed(True)) is True
    assert compat.tools_want_reply(executed(False)) is False
    with pytest.raises(compat.LiveKitInternalsError, match="has_tool_reply"):
        compat.tools_want_reply(object())


def test_every_vad_stream_access_answers_on_a_real_silero_stream() -> None:
    """The replay's reads and writes (see `_replay`), on Silero's own stream."""

    def event(at: int) -> lk_vad.VADEvent:
        return lk_vad.VADEvent(
            type=lk_vad.VADEventType.INFERENCE_DONE,
            samples_index=at,
            timestamp=at / 16000,
            speech_duration=0.0,
            silence_duration=at / 16000,
        )

    async def scenario() -> list[int]:
        stream = VAD.stream()
        frame = rtc.AudioFrame(b"\0\0" * 480, 24000, 1, 480)
        seen: list[Any] = []
        try:
            assert compat.vad_stream_vad(stream) is VAD
            assert compat.vad_stream_unfed(stream)
            check = compat.vad_stream_open_check(stream)
            check()
            own = compat.divert_vad_stream_input(stream, seen.append, lambda: seen.append("flush"))
            stream.push_frame(frame)
            stream.flush()
            assert seen == [frame, "flush"] and compat.vad_stream_unfed(stream)
            compat.restore_vad_stream_input(stream)
            assert not {"push_frame", "flush"} & set(vars(stream))
            assert own.push_frame == stream.push_frame and own.flush == stream.flush
            emit = compat.vad_stream_emitter(stream)
            emit(event(512))
            received = [await stream.__anext__()]
            compat.skip_vad_stream_events(stream, 1024)
            stream._event_ch.send_nowait(event(1024))  # held back: audio already served
            stream._event_ch.send_nowait(event(1536))
            received.append(await stream.__anext__())
            stream.push_frame(frame)
            assert not compat.vad_stream_unfed(stream)
            stream.end_input()
            with pytest.raises(RuntimeError, match="input ended"):
                check()
            return [e.samples_index for e in received]
        finally:
            await stream.aclose()

    assert run(scenario()) == [512, 1536]


def test_a_missing_internal_fails_naming_the_livekit_version() -> None:
    with pytest.raises(compat.LiveKitInternalsError) as info:
        compat.session_activity(object())
    message = str(info.value)
    assert message.startswith(f"livekit-agents {VERSION} has no object._activity, ")
    assert f"(written for livekit-agents {compat.TESTED_WITH})" in message


# Our own modules of the in-process product's sub-package (adapters/livekit/session/:
# `session._adapter`, `session._realtime`, ...), which a `session._name` is then not.
_SESSION_MODULES = "|".join(
    sorted(
        p.stem[1:]
        for p in (Path(adapter_package.__file__).parent / "session").glob("_*.py")
        if p.stem != "__init__"
    )
)
# Private names of livekit-agents the adapter may read only through _compat.
_PRIVATE_READ = re.compile(
    r"(?:session|activity|agent|current|handle|task|record|info)\._"
    rf"(?!(?:{_SESSION_MODULES})\b)[a-z]\w*"
    r"""|getattr\([^)]*["']_[a-z]\w*["']"""
    r"""|from\s+livekit[.\w]*\s+import\s+[^\n]*\b_[A-Za-z]\w*"""
)


def test_no_other_adapter_module_reads_livekit_internals() -> None:
    folder = Path(adapter_package.__file__).parent
    offenders = []
    paths = sorted(folder.rglob("*.py"))  # the products' sub-packages too
    assert any(p.parent.name == "session" for p in paths), "the adapter moved: fix this test"
    for path in paths:
        if path.name == "_compat.py":
            continue
        for number, line in enumerate(path.read_text("utf-8").splitlines(), start=1):
            if _PRIVATE_READ.search(line):
                offenders.append(f"{path.relative_to(folder)}:{number}: {line.strip()}")
    assert not offenders, "read LiveKit internals through _compat:\n" + "\n".join(offenders)


EXIT_SCRIPT = """
import atexit

callers = []
# Registered first, so it runs last: after livekit's handler and ours.
atexit.register(lambda: print("DISPOSE CALLERS", callers, flush=True))

from livekit import rtc
from livekit.rtc._ffi_client import FfiClient

import pytest_agent_eval.adapters.livekit  # registers the exit handler

real_dispose = FfiClient._dispose


def recording_dispose(self):
    import sys

    callers.append(sys._getframe(1).f_code.co_name)
    real_dispose(self)


FfiClient._dispose = recording_dispose
# A real use of the native client: livekit creates it, and its own exit handler, here.
resampler = rtc.AudioResampler(48000, 16000)
resampler.push(rtc.AudioFrame(b"\\0\\0" * 480, 48000, 1, 480))
print("RESAMPLED", len(resampler.flush()) >= 0, flush=True)
"""


def test_a_process_that_used_the_native_client_settles_it_after_livekit_at_exit(
    tmp_path: Path,
) -> None:
    """CI once saw a room-mode pytest run abort at exit (-6, a Rust panic in a thread that
    delivered an event while Python finalized) after every test passed. The adapter's exit
    handler runs after livekit's own disposal and gives such a delivery time to finish."""
    script = tmp_path / "uses_rtc.py"
    script.write_text(EXIT_SCRIPT)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "RESAMPLED True" in done.stdout
    assert "panic" not in done.stderr
    # livekit's handler disposes first; ours follows (and finds the client disposed).
    assert "DISPOSE CALLERS ['_dispose_lk_ffi', 'settle_rtc_client_at_exit']" in done.stdout


def test_settling_without_a_native_client_creates_none(tmp_path: Path) -> None:
    """A process that never used livekit-rtc gets no client (and no grace) at exit."""
    script = tmp_path / "no_rtc.py"
    script.write_text(
        "from livekit.rtc._ffi_client import FfiClient\n"
        "from pytest_agent_eval.adapters.livekit._compat import settle_rtc_client_at_exit\n"
        "settle_rtc_client_at_exit()\n"
        "print('CLIENT', FfiClient._instance)\n"
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "CLIENT None" in done.stdout
