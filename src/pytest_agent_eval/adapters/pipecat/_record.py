"""What a pipeline did, turn by turn, read from its frames; and whether the bot is done.

`Recorder` observes the pipeline (every frame any processor pushes, read in the pushing call
itself, `_compat.tap_observer`) and listens to the transport (what leaves the speaker). It keeps two things:

- **live state**: is an LLM response under way, a TTS context open, the bot speaking, a
  function call running, the user's turn open, the VAD hearing speech;
- **the turn's log** (`TurnLog`): what was said (the text that left the speaker with its
  audio, so an interrupted reply holds only what was spoken), what the STT heard, the function
  calls with arguments, results, errors and cancellations, end-of-speech and reply times,
  interruptions, errors, token usage, Flows node changes.

`Recorder.pending` says what the bot is still doing, or None when it is done: the adapter
asks it whenever the pipeline's loop has nothing runnable (see `_clock`), the moment at which
nothing more can happen until a timer fires, so a turn ends exactly when the bot is done,
never after a fixed wait.

Frames broadcast in both directions are counted once (their ``broadcast_sibling_id``); the
user-turn and VAD frames the user aggregator queues for itself come in two unlinked copies,
so those are read as state changes, which a copy does not repeat.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pipecat.frames.frames import (
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    ErrorFrame,
    Frame,
    FunctionCallCancelFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    InterruptionFrame,
    LLMFullResponseEndFrame,
    LLMFullResponseStartFrame,
    LLMTextFrame,
    MetricsFrame,
    OutputDTMFFrame,
    OutputDTMFUrgentFrame,
    TranscriptionFrame,
    TTSSpeakFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    TTSTextFrame,
    UserMuteStartedFrame,
    UserMuteStoppedFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.metrics.metrics import LLMUsageMetricsData, TurnMetricsData
from pipecat.observers.base_observer import BaseObserver, FrameProcessed, FramePushed
from pipecat.processors.frame_processor import FrameProcessorSetup
from pipecat.services.llm_service import LLMService
from pipecat.transports.base_output import BaseOutputTransport

from ...errors import AgentCrashError, AgentEvalError
from ...models import Crash, Handoff
from ...models._timeline import TimelineClock
from ._compat import tap_observer
from ._hang_up import HangUps
from ._timeline import FrameTimeline
from ._transport import TransportListener

__all__ = ["Call", "Recorder", "SaidOnOwn", "TurnLog"]

_KEY_FRAMES = (
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
    InterruptionFrame,
    TranscriptionFrame,
    LLMFullResponseStartFrame,
    LLMFullResponseEndFrame,
    FunctionCallInProgressFrame,
    FunctionCallResultFrame,
    FunctionCallCancelFrame,
    TTSStartedFrame,
    TTSStoppedFrame,
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    ErrorFrame,
)
"""The frames a turn's ``metadata["pipecat"]["events"]`` lists, in order."""

_FAILED = LLMService.FUNCTION_CALL_ERROR_MESSAGE_TEMPLATE.split("{function_name}")
_MISSING = LLMService.MISSING_FUNCTION_CALL_MESSAGE_TEMPLATE.split("{function_name}")


def _is_template(text: Any, parts: list[str]) -> bool:
    return isinstance(text, str) and text.startswith(parts[0]) and text.endswith(parts[-1])


def flows_error(result: Any) -> str | None:
    """The error text of Pipecat Flows' error envelope, ``{"status": "error", "error": ...}``,
    or None for any other result. Flows catches what a node function raises and hands the model
    that envelope as an ordinary result (no ``error`` on the frame): it is the function failing,
    and so is the same shape returned by the function itself, other keys beside it or not
    (Flows' ``FlowResult`` convention)."""
    if not isinstance(result, Mapping) or result.get("status") != "error":
        return None
    error = result.get("error")
    return str(error) if error else "the function reported status 'error'"


@dataclass
class Call:
    """One function call the LLM made."""

    call_id: str
    name: str
    args: dict[str, Any] | None
    turn_index: int | None
    """The turn that made it (None: the greeting)."""
    result: Any = None
    error: str | None = None
    is_error: bool = False
    done: bool = False
    cancelled: bool = False
    refused: bool = False
    """Pipecat answered that no such function was available: nothing ran."""


@dataclass(frozen=True, slots=True)
class SaidOnOwn:
    """A ``TTSSpeakFrame`` pushed during a turn: speech the bot started on its own."""

    at: float
    text: str
    cause: str
    """``"tool"`` while a function call of the turn runs (its handler speaks), else
    ``"other"``."""
    agent: str | None
    """The Flows node active then (None without Flows)."""


@dataclass
class TurnLog:
    """What happened in one turn (or in the greeting, ``index`` None)."""

    index: int | None
    kind: str
    """``"audio"``, ``"text"`` or ``"greeting"``."""
    started_at: float
    spoken: list[tuple[float, str, bool]] = field(default_factory=list)
    """TTS text that left the speaker: (time, text, spaces included)."""
    llm_text: list[tuple[float, str, bool]] = field(default_factory=list)
    """LLM text that left the speaker (what the reply is without a TTS)."""
    transcripts: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    late_results: list[Call] = field(default_factory=list)
    """Results that arrived in this turn for calls of earlier turns."""
    user_starts: list[float] = field(default_factory=list)
    user_stops: list[float] = field(default_factory=list)
    speech_ends: list[float] = field(default_factory=list)
    """Where the VAD says the user's speech ended (its stop, less its ``stop_secs``)."""
    vad_stops: int = 0
    vad_start_secs: float | None = None
    """The VAD's ``start_secs``: how much speech it needs before it says the user started."""
    reactions: list[float] = field(default_factory=list)
    """When the bot began to respond (an LLM response, a TTS context, speech)."""
    far_end: bool = False
    """A far end's turn heard as audio: done once the bot is, with or without a user turn
    (a beep has no words; silence is an answer the call's checks judge)."""
    responses: int = 0
    first_text_at: float | None = None
    """When the bot's first reply text of the turn was produced (an LLM token, or TTS text)."""
    first_audio_at: float | None = None
    last_audio_at: float | None = None
    """When the last chunk of this turn's reply audio reached the speaker."""
    carried: list[tuple[float, str]] = field(default_factory=list)
    """A barge-in's interrupted reply once its turn was split (`Recorder.carry_spoken_to`):
    when the bot started (``"start"``) and stopped (``"stop"``) speaking it, and when an
    interruption reached the pipeline (``"cut"``), in order."""
    audio: bytearray = field(default_factory=bytearray)
    audio_rate: int = 0
    bot_started: list[float] = field(default_factory=list)
    bot_stopped: list[float] = field(default_factory=list)
    interruptions: list[float] = field(default_factory=list)
    """``InterruptionFrame``s that came while the bot was speaking."""
    halts: list[float] = field(default_factory=list)
    """When the bot's audio stopped (``BotStoppedSpeakingFrame``) after an ``InterruptionFrame``
    reached its output transport while it spoke: the halt a caller hears, which a processor
    swallowing the interruption before the output never makes."""
    mutes: list[tuple[float, bool]] = field(default_factory=list)
    """When the user aggregator's mute strategies muted (True) and unmuted (False) the user:
    muted, it drops the caller's audio before its VAD."""
    errors: list[str] = field(default_factory=list)
    crashes: list[AgentCrashError] = field(default_factory=list)
    """The errors of ``errors`` that came from the bot's own processors (not our offline
    services): how the bot crashed in this turn, oldest first."""
    usage: list[int] = field(default_factory=lambda: [0, 0, 0])
    """Prompt tokens, completion tokens, LLM requests."""
    handoffs: list[Handoff] = field(default_factory=list)
    turn_predictions: list[dict[str, Any]] = field(default_factory=list)
    events: list[tuple[float, str]] = field(default_factory=list)
    sent_at: float | None = None
    """Text turns: when the text was handed to the pipeline; a turn of keys alone: when its
    first key was."""
    keys_at: list[float] = field(default_factory=list)
    """A turn of keys alone: when its first and its last key were pressed (the reply's
    latency is from the last one before it)."""
    said_on_own: list[SaidOnOwn] = field(default_factory=list)
    """What the bot was made to say in this turn other than its LLM's answer (a
    ``TTSSpeakFrame``: a function's "one moment", a Flows ``tts_say`` action), in order."""
    timeline: FrameTimeline | None = None
    """The turn on one time axis (`AgentTurn.timeline`)."""

    def reply_pieces(self) -> list[tuple[float, str, bool]]:
        """What the bot said: its TTS text, or its LLM text when nothing went through a TTS."""
        return self.spoken if self.spoken else self.llm_text


def join_text(pieces: list[tuple[float, str, bool]]) -> str:
    """Text frames joined as Pipecat means them (tokens carry their spaces, TTS text does
    not), whitespace collapsed."""
    out = ""
    for _, text, spaced in pieces:
        out = out + text if spaced or not out else f"{out} {text}"
    return " ".join(out.split())


class Recorder(BaseObserver, TransportListener):
    """Observes one pipeline (see the module docstring)."""

    def __init__(self, *, own: tuple[str, ...] = ()) -> None:
        super().__init__(name="pytest-agent-eval recorder", observe_every_push=False)
        self._own = own  # the installed packages the bot came from
        self.log = TurnLog(index=None, kind="greeting", started_at=time.monotonic())
        self.worker: Any = None
        self.pipeline_clock: Any = None
        self._clock_offset_ns: int | None = None
        self._siblings: set[int] = set()
        self._pushed_ids: set[int] = set()
        self._llm_open: dict[int, int] = {}
        self._tts_open: dict[int, int] = {}
        self.bot_speaking = False
        self._halting = False
        """An interruption reached the output transport while the bot spoke; its stop is a
        halt (`TurnLog.halts`)."""
        self.user_turn_open = False
        self.vad_speaking = False
        self.calls: dict[str, Call] = {}
        self.node: str | None = None
        self.flows = False
        """True once a Flows FlowManager of this pipeline entered a node."""
        self._carry: TurnLog | None = None
        self._carry_on = False
        """The bot's output still belongs to the carried reply (`carry_spoken_to`)."""
        self._contexts: dict[str, TurnLog] = {}
        """TTS context id -> the turn it was made for (read while a reply is carried)."""
        self.keys_sent: list[tuple[float, str]] = []
        """Every key the bot sent on the line (its ``OutputDTMFFrame`` and
        ``OutputDTMFUrgentFrame`` buttons), with when, oldest first."""
        self.hang_ups = HangUps()
        """The frames the bot pushed to end its pipeline (it hung up)."""
        self.timeline_clock: TimelineClock = "real"
        """The clock the pipeline runs on, as timelines name it."""
        self.changed: Any = None
        """Called (no arguments) after anything is recorded, to wake whoever waits."""

    # -- turns ----------------------------------------------------------------------------------

    def begin(self, index: int | None, kind: str) -> TurnLog:
        """Start a new turn's log and return it."""
        at = self.now()
        # The contexts of the turn ending are kept (a barge-in carries its reply), older ones
        # are of no turn that can still speak.
        self._contexts = {c: log for c, log in self._contexts.items() if log is self.log}
        self.log = TurnLog(index=index, kind=kind, started_at=at)
        self.log.timeline = FrameTimeline(self.timeline_clock, at)
        return self.log

    def carry_spoken_to(self, log: TurnLog | None) -> None:
        """What the bot says and plays belongs to ``log`` (the reply being interrupted), not
        to the turn that interrupts it, until that turn has ended (the user stopped) and the
        bot has stopped speaking since, or until ``carry_spoken_to(None)``.

        Not merely until the bot next stops: a reply of several TTS contexts (a filler line,
        then the answer) stops and starts between them, and a bot may go quiet at the
        interruption and then go on over the caller; both are still the interrupted reply,
        and neither can be the answer to a turn that has not ended. (The audio reaching the
        speaker carries no TTS context: the output transport re-cuts it into chunks.)"""
        self._carry = log
        self._carry_on = log is not None
        if log is None:
            self._contexts.clear()

    def _voiced_log(self) -> TurnLog:
        """The turn the bot's output belongs to now (see `carry_spoken_to`)."""
        return self._carrying() or self.log

    def _made_for(self) -> TurnLog:
        """The turn what the bot makes now (text, a TTS context) answers: the interrupted one
        while the interrupting turn has not ended."""
        carry = self._carry
        return carry if carry is not None and not self.log.user_stops else self.log

    def _context_log(self, context_id: str | None) -> TurnLog | None:
        """While a reply is carried, the turn a TTS context was made for (the carried one or
        the current one; None when not known). Its words follow it, not the moment they leave:
        they leave with their audio on a clock of their own, so the next reply's first words
        can leave just before the carried reply's audio ends."""
        made_for = self._contexts.get(context_id) if context_id is not None else None
        carry = self._carry
        known = carry is not None and (made_for is carry or made_for is self.log)
        return made_for if known else None

    def _carrying(self) -> TurnLog | None:
        """The carried reply while the bot's output still belongs to it, else None."""
        return self._carry if self._carry_on else None

    @property
    def llm_open(self) -> int:
        """LLM responses started and not ended (nor interrupted)."""
        return sum(self._llm_open.values())

    @property
    def tts_open(self) -> int:
        """TTS contexts started and not stopped (nor interrupted)."""
        return sum(self._tts_open.values())

    @property
    def open_calls(self) -> list[Call]:
        """Function calls still running."""
        return [c for c in self.calls.values() if not c.done]

    def pending(self) -> str | None:
        """What the bot is still doing, in words; None when it is done with the turn."""
        log = self.log
        if self.vad_speaking:
            return "the VAD to hear the user's speech end"
        if self.user_turn_open:
            return "the pipeline to end the user's turn (its user-turn stop strategy)"
        running = self.open_calls
        if running:
            names = ", ".join(f"{c.name} ({c.call_id})" for c in running)
            return f"the function call {names} to return"
        if self.llm_open:
            return "the LLM to finish its response (LLMFullResponseEndFrame)"
        if self.tts_open:
            return "the TTS to finish speaking (TTSStoppedFrame)"
        if self.bot_speaking:
            return "the bot to stop speaking (BotStoppedSpeakingFrame)"
        if log.kind == "greeting" or log.far_end:
            return None
        anchor = self.anchor()
        if anchor is None:
            return "the pipeline to end the user's turn (no UserStoppedSpeakingFrame yet" + (
                f"; heard so far {' '.join(log.transcripts)!r})" if log.transcripts else ")"
            )
        if not any(at >= anchor for at in log.reactions):
            if log.kind == "keys":
                return "the bot to answer the keys (a turn of keys alone)"
            heard = f" (heard {' '.join(log.transcripts)!r})" if log.kind == "audio" else ""
            return f"the bot to respond to the user's turn{heard}"
        return None

    def anchor(self) -> float | None:
        """The moment the bot's reply must come after: the user's last turn ending (audio), or
        the text being sent (text), the first key being pressed (keys alone)."""
        log = self.log
        if log.kind in ("text", "keys"):
            return log.sent_at
        return log.user_stops[-1] if log.user_stops else None

    # -- the transport's listener -----------------------------------------------------------------

    def on_setup(self, setup: FrameProcessorSetup) -> None:
        worker = setup.pipeline_worker
        if self.worker is None and worker is not None:
            self.worker = worker
            self.pipeline_clock = setup.clock
            if setup.observer is not None:
                tap_observer(setup.observer, self.pushed, self.processed)
            else:
                worker.add_observer(self)

    def on_audio_out(self, audio: bytes, sample_rate: int, channels: int) -> None:
        log = self._voiced_log()
        at = self.now()
        if log.first_audio_at is None:
            log.first_audio_at = at
        log.last_audio_at = at
        log.audio_rate = sample_rate
        log.audio += audio if channels == 1 else _first_channel(audio, channels)

    def on_spoken(self, frame: Frame) -> None:
        text = getattr(frame, "text", "")
        if not text:
            return
        spaced = bool(getattr(frame, "includes_inter_frame_spaces", False))
        piece = (self.now(), text, spaced)
        if isinstance(frame, TTSTextFrame):
            log = self._context_log(frame.context_id) or self._voiced_log()
            log.spoken.append(piece)
            if log.timeline is not None:
                log.timeline.spoken(text)
        else:
            self._voiced_log().llm_text.append(piece)
        self._changed()

    def on_node(self, before: str | None, after: str | None) -> None:
        """A Flows FlowManager of this pipeline entered ``after`` (from ``before``)."""
        if after is None:
            return
        if self.flows and after != self.node:
            self.log.handoffs.append(Handoff(from_agent=self.node, to_agent=after))
            if self.log.timeline is not None:
                self.log.timeline.handoff(self.now(), self.node, after)
        self.flows = True
        self.node = after
        self._changed()

    # -- the observer ---------------------------------------------------------------------------

    def now(self) -> float:
        """The pipeline clock's time now, in seconds on the same scale as every time recorded
        (frames are stamped by the pipeline clock; one formula keeps equal instants equal)."""
        clock = self.pipeline_clock
        return time.monotonic() if clock is None else self._at_ns(clock.get_time())

    def _at_ns(self, ns: int) -> float:
        if self._clock_offset_ns is None:
            clock = self.pipeline_clock
            reading = clock.get_time() if clock is not None else 0
            if not reading:  # the pipeline clock starts with the pipeline
                return time.monotonic()
            self._clock_offset_ns = time.monotonic_ns() - reading
        return (ns + self._clock_offset_ns) / 1e9

    def _at(self, data: FramePushed) -> float:
        return self._at_ns(data.timestamp)

    async def on_push_frame(self, data: FramePushed) -> None:
        if data.first_push:
            self._first_push(data)

    async def on_process_frame(self, data: FrameProcessed) -> None:
        self.processed(data)

    def pushed(self, data: FramePushed) -> None:
        """A processor pushed a frame (every push; the first of each frame counts)."""
        frame_id = data.frame.id
        if frame_id in self._pushed_ids:
            return
        self._pushed_ids.add(frame_id)
        self._first_push(data)

    def processed(self, data: FrameProcessed) -> None:
        """A processor took a frame."""
        if isinstance(data.frame, InterruptionFrame):
            if self.bot_speaking and isinstance(data.processor, BaseOutputTransport):
                self._halting = True
            # An interrupted service drops its response without ending it.
            key = id(data.processor)
            self._llm_open.pop(key, None)
            self._tts_open.pop(key, None)

    def _first_push(self, data: FramePushed) -> None:
        frame = data.frame
        sibling = frame.broadcast_sibling_id
        if sibling is not None:
            if sibling in self._siblings:
                self._siblings.discard(sibling)
                return
            self._siblings.add(frame.id)
        if isinstance(frame, (*_KEY_FRAMES, MetricsFrame)):
            self._frame(frame, self._at(data), id(data.source))
        elif isinstance(frame, TTSSpeakFrame):
            self._speak(frame, self._at(data))
        elif isinstance(frame, UserMuteStartedFrame | UserMuteStoppedFrame):
            self.log.mutes.append((self._at(data), isinstance(frame, UserMuteStartedFrame)))
        elif isinstance(frame, OutputDTMFFrame | OutputDTMFUrgentFrame):
            self.keys_sent += [(self._at(data), str(b.value)) for b in frame.buttons or ()]
        elif self.hang_ups.note(frame, self._at(data), self.log.index):
            self._changed()
        elif isinstance(frame, LLMTextFrame | TTSTextFrame) and frame.text.strip():
            context = frame.context_id if isinstance(frame, TTSTextFrame) else None
            log = self._context_log(context) or self._made_for()
            if log.first_text_at is None:
                log.first_text_at = self._at(data)

    def _speak(self, frame: TTSSpeakFrame, at: float) -> None:
        """The bot is made to say something that is not its LLM's answer: within a turn, that
        is speech it started on its own (the greeting's is the greeting's; in a barge-in,
        the interrupted reply's until the interrupting turn ended)."""
        log = self._made_for()
        text = " ".join((frame.text or "").split())
        if log.kind == "greeting" or not text:
            return
        running = [c for c in self.open_calls if c.turn_index == log.index]
        cause = "tool" if running else "other"
        log.said_on_own.append(SaidOnOwn(at, text, cause, self.node if self.flows else None))
        self._changed()

    def _frame(self, frame: Frame, at: float, source: int) -> None:
        log = self.log
        if isinstance(frame, _KEY_FRAMES):
            log.events.append((at, type(frame).__name__))
            # The bot's speech belongs to the reply it plays (a barge-in's interrupted one).
            bot = isinstance(frame, BotStartedSpeakingFrame | BotStoppedSpeakingFrame)
            drawn = self._voiced_log() if bot else log
            if drawn.timeline is not None:
                drawn.timeline.frame(frame, at, bot_speaking=self.bot_speaking)
        if isinstance(frame, VADUserStartedSpeakingFrame):
            self.vad_speaking = True
            log.vad_start_secs = float(frame.start_secs or 0.0)
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            if self.vad_speaking:
                self.vad_speaking = False
                log.vad_stops += 1
                log.speech_ends.append(at - float(frame.stop_secs or 0.0))
        elif isinstance(frame, UserStartedSpeakingFrame):
            if not self.user_turn_open:
                self.user_turn_open = True
                log.user_starts.append(at)
        elif isinstance(frame, UserStoppedSpeakingFrame):
            if self.user_turn_open:
                self.user_turn_open = False
                log.user_stops.append(at)
                if not self.bot_speaking:
                    self._carry_on = False
        elif isinstance(frame, InterruptionFrame):
            if self.bot_speaking:
                log.interruptions.append(at)
            if (carried := self._carrying()) is not None:
                carried.carried.append((at, "cut"))
        elif isinstance(frame, TranscriptionFrame):
            if frame.text and frame.text.strip():
                log.transcripts.append(frame.text.strip())
        elif isinstance(frame, LLMFullResponseStartFrame):
            self._llm_open[source] = self._llm_open.get(source, 0) + 1
            log.responses += 1
            log.reactions.append(at)
        elif isinstance(frame, LLMFullResponseEndFrame):
            _close(self._llm_open, source)
        elif isinstance(frame, TTSStartedFrame):
            if frame.context_id is not None:
                self._contexts.setdefault(frame.context_id, self._made_for())
            self._tts_open[source] = self._tts_open.get(source, 0) + 1
            log.reactions.append(at)
        elif isinstance(frame, TTSStoppedFrame):
            _close(self._tts_open, source)
        elif isinstance(frame, BotStartedSpeakingFrame):
            if not self.bot_speaking:
                self.bot_speaking = True
                self._halting = False
                log.bot_started.append(at)
                if (carried := self._carrying()) is not None:
                    carried.carried.append((at, "start"))  # the interrupted reply, again
                else:
                    log.reactions.append(at)
        elif isinstance(frame, BotStoppedSpeakingFrame):
            if self.bot_speaking:
                self.bot_speaking = False
                log.bot_stopped.append(at)
                if self._halting:
                    self._halting = False
                    log.halts.append(at)
                if (carried := self._carrying()) is not None:
                    carried.carried.append((at, "stop"))
                if log.user_stops:
                    self._carry_on = False
        elif isinstance(frame, FunctionCallInProgressFrame):
            self._call_started(frame)
        elif isinstance(frame, FunctionCallResultFrame):
            self._call_result(frame)
        elif isinstance(frame, FunctionCallCancelFrame):
            self._call_cancelled(frame)
        elif isinstance(frame, ErrorFrame):
            self._error(frame)
        elif isinstance(frame, MetricsFrame):
            self._metrics(frame)
        self._changed()

    def _changed(self) -> None:
        if self.changed is not None:
            self.changed()

    def _call_started(self, frame: FunctionCallInProgressFrame) -> None:
        if frame.tool_call_id in self.calls:
            return
        args = dict(frame.arguments) if frame.arguments is not None else None
        call = Call(frame.tool_call_id, frame.function_name, args, self.log.index)
        self.calls[frame.tool_call_id] = call
        self.log.calls.append(call)

    def _call_result(self, frame: FunctionCallResultFrame) -> None:
        properties = frame.properties
        if properties is not None and properties.is_final is False:
            return  # an update of an async call; the call goes on
        call = self.calls.get(frame.tool_call_id)
        if call is None:
            call = Call(frame.tool_call_id, frame.function_name, None, self.log.index)
            self.calls[frame.tool_call_id] = call
            self.log.calls.append(call)
        if call.done:
            return
        call.done = True
        call.result = frame.result
        if frame.error:
            call.is_error, call.error = True, frame.error
        elif _is_template(frame.result, _MISSING):
            # Pipecat had no handler for it: the function was not offered (a Flows node without
            # it) or never registered. Nothing ran; it is not a call with those arguments.
            call.is_error = call.refused = True
            call.error = (
                f"{frame.result} (Pipecat refused the call: no function of that name was "
                "offered or registered at that moment)"
            )
        elif _is_template(frame.result, _FAILED):
            call.is_error, call.error = True, str(frame.result)
        elif (envelope := flows_error(frame.result)) is not None:
            call.is_error, call.error = True, envelope
        if call.turn_index != self.log.index:
            self.log.late_results.append(call)

    def _call_cancelled(self, frame: FunctionCallCancelFrame) -> None:
        call = self.calls.get(frame.tool_call_id)
        if call is None or call.done:
            return
        call.done = call.cancelled = call.is_error = True
        why = getattr(frame, "error", None)
        call.error = f"cancelled ({why})" if why else "cancelled"
        if call.turn_index != self.log.index:
            self.log.late_results.append(call)

    def _error(self, frame: ErrorFrame) -> None:
        exception = frame.exception
        message = str(frame.error)
        if message.startswith("Error executing function call"):
            return  # the function raised: its call records it (is_error, error)
        where = f"{frame.processor}: " if frame.processor is not None else ""
        detail = f" ({type(exception).__name__})" if exception is not None else ""
        self.log.errors.append(f"{where}{message}{detail}")
        processor = frame.processor
        ours = processor is not None and type(processor).__module__.startswith("pytest_agent_eval.")
        if isinstance(exception, AgentEvalError):
            return  # our code refused (a rule naming a function not offered): no crash
        # The bot crashed when the exception came through its own code (a processor of the
        # user's that raised, or a function of the user's that one of our services called: a
        # ScriptedLLMService rule's callback), or the error is fatal (the pipeline cannot go
        # on), as LiveKit's unrecoverable errors are. A service's error the pipeline goes on
        # from stays in `errors`: the turn is an ERROR, as for LiveKit's recoverable ones.
        own = Crash.from_agent_code(exception, own=self._own) if exception is not None else None
        if own is None and (ours or not getattr(frame, "fatal", False)):
            return  # one of our offline services failed in our own code: the bot did not break
        source = f"processor {processor}" if processor is not None else "the pipeline"
        self.log.crashes.append(
            AgentCrashError(
                f"{source} reported an error: {message}{detail}",
                kind=type(exception).__name__ if exception is not None else "ErrorFrame",
                detail=str(exception) if exception is not None else message,
                where=(own.where if own is not None else None) or f"Pipecat {source}",
            )
        )

    def _metrics(self, frame: MetricsFrame) -> None:
        for data in frame.data or []:
            if isinstance(data, LLMUsageMetricsData):
                usage = self.log.usage
                usage[0] += int(data.value.prompt_tokens or 0)
                usage[1] += int(data.value.completion_tokens or 0)
                usage[2] += 1
            elif isinstance(data, TurnMetricsData):
                self.log.turn_predictions.append(
                    {"is_complete": bool(data.is_complete), "probability": float(data.probability)}
                )


def _close(open_: dict[int, int], source: int) -> None:
    left = open_.get(source, 0) - 1
    if left > 0:
        open_[source] = left
    else:
        open_.pop(source, None)


def _first_channel(audio: bytes, channels: int) -> bytes:
    step = 2 * channels
    return b"".join(audio[i : i + 2] for i in range(0, len(audio), step))
