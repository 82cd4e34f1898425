"""Every read of livekit-agents internals, behind one door.

LiveKit's public API does not say when an agent is really done with a turn
(``session.wait_for_idle`` returns while a tool runs, and before a handoff has started the next
agent), which agent or speech a piece of work belongs to, or which tool a logged exception came
from. The adapter needs all of that for verdicts that do not depend on streaming speed, so it
reads a few private attributes and naming conventions of livekit-agents. Each function here
reads exactly one of them and is named for what it gives the adapter; no other module touches
a LiveKit name that starts with an underscore.

One function acts on livekit-rtc rather than livekit-agents: `settle_rtc_client_at_exit` (see
there). It reads leniently, because it runs while the process exits and must never raise.

Three functions write, each on one object: `watch_vad_events` puts an observer in front of an
audio recognition's VAD event handler, so the adapter sees the session's own VAD decisions
instead of running a second VAD to predict them; `divert_vad_stream_input` routes the frames
and flushes a session's Silero VAD stream is given through the adapter's replay (see
`_replay`), which hands the stream's consumers the events Silero produced for the same frames;
when the replay hands over to the stream mid-fixture, `skip_vad_stream_events` holds back the
events for audio the consumers already had.

Reads are strict: an attribute that is gone raises `LiveKitInternalsError` naming the installed
livekit-agents version and what it was needed for, so a LiveKit release that moves something
fails every turn loudly instead of ending turns early (a verdict for the wrong reason).
tests/livekit/test_livekit_compat.py calls every function on a real session and fails the same
way, the day a release moves one.
"""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import logging
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import livekit.agents

from ...errors import AdapterError

__all__ = [
    "LIVEKIT_AGENTS_VERSION",
    "TESTED_WITH",
    "LiveKitInternalsError",
    "ToolExceptionRecord",
    "VADStreamInput",
    "activity_agent",
    "activity_current_speech",
    "activity_has_queued_speech",
    "activity_on_enter_task",
    "activity_recognition",
    "activity_rt_turn_detection",
    "activity_running_speech_tasks",
    "activity_scheduling_paused",
    "agent_in_a_session",
    "agent_switch_lock",
    "agent_switch_task",
    "amd_classifier_class",
    "divert_vad_stream_input",
    "end_fake_job",
    "realtime_session_owner",
    "recognition_vad_backlog",
    "recognition_vad_stream",
    "restore_vad_stream_input",
    "run_assert_over",
    "running_activity",
    "running_in_on_enter",
    "running_speech",
    "running_tool_call",
    "session_activity",
    "session_skip_aec_warmup",
    "session_target_agent",
    "settle_rtc_client_at_exit",
    "skip_vad_stream_events",
    "task_answers",
    "task_hands_back",
    "tool_exception_record",
    "tools_want_reply",
    "vad_options",
    "vad_settings",
    "vad_stream_emitter",
    "vad_stream_open_check",
    "vad_stream_unfed",
    "vad_stream_vad",
    "watch_vad_events",
]

LIVEKIT_AGENTS_VERSION: str = getattr(livekit.agents, "__version__", "unknown")
"""The installed livekit-agents version, named in every error of this module."""

TESTED_WITH = "1.8"
"""The livekit-agents minor version these reads were written for (pyproject pins >=1.8,<2)."""


class LiveKitInternalsError(AdapterError):
    """A livekit-agents internal the adapter reads is not there in the installed version."""


def _gone(what: str, why: str) -> LiveKitInternalsError:
    return LiveKitInternalsError(
        f"livekit-agents {LIVEKIT_AGENTS_VERSION} has no {what}, which pytest-agent-eval reads "
        f"to {why} (written for livekit-agents {TESTED_WITH}); use a livekit-agents version "
        "pytest-agent-eval supports, or a pytest-agent-eval release that supports this one"
    )


def _read(obj: Any, name: str, why: str) -> Any:
    try:
        return getattr(obj, name)
    except AttributeError:
        raise _gone(f"{type(obj).__name__}.{name}", why) from None


def _module_attr(module: str, name: str, why: str) -> Any:
    try:
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)
    except (ImportError, AttributeError):
        raise _gone(f"{module}.{name}", why) from None


def _context_var(name: str, why: str) -> contextvars.ContextVar[Any]:
    var = _module_attr("livekit.agents.voice.agent_activity", name, why)
    if not isinstance(var, contextvars.ContextVar):
        raise _gone(f"livekit.agents.voice.agent_activity.{name} as a ContextVar", why)
    return var


def amd_classifier_class() -> Any:
    """LiveKit's answering-machine classifier (``voice.amd.classifier._AMDClassifier``), the
    part of its `AMD` that decides from speech timing and words, for bench/amd_far_ends.py,
    which feeds it far ends without a room (`AMD` itself needs a job's room and tracks)."""
    return _module_attr(
        "livekit.agents.voice.amd.classifier",
        "_AMDClassifier",
        "run LiveKit's answering-machine detection on far ends in process",
    )


# -- a fake job (an in-process phone call) ---------------------------------------------------

_JOB = "give an in-process phone call LiveKit's fake job"


def end_fake_job(job: Any, room: Any) -> None:
    """What LiveKit's ``fake_job_context`` leaves behind once its block ended: the job context
    variable when the block ended in another context than it began in, the room listener and
    the job's temporary folder."""
    var = _module_attr("livekit.agents.job", "_JobContextVar", _JOB)
    if isinstance(var, contextvars.ContextVar) and var.get(None) is job:
        var.set(None)
    room.off("participant_connected", _read(job, "_participant_available", _JOB))
    _read(job, "_tempdir", _JOB).cleanup()


# -- the session ----------------------------------------------------------------------------

_SWAP_STT = "replace an agent's STT for attribution's hearing counterfactual"


def replace_session_stt(session: Any, stt: Any) -> None:
    """Give a session that has not started ``stt`` in place of its own: `AgentSession` keeps
    its STT in ``_stt`` and has no setter."""
    _read(session, "_stt", _SWAP_STT)
    session._stt = stt


_SCRIPT = "give an agent a scripted LLM, an offline TTS and a stimulus' STT for turn-taking"


def replace_agent_parts(owner: Any, *, stt: Any, llm: Any, tts: Any) -> None:
    """Give a session or agent that has not started ``stt``, ``llm`` and ``tts`` in place of
    its own (turn-taking conformance keeps its VAD and turn handling): `AgentSession` and
    `Agent` keep them in ``_stt``, ``_llm`` and ``_tts`` and have no setters. On an agent only
    the parts it brings itself are replaced (the rest it takes from its session)."""
    from livekit.agents import AgentSession
    from livekit.agents.types import NotGiven

    for name, part in (("_stt", stt), ("_llm", llm), ("_tts", tts)):
        own = _read(owner, name, _SCRIPT)
        if isinstance(owner, AgentSession) or not (isinstance(own, NotGiven) or own is None):
            setattr(owner, name, part)


_DONE = "know when the agent is done with a turn"


_REALTIME = "run audio turns for an agent on a realtime model"


def activity_rt_turn_detection(activity: Any) -> bool | None:
    """True when the activity's realtime model takes the turns on its server, False when the
    session does; None when the activity runs no realtime model."""
    value = _read(activity, "_rt_turn_detection_enabled", _REALTIME)
    if getattr(activity, "_rt_session", None) is None:
        return None
    return bool(value)


def session_skip_aec_warmup(session: Any) -> None:
    """End the echo-cancellation warm-up now and for the rest of the session: the session then
    never feeds the model silence in place of the caller's audio."""
    session.options.aec_warmup_duration = None
    _read(session, "_aec_warmup_remaining", _REALTIME)
    session._aec_warmup_remaining = 0.0


def session_activity(session: Any) -> Any:
    """The session's current ``AgentActivity`` (None before start and after close): the one
    place the state of the running agent lives."""
    return _read(session, "_activity", _DONE)


def session_target_agent(session: Any) -> Any:
    """The agent the session runs or is switching to (None before start)."""
    return _read(session, "_agent", _DONE)


def agent_switch_task(session: Any) -> asyncio.Task[Any] | None:
    """The task switching agents (a handoff, an ``AgentTask`` starting or handing back) while
    it runs, else None."""
    task = _read(session, "_update_activity_atask", _DONE)
    return task if task is not None and not task.done() else None


def agent_switch_lock(session: Any) -> asyncio.Lock:
    """The lock held while the session swaps one activity for another."""
    return _read(session, "_activity_lock", _DONE)  # type: ignore[no-any-return]


def realtime_session_owner(rt_session: Any) -> Any:
    """The ``AgentSession`` whose agent activity listens to ``rt_session`` (None while none
    does): a realtime session is never told which session it serves, but the activity that
    made it subscribes its own bound methods to its events."""
    events = _read(rt_session, "_events", "pace a scripted realtime model as a provider")
    activity_cls = _module_attr(
        "livekit.agents.voice.agent_activity",
        "AgentActivity",
        "pace a scripted realtime model as a provider",
    )
    for handler in list(events.get("input_speech_stopped", ())):
        owner = getattr(handler, "__self__", None)
        if isinstance(owner, activity_cls):
            return _read(owner, "session", "pace a scripted realtime model as a provider")
    return None


# -- an agent's activity --------------------------------------------------------------------


def activity_agent(activity: Any) -> Any:
    """The agent an activity runs."""
    return _read(activity, "agent", _DONE)


def activity_recognition(activity: Any) -> Any:
    """The activity's audio recognition: a new one (a new agent started or resumed) means new
    VAD streams, which cut the audio afresh."""
    return _read(activity, "_audio_recognition", "follow the session's VAD streams")


def activity_scheduling_paused(activity: Any) -> bool:
    """True while the activity does not take new speech yet (starting) or any more (leaving)."""
    return bool(_read(activity, "scheduling_paused", _DONE))


def activity_on_enter_task(activity: Any) -> asyncio.Task[Any] | None:
    """The agent's ``on_enter`` task while it runs, else None."""
    task = _read(activity, "_on_enter_task", _DONE)
    return task if task is not None and not task.done() else None


def activity_running_speech_tasks(activity: Any) -> list[asyncio.Task[Any]]:
    """The activity's speech tasks still running: replies being generated or played, tools."""
    tasks: Sequence[asyncio.Task[Any]] = _read(activity, "_speech_tasks", _DONE)
    return [t for t in tasks if not t.done()]


def activity_has_queued_speech(activity: Any) -> bool:
    """True when speech is scheduled on the activity and has not started."""
    return bool(_read(activity, "_speech_q", _DONE))


def activity_current_speech(activity: Any) -> Any:
    """The speech the activity is saying now, if any."""
    return _read(activity, "current_speech", _DONE)


def agent_in_a_session(agent: Any) -> bool:
    """True when ``agent`` runs in some session already (an Agent runs in one at a time)."""
    return _read(agent, "_activity", "refuse an Agent shared between sessions") is not None


def task_hands_back(agent: Any) -> bool:
    """True for an ``AgentTask`` that completed and is handing control back to the agent that
    awaited it (the switch back has not started yet)."""
    if not isinstance(agent, livekit.agents.AgentTask):
        return False
    old = _read(agent, "_old_agent", _DONE)
    return old is not None and agent.done()


def tools_want_reply(ev: Any) -> bool:
    """True when a ``function_tools_executed`` event's results ask the model for a reply (some
    output is ``reply_required``): the agent is not done until that reply was generated."""
    return bool(_read(ev, "has_tool_reply", _DONE))


# -- the session's VAD ------------------------------------------------------------------------

_VAD = "follow the speech segments the session's VAD cuts"

VADEventWatcher = Callable[[Any], None]
"""Called with each event of a recognition's VAD stream, after the recognition handled it."""


def recognition_vad_stream(recognition: Any) -> Any:
    """The VAD stream the recognition feeds now (None until its VAD task has started)."""
    return _read(recognition, "_vad_stream", _VAD)


def recognition_vad_backlog(recognition: Any) -> int:
    """Frames the recognition has taken that its VAD stream has not been given yet."""
    channel = _read(recognition, "_vad_ch", _VAD)
    return 0 if channel is None else int(channel.qsize())


def vad_options(vad: Any) -> tuple[Any, ...] | None:
    """A VAD's settings, hashable (Silero keeps them in a dataclass ``_opts``); None when they
    cannot be read.

    The one lenient read here: a VAD without readable settings only loses the cache of its
    fixture segmentations (it is scanned every turn), nothing else.
    """
    opts = getattr(vad, "_opts", None)
    if opts is None or not dataclasses.is_dataclass(opts) or isinstance(opts, type):
        return None
    return (type(vad).__module__, type(vad).__qualname__, dataclasses.astuple(opts))


def vad_settings(vad: Any) -> dict[str, Any] | None:
    """A VAD's settings by name (Silero's ``_opts`` dataclass), for rebuilding the same VAD
    elsewhere; None when they cannot be read (lenient, as `vad_options`)."""
    opts = getattr(vad, "_opts", None)
    if opts is None or not dataclasses.is_dataclass(opts) or isinstance(opts, type):
        return None
    return dataclasses.asdict(opts)


def watch_vad_events(recognition: Any, watcher: VADEventWatcher) -> None:
    """Have ``watcher(event)`` called after the recognition handles each event of its VAD.

    The recognition's VAD task looks its handler up on the object for every event, so an
    observer set on the instance sees every event from then on, in order, after the session
    did (its user state already updated). Watching again replaces the watcher.
    """
    handler = _read(recognition, "_on_vad_event", _VAD)
    original = getattr(handler, "_agent_eval_original", handler)

    async def observed(event: Any) -> None:
        try:
            await original(event)
        finally:
            watcher(event)

    observed._agent_eval_original = original  # type: ignore[attr-defined]
    recognition._on_vad_event = observed


_REPLAY = "replay the session's VAD decisions for a fixture it has heard before"


def vad_stream_vad(stream: Any) -> Any:
    """The VAD object that opened ``stream`` (its settings are that VAD's)."""
    return _read(stream, "_vad", _REPLAY)


def vad_stream_unfed(stream: Any) -> bool:
    """True when a Silero VAD stream has never taken a frame and holds none in its input.

    Silero notes the input sample rate when it takes its first frame (0 until then). Read
    before a flush: the stream's input queue is then empty, or it holds frames.
    """
    return not _read(stream, "_input_sample_rate", _REPLAY) and (
        int(_read(stream, "_input_ch", _REPLAY).qsize()) == 0
    )


def vad_stream_open_check(stream: Any) -> Callable[[], None]:
    """A function raising what ``stream.push_frame`` raises once the stream's input ended or
    it closed (read now: a missing internal fails here, not later inside LiveKit's task)."""
    input_not_ended = _read(stream, "_check_input_not_ended", _REPLAY)
    not_closed = _read(stream, "_check_not_closed", _REPLAY)

    def check() -> None:
        input_not_ended()
        not_closed()

    return check


def vad_stream_emitter(stream: Any) -> Callable[[Any], None]:
    """A function handing an event to ``stream``'s consumers (the recognition and the metrics
    monitor), as the stream does with the events it computes."""
    send: Callable[[Any], None] = _read(stream, "_event_ch", _REPLAY).send_nowait
    return send


@dataclass(frozen=True, slots=True)
class VADStreamInput:
    """A VAD stream's own input methods, taken over by `divert_vad_stream_input`."""

    push_frame: Callable[[Any], None]
    flush: Callable[[], None]


def divert_vad_stream_input(
    stream: Any, push_frame: Callable[[Any], None], flush: Callable[[], None]
) -> VADStreamInput:
    """Have every later ``stream.push_frame(frame)`` and ``stream.flush()`` call ``push_frame``
    and ``flush`` instead; return the stream's own two (which they call to let one through).

    The recognition's forwarding task looks ``push_frame`` up on the stream for every frame,
    and LiveKit looks ``flush`` up when it resets the stream (STT turn detection), so the
    attributes set on this one stream object take every call.
    """
    own = VADStreamInput(
        push_frame=_read(stream, "push_frame", _REPLAY), flush=_read(stream, "flush", _REPLAY)
    )
    stream.push_frame = push_frame
    stream.flush = flush
    return own


def restore_vad_stream_input(stream: Any) -> None:
    """Undo `divert_vad_stream_input`: calls go to the stream's own methods again."""
    vars(stream).pop("push_frame", None)
    vars(stream).pop("flush", None)


class _HoldBack:
    """A VAD stream's event channel that drops the events sent into it up to a sample index
    (inclusive), and passes the rest on."""

    def __init__(self, channel: Any, through: int) -> None:
        self._channel = channel
        self._through = through

    def send_nowait(self, event: Any) -> None:
        if event.samples_index <= self._through:
            return
        self._through = -1  # from here on, everything
        self._channel.send_nowait(event)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._channel, name)


def skip_vad_stream_events(stream: Any, through: int) -> None:
    """Have ``stream`` drop the events it computes up to sample index ``through`` (its
    consumers already had the events of that audio); later ones reach them as before."""
    channel = _read(stream, "_event_ch", _REPLAY)
    stream._event_ch = _HoldBack(channel, through)


# -- what the running task belongs to -------------------------------------------------------

_WHO = "tell which agent and which speech said something"


def running_activity() -> Any:
    """The ``AgentActivity`` whose task is running now (None outside one)."""
    return _context_var("_AgentActivityContextVar", _WHO).get(None)


def running_speech() -> Any:
    """The ``SpeechHandle`` whose task is running now (None outside one)."""
    return _context_var("_SpeechHandleContextVar", _WHO).get(None)


def running_in_on_enter() -> bool:
    """True inside an agent's ``on_enter`` (where a greeting or an introduction is said)."""
    return _context_var("_OnEnterContextVar", _WHO).get(None) is not None


def running_tool_call(task: asyncio.Task[Any] | None = None) -> Any:
    """The ``FunctionCall`` whose tool ``task`` (default: the current task) executes, if any."""
    if task is None:
        try:
            task = asyncio.current_task()
        except RuntimeError:
            return None
    if task is None:
        return None
    task_info = _module_attr(
        "livekit.agents.voice.agent", "_get_activity_task_info", "tell which tool is running"
    )
    return getattr(task_info(task), "function_call", None)


def task_answers(task: asyncio.Task[Any] | None) -> Literal["user", "on_exit"] | None:
    """What a task that creates speech answers, from LiveKit's task names: ``"user"`` for the
    reply to the user's turn, ``"on_exit"`` for an agent leaving, None for anything else."""
    if task is None:
        return None
    name = task.get_name()
    coro = getattr(task.get_coro(), "__qualname__", "")
    if "on_exit" in name:
        return "on_exit"
    if "_user_turn_" in name or "AudioRecognition" in coro:
        return "user"
    return None


# -- tool exceptions in LiveKit's log -------------------------------------------------------

_TOOL_EXCEPTION = "exception occurred while executing tool"


@dataclass(frozen=True, slots=True)
class ToolExceptionRecord:
    """What LiveKit's log record of a tool's exception says about where it came from."""

    speech_id: str | None
    call_id: str | None
    function: str | None


def tool_exception_record(record: logging.LogRecord) -> ToolExceptionRecord | None:
    """The tool and speech of a LiveKit "exception occurred while executing tool" record (its
    ``extra`` fields), None for any other record."""
    if not record.getMessage().startswith(_TOOL_EXCEPTION):
        return None
    return ToolExceptionRecord(
        speech_id=getattr(record, "speech_id", None),
        call_id=getattr(record, "call_id", None),
        function=getattr(record, "function", None),
    )


# -- LiveKit's assertions over a turn we recorded -------------------------------------------


@dataclass
class _Events:
    """The one attribute ``RunAssert`` reads from a ``RunResult``."""

    events: list[Any]


def run_assert_over(items: Sequence[Any]) -> Any:
    """LiveKit's ``RunAssert`` over a turn's items (chat messages, function calls and outputs,
    and handoffs with ``item``, ``old_agent`` and ``new_agent``), which LiveKit builds only
    from its own ``session.run`` results."""
    from livekit.agents.voice.run_result import (
        AgentHandoffEvent,
        ChatMessageEvent,
        FunctionCallEvent,
        FunctionCallOutputEvent,
        RunAssert,
    )

    events: list[Any] = []
    for item in items:
        if item.type == "message":
            events.append(ChatMessageEvent(item=item))
        elif item.type == "function_call":
            events.append(FunctionCallEvent(item=item))
        elif item.type == "function_call_output":
            events.append(FunctionCallOutputEvent(item=item))
        elif item.type == "agent_handoff":
            events.append(
                AgentHandoffEvent(
                    item=item.item, old_agent=item.old_agent, new_agent=item.new_agent
                )
            )
    return RunAssert(_Events(events))  # type: ignore[arg-type]


# -- livekit-rtc's native client at exit ---------------------------------------------------

RTC_EXIT_GRACE_S = 0.2
"""How long the exiting process lets livekit-rtc's threads finish a call already under way."""


def settle_rtc_client_at_exit() -> None:
    """Dispose livekit-rtc's native client, then give its threads a moment before Python finalizes.

    livekit-rtc delivers room events and log records from its own Rust threads into a Python
    callback. One that reaches for the GIL after the interpreter has started to finalize is ended
    by CPython, and that unwind through Rust frames aborts the process (exit code -6, "panic in a
    function that cannot unwind") although every test passed: seen once in CI under load, after
    a room-mode run. livekit disposes its client from its own atexit handler and the process
    finalizes right after; this handler (registered when the adapter is imported, so it runs
    after livekit's own, or disposes first if livekit's registered earlier) lets a delivery
    already under way finish while Python is still whole. Nothing can be awaited here: the
    callback is livekit's, so the grace is a fixed, short sleep, paid only by a process that
    used the native client.
    """
    module = sys.modules.get("livekit.rtc._ffi_client")
    client_class = getattr(module, "FfiClient", None)
    client = getattr(client_class, "_instance", None)
    if client is None:
        return
    dispose = getattr(client, "_dispose", None)
    if callable(dispose):
        try:
            dispose()  # returns at once when livekit's own handler already ran
        except Exception:  # the process is exiting: nothing to report to, nothing to save
            return
    time.sleep(RTC_EXIT_GRACE_S)  # releases the GIL to a callback already under way
