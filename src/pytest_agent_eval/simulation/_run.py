"""Running a simulation: the runner's runs, with a simulated caller writing the turns.

Flow of one run (a `RunScript` for `pytest_agent_eval._runner.run_transcript`, so the run
boundary, the turns, their checks and ERROR versus FAIL are the transcripts' own):

1. The scripted opening turns, if any, as in a transcript.
2. Then, turn after turn, the caller writes its next words from the call so far (greeting and
   replies included). For a voice agent they are synthesized into a WAV on the fly
   (`CallerVoice`) and streamed as an audio turn, under the simulation's audio conditions and
   variant; a text agent gets the text. Each simulated turn is checked with ``every_turn``.
3. The call ends when the caller ends it (from ``min_turns`` on: goal reached, or gave up),
   when ``max_turns`` is reached (the record says so), or when it breaks off (a turn that
   failed, a caller that failed: no usable words within the judges' retry budget, an ERROR).
4. Once the conversation is closed, the criteria judge scores each criterion on the whole
   conversation (`CriteriaJudge`), unless it broke off. The run passes when every criterion
   passes and no turn's check failed. `SimulatedCaller` on the run says who ended the call and
   why, the turns used and what the caller cost.

The caller's turns are cached (`CallerCache`), so a rerun against an unchanged agent replays
the same callers with no request, and a changed agent diverges from its first changed reply.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from .._expectations import build_call_checks
from .._runner import RunScript, RunSettings, run_transcript, turn_evaluators
from ..adapters.base import as_adapter
from ..errors import AgentEvalError
from ..evaluators._call import evaluate_call
from ..models import (
    Message,
    RunResult,
    SimulatedCaller,
    Transcript,
    TranscriptResult,
    TurnResult,
    VoiceSettings,
)
from ..voice._speech import spoken_text
from ._caller import Caller, CallerError, CallerSettings, Line
from ._judge import CriteriaJudge
from ._model import Simulation, simulated_turn
from ._voice import CallerVoice

__all__ = ["CallTranscript", "SimulationSettings", "run_seed", "run_simulation"]


@dataclass(frozen=True, slots=True, kw_only=True)
class SimulationSettings:
    """How to run simulations (as opposed to what one says)."""

    run: RunSettings = field(default_factory=RunSettings)
    """Concurrency, early stop, judge settings, turn timeout, saved audio."""
    caller: CallerSettings = field(default_factory=CallerSettings)
    """The caller's default model, retries, timeout and cache."""
    audio_dir: Path = Path(".agent_eval_cache/caller/audio")
    """Where the caller's utterances are synthesized (voice agents)."""
    voice: VoiceSettings | None = None
    """``[tool.agent_eval.voice]``, under the simulation's ``voice:``."""
    save_dir: Path | None = None
    """``--agent-eval-save-simulations``: each simulated conversation is written there as a
    plain transcript."""
    rootdir: Path | None = None
    """The project's rootdir: a saved conversation names its simulation file relative to it."""


@dataclass
class CallTranscript(Transcript):
    """The transcript of one simulated run: the scripted turns, then each turn the caller
    speaks, appended as it goes. A voice agent's audio input is wired from the start
    (``has_audio``), for the turns the caller will speak; the session factory reads the
    simulation's ``userdata`` from it like any transcript's."""

    speaks: bool = False
    """The caller speaks (a voice agent): its turns are audio turns."""

    @property
    def has_audio(self) -> bool:
        return self.speaks or any(t.audio is not None for t in self.turns)

    @classmethod
    def of(cls, transcript: Transcript, *, speaks: bool) -> CallTranscript:
        values = {f.name: getattr(transcript, f.name) for f in fields(Transcript)}
        values["turns"] = list(transcript.turns)
        return cls(**values, speaks=speaks)


def run_seed(seed: int, run_index: int) -> int:
    """The seed of run ``run_index``'s caller: the simulation's seed and the run, so each run is
    a caller of its own and the same run is always the same caller."""
    digest = hashlib.sha256(f"{seed}/{run_index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 1


class _SimulatedCall:
    """One run's `RunScript`: the scripted turns, then the caller's, then the judge."""

    def __init__(
        self,
        simulation: Simulation,
        run_index: int,
        *,
        caller: Caller,
        judge: CriteriaJudge,
        voice: CallerVoice | None,
        opening: Sequence[Sequence[Any]],
        settings: RunSettings,
    ) -> None:
        self.simulation = simulation
        self.transcript: Transcript = CallTranscript.of(
            simulation.transcript, speaks=voice is not None
        )
        self.scripted = len(simulation.transcript.turns)
        self.caller = caller
        self.judge = judge
        self.voice = voice
        self.opening = opening
        self.settings = settings
        self.seed = run_seed(simulation.caller.seed, run_index)
        self.call_checks = build_call_checks(simulation.transcript)
        self.hears_audio = voice is not None and simulation.caller.hears == "audio"
        self._heard: dict[int, str] = {}
        self.record = SimulatedCaller(
            persona=simulation.persona,
            goal=simulation.goal,
            ended_by="error",
            min_turns=simulation.min_turns,
            max_turns=simulation.max_turns,
            model=caller.model_id,
        )
        self._ended = False

    def _end(self, by: Any, reason: str, outcome: Any = None) -> None:
        self.record.ended_by, self.record.reason, self.record.outcome = by, reason, outcome
        self._ended = True

    async def next_turn(self, run: RunResult, history: Sequence[Message]) -> Sequence[Any] | None:
        done = len(run.turns)
        if done < self.scripted:
            return self.opening[done]
        simulation = self.simulation
        if done >= simulation.max_turns:
            self._end(
                "max_turns",
                f"max_turns ({simulation.max_turns}) reached: the caller had not ended the call",
            )
            return None
        lines = await self._heard_lines(run) if self.hears_audio else _lines(run)
        step = await self.caller.next_turn(
            lines,
            run_seed=self.seed,
            turn_number=done + 1,
            may_end=done >= simulation.min_turns,
        )
        record = self.record
        record.requests += step.requests
        record.cached_turns += step.cached
        if step.cached:
            record.note_recorded(step.recorded_at)
        if step.usage is not None:
            record.usage = step.usage if record.usage is None else record.usage + step.usage
        if step.turn.kind == "end":
            self._end("caller", step.turn.reason, step.turn.outcome)
            return None
        text = step.turn.text
        audio = await self.voice.speak(text, self.transcript) if self.voice is not None else None
        self.transcript.turns.append(simulated_turn(simulation, text, audio))
        record.simulated_turns += 1
        return turn_evaluators(self.transcript, done, self.settings)

    async def _heard_lines(self, run: RunResult) -> list[Line]:
        """The call as a caller on the phone heard it (``caller.hears: audio``): each reply as
        the offline Whisper hears its audio, which is what a listener gets of mispronounced
        numbers, cut-off speech or silence. The greeting stays text (no audio of it is saved).

        Raises:
            CallerError: A reply that said something has no saved audio, or Whisper failed.
        """
        lines = _lines(run, replies=False)
        for turn in run.turns:
            heard = self._heard.get(turn.index)
            if heard is None:
                heard = await _hear(turn, len(run.turns) + 1)
                self._heard[turn.index] = heard
            lines.append(("caller", spoken_text(turn.user)))
            lines.append(("agent", heard))
        return lines

    async def finish(self, run: RunResult) -> None:
        record = self.record
        record.scripted_turns = min(self.scripted, len(run.turns))
        record.simulated_turns = len(run.turns) - record.scripted_turns
        broken = next((t for t in run.turns if t.error is not None), None)
        if not self._ended or broken is not None or run.error is not None:
            if broken is not None:
                reason = f"turn {broken.index + 1} failed: {broken.error}"
            else:
                reason = run.error or "the conversation did not finish"
            record.ended_by, record.reason, record.outcome = "error", reason, None
            record.not_judged = f"the conversation broke off ({reason})"
        elif not run.turns:
            record.not_judged = "the conversation had no turn"
        else:
            run.evaluations = await self.judge.judge(run, record)
            run.evaluations += await evaluate_call(self.call_checks, run)
        run.simulation = record


def _lines(run: RunResult, *, replies: bool = True) -> list[Line]:
    """The call so far as the caller heard it: the greeting, then each turn's words and reply
    (with ``replies=False``, the greeting alone)."""
    lines: list[Line] = []
    greeting = run.greeting
    if greeting is not None and greeting.text:
        lines.append(("agent", greeting.text))
    if not replies:
        return lines
    for turn in run.turns:
        lines.append(("caller", spoken_text(turn.user)))
        lines.append(("agent", turn.reply))
    return lines


async def _hear(turn: TurnResult, turn_number: int) -> str:
    """What Whisper hears of ``turn``'s reply audio ("" for a turn that said nothing), for the
    caller's turn ``turn_number``."""
    where = f"the simulated caller failed at turn {turn_number}"
    path = turn.audio_out
    if path is None:
        if not turn.reply.strip():
            return ""
        raise CallerError(
            f"{where}: caller.hears is audio, but the reply of turn {turn.index + 1} has no "
            "saved audio to hear; give the adapter audio_out_dir=... (LiveKitAdapter, "
            "PipecatAdapter) and a TTS in the agent's session, or set caller.hears: text"
        )
    from ..voice._fixtures import read_wav, transcribe

    try:
        return await asyncio.to_thread(lambda: transcribe(read_wav(path)))
    except AgentEvalError as exc:  # no Whisper model, an unreadable WAV
        raise CallerError(f"{where}: it cannot hear the agent's reply audio: {exc}") from None


async def run_simulation(
    simulation: Simulation,
    agent: Any,
    *,
    settings: SimulationSettings | None = None,
    on_run_done: Callable[[RunResult], None] | None = None,
    on_turn_start: Callable[[int, int], None] | None = None,
) -> TranscriptResult:
    """Run ``simulation`` against ``agent`` ``runs`` times and aggregate the runs, as a
    transcript's: score, Wilson interval, threshold, ERROR runs left out of the score.

    Args:
        simulation: Who calls, what the agent must do, the scripted opening and the limits.
        agent: An adapter (a voice adapter gets the caller's speech, synthesized on the fly) or
            an agent callable.
        settings: Models, retries, caches and where to save the conversations.
        on_run_done: Called after each finished run (progress).
        on_turn_start: Called with (run index, turn index) as each turn starts (progress).

    Raises:
        TranscriptError: Variants not expanded, or audio conditions that cannot work.
        AdapterError: The adapter refused the simulation before any run.
    """
    settings = settings or SimulationSettings()
    adapter = as_adapter(agent)
    speaks = bool(getattr(adapter, "consumes_audio", False))
    voice = CallerVoice(settings.audio_dir, settings.voice) if speaks else None
    caller = Caller(simulation, settings.caller, voice=speaks)
    cache = settings.caller.cache_dir
    judge = CriteriaJudge(
        simulation,
        settings.run.judge,
        cache_dir=cache / "verdicts" if cache is not None else None,
        refresh=settings.caller.refresh,
    )
    transcript = simulation.transcript
    opening = [turn_evaluators(transcript, i, settings.run) for i in range(len(transcript.turns))]
    calls: dict[int, _SimulatedCall] = {}

    def script(index: int) -> RunScript:
        call = calls[index] = _SimulatedCall(
            simulation,
            index,
            caller=caller,
            judge=judge,
            voice=voice,
            opening=opening,
            settings=settings.run,
        )
        return call

    result = await run_transcript(
        # As the adapter will see it: for a voice agent, the caller's turns are audio turns
        # (so audio conditions and variants have audio to change).
        CallTranscript.of(transcript, speaks=speaks),
        adapter,
        settings=settings.run,
        on_run_done=on_run_done,
        on_turn_start=on_turn_start,
        scripts=script,
    )
    if settings.save_dir is not None:
        from ._save import save_conversation

        for run in result.runs:
            call = calls.get(run.index)
            if call is not None:
                save_conversation(
                    settings.save_dir, simulation, call.transcript, run, rootdir=settings.rootdir
                )
    return result
