"""One category of a ``turn_taking:`` file played to the project's agent: its stimuli rendered
(once, into the cache), each played through the agent's framework by that adapter's runner,
the metrics computed and each budget checked, as a `TranscriptResult` (so gates, groups,
reports and JUnit read it like any eval's) and a `TurnTakingRecord` (the metrics themselves).

The result has one run and one turn, whose checks are the budgets: it passes when every budget
holds, fails when one is broken, and is an ERROR when a budget could not be measured or the
agent could not be run (a stimulus the session failed on, any exception of ours). An exception
that came through the agent's own code (its session factory, its ``on_enter``) is its crash:
the item is CRASHED, as a transcript's would be. Either way the result is recorded.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import product
from pathlib import Path
from typing import Any

from .._conditions import BUILTIN_PRESETS, seed_of
from .._turn_taking._metrics import Observation, compute_metrics, miss_of
from .._turn_taking._observer import PlayedStimulus, TurnTakingObserver
from .._turn_taking._pack import PACK_FORMAT, PACK_VOICES, build_pack, write_pack
from .._turn_taking._stimulus import Category, Stimulus
from ..errors import AdapterError, AgentCrashError, AgentEvalError
from ..models import AudioCondition, Crash, RunResult, Transcript, TranscriptResult, TurnResult
from ..models._turn_taking import MISSES_KEPT, CallerSpan, StimulusMiss, TurnTakingRecord
from ..voice._clip import read_wav, write_wav_atomic
from ..voice._degrade import apply as apply_conditions
from ..voice._sidecar import read_sidecar
from ._judge import judge_budgets
from ._spec import METRIC_CATEGORIES, TurnTakingSpec

__all__ = [
    "category_failed",
    "failure_of",
    "heard_over_lines",
    "hearing_probe",
    "observer_for",
    "prepare_stimuli",
    "run_category",
]


def observer_for(adapter: Any, transcript: Transcript, *, tail_s: float) -> TurnTakingObserver:
    """The runner for ``adapter``'s framework, building each session as the adapter does.

    Raises:
        AdapterError: The adapter is not one whose agent's own turn-taking runs here
            (`LiveKitAdapter` in process, `PipecatAdapter`).
    """
    module = type(adapter).__module__
    if module.startswith("pytest_agent_eval.adapters.livekit.session"):
        from ..adapters.livekit._turn_taking import adapter_observer

        return adapter_observer(adapter, transcript, tail_s=tail_s)
    if module.startswith("pytest_agent_eval.adapters.pipecat"):
        from ..adapters.pipecat._turn_taking import adapter_observer as pipecat_observer

        return pipecat_observer(adapter, transcript, tail_s=tail_s)
    raise AdapterError(
        "turn-taking conformance plays audio through the agent's own VAD, turn detection and "
        f"interruption handling, in process; {type(adapter).__name__} does not run them. "
        "Return a LiveKitAdapter or a PipecatAdapter from llm_eval_agent for this file"
    )


def _cached(wav: Path, stimulus: Stimulus) -> tuple[Mapping[str, Any], ...] | None:
    """The events of ``wav``'s sidecar when it was rendered from ``stimulus`` by this pack
    format, else None (render it again)."""
    if not wav.is_file():
        return None
    sidecar = read_sidecar(wav)
    if sidecar is None or sidecar.pending:
        return None
    made = sidecar.inputs.get("turn_taking", {})
    if not isinstance(made, Mapping) or made.get("pack_format") != PACK_FORMAT:
        return None
    if made.get("stimulus") != stimulus.to_dict():
        return None
    return tuple(sidecar.events)


def prepare_stimuli(cache: Path, chosen: Sequence[tuple[int, Stimulus]]) -> list[PlayedStimulus]:
    """The audio of ``chosen`` (seed, stimulus) pairs, rendered into ``cache/seed-N/`` the
    first time (offline, atomically) and read from there after.

    Raises:
        ConfigError, MissingExtraError: As `write_pack`.
    """
    by_seed: dict[int, list[Stimulus]] = {}
    for seed, stimulus in chosen:
        by_seed.setdefault(seed, []).append(stimulus)
    for seed, stimuli in by_seed.items():
        folder = cache / f"seed-{seed}"
        missing = [s.id for s in stimuli if _cached(folder / f"{s.id}.wav", s) is None]
        if missing:
            write_pack(folder, seed=seed, only=missing)
    out = []
    for seed, stimulus in chosen:
        wav = cache / f"seed-{seed}" / f"{stimulus.id}.wav"
        events = _cached(wav, stimulus)
        if events is None:  # written just now: only a concurrent writer could undo it
            raise AdapterError(f"{wav}: the stimulus was rendered but cannot be read back")
        out.append(PlayedStimulus(stimulus, read_wav(wav), events, wav=wav, seed=seed))
    return out


def heard_over_lines(
    cache: Path,
    played: Sequence[PlayedStimulus],
    lines: Sequence[str],
    levels_db: Sequence[float],
) -> list[PlayedStimulus]:
    """Each of ``played`` heard over each line (a built-in condition preset) at each caller
    level: one play per combination, in stimulus order. A combination that changes the audio
    is named after it (``pause-04@phone,-12dB``) and written beside its clean clip
    (``cache/seed-N/lines/``), so a report plays what the agent heard; the clean one at the
    pack's level is the clip itself. The noise a line adds is drawn from a seed of the pack's
    seed, the stimulus, the line and the level: the same every run.

    Raises:
        MissingExtraError: A line's audio work needs a library that is not installed.
    """
    out: list[PlayedStimulus] = []
    for item, line, level in product(played, lines, levels_db):
        chain = [AudioCondition("gain", {"db": level})] if level else []
        chain += BUILTIN_PRESETS[line]
        if not chain:
            out.append(item)
            continue
        label = ",".join(([line] if line != "clean" else []) + ([f"{level:+g}dB"] if level else []))
        sid = f"{item.stimulus.id}@{label}"
        seed = seed_of(f"{item.seed}/{item.stimulus.id}/{line}/{level:g}")
        clip = apply_conditions(item.clip, chain, seed)
        wav = cache / f"seed-{item.seed}" / "lines" / f"{sid}.wav"
        write_wav_atomic(wav, clip)
        out.append(replace(item, stimulus=replace(item.stimulus, id=sid), clip=clip, wav=wav))
    return out


def _describe(observation: Observation) -> str:
    """One line of what the agent did with a stimulus, for the turn's reply."""
    parts = []
    if observation.agent_stopped_s is not None:
        parts.append(f"stopped at {observation.agent_stopped_s:.2f} s")
        if observation.agent_resumed:
            parts.append("resumed")
    if observation.agent_turn_start_s is not None:
        when = "early" if observation.took_over_early else "after the caller"
        parts.append(f"took the turn at {observation.agent_turn_start_s:.2f} s ({when})")
    if not parts:
        parts.append("did nothing")
    caller = f"caller done at {observation.caller_end_s:.2f} s"
    return f"{observation.stimulus_id} (expect {observation.expect.value}, {caller}): " + (
        ", ".join(parts)
    )


def failure_of(exc: Exception) -> tuple[str, Crash | None]:
    """What ``exc`` says, and the agent's crash when it is one: an `AgentCrashError`, or an
    exception whose traceback passes through the agent's own code (`Crash.from_agent_code`:
    its session factory raised); else None (ours or the framework's: an ERROR)."""
    if isinstance(exc, AgentCrashError):
        return str(exc), Crash(type=exc.kind, message=exc.detail, where=exc.where)
    if isinstance(exc, AgentEvalError):
        return str(exc), None
    crash = Crash.from_agent_code(exc)
    if crash is not None:
        return f"the agent raised {crash.describe()}", crash
    return (
        f"{type(exc).__name__}: {exc} (raised outside the agent's code, by pytest-agent-eval or "
        "its framework: the agent was not evaluated)",
        None,
    )


async def run_category(
    spec: TurnTakingSpec,
    category: Category,
    *,
    transcript: Transcript,
    observer: TurnTakingObserver,
    played: Sequence[PlayedStimulus],
    probe: PlayedStimulus | None = None,
    audio_root: Path | None = None,
) -> tuple[TranscriptResult, TurnTakingRecord]:
    """Play ``played`` (``category``'s stimuli) through ``observer`` and judge the budgets,
    after the hearing ``probe`` (`hearing_probe`), whose observation counts for nothing: a
    VAD that hears none of it is deaf, and the item an ERROR. The record's misses name their
    clips relative to ``audio_root`` (the rootdir) when under it.

    A stimulus that raised ends the item there: the agent's crash makes it CRASHED, anything
    else an ERROR (`failure_of`)."""
    started = time.perf_counter()
    observations: list[Observation] = []
    error: str | None = None
    crash: Crash | None = None
    if probe is not None:
        try:
            await observer.observe(probe)
        except Exception as exc:  # as a stimulus's
            said, crash = failure_of(exc)
            error = (
                f"the hearing probe {probe.stimulus.id} (a whole sentence played before the "
                f"{category.value} stimuli, whose words alone are too short to tell a deaf VAD "
                f"from an agent that ignores them): {said}"
            )
    for item in played if error is None else ():
        try:
            observations.append(await observer.observe(item))
        except Exception as exc:  # the stimulus boundary: recorded, never a bare traceback
            said, crash = failure_of(exc)
            error = f"stimulus {item.stimulus.id}: {said}"
            break
    return _result(
        spec,
        category,
        transcript=transcript,
        framework=observer.framework,
        clock=observer.clock,
        played=played,
        observations=observations,
        error=error,
        crash=crash,
        wall_s=time.perf_counter() - started,
        audio_root=audio_root,
    )


def hearing_probe(category: Category, seed: int) -> tuple[int, Stimulus] | None:
    """The stimulus played before ``category``'s (with the ``seed`` of its pack): over
    `DEAF_SPEECH_S` of the caller's words while the agent is silent, the first pause of the
    pack. None for the categories whose every stimulus has as much (each then shows a deaf
    VAD itself)."""
    if category in (Category.PAUSE, Category.FILLER):
        return None
    return seed, next(s for s in build_pack(seed) if s.category is Category.PAUSE)


def category_failed(
    spec: TurnTakingSpec, category: Category, *, transcript: Transcript, exc: Exception
) -> tuple[TranscriptResult, TurnTakingRecord]:
    """The result of a category that could not be played at all (no runner for the adapter,
    the stimuli could not be rendered): an ERROR, or CRASHED for the agent's own exception."""
    said, crash = failure_of(exc)
    return _result(
        spec,
        category,
        transcript=transcript,
        framework="none",
        clock="none",
        played=(),
        observations=[],
        error=said,
        crash=crash,
        wall_s=0.0,
    )


def _result(
    spec: TurnTakingSpec,
    category: Category,
    *,
    transcript: Transcript,
    framework: str,
    clock: str,
    played: Sequence[PlayedStimulus],
    observations: Sequence[Observation],
    error: str | None,
    crash: Crash | None,
    wall_s: float,
    audio_root: Path | None = None,
) -> tuple[TranscriptResult, TurnTakingRecord]:
    metrics = compute_metrics(list(observations))
    missed = [
        (p, o, what)
        for p, o in zip(played, observations, strict=False)  # observations stop at an error
        if (what := miss_of(o)) is not None
    ]
    verdicts = judge_budgets(spec.budgets_for(category), metrics, category, list(observations))
    turn = TurnResult(
        index=0,
        user=f"{len(played)} {category.value} stimuli ({', '.join(p.stimulus.id for p in played)})",
        reply="\n".join(_describe(o) for o in observations),
        evaluations=[v.check() for v in verdicts] if error is None else [],
        duration_s=wall_s,
    )
    run = RunResult(
        index=0,
        turns=[turn] if error is None else [],
        error=error,
        errored=error is not None and crash is None,
        duration_s=wall_s,
        crash=crash,
    )
    passed = run.passed
    result = TranscriptResult(
        passed=passed,
        score=1.0 if passed else 0.0,
        threshold=1.0,
        runs=[run],
        transcript_id=transcript.id,
        planned_runs=1,
        tags=list(transcript.tags),
        duration_s=wall_s,
    )
    relevant = [m for name, m in metrics.items() if category in METRIC_CATEGORIES[name]]
    record = TurnTakingRecord(
        spec_id=spec.id,
        category=category.value,
        framework=framework,
        clock=clock,
        stimuli=len(played),
        seeds=spec.seeds,
        voices=tuple(v.label for v in PACK_VOICES[: spec.voices]),
        lines=spec.lines,
        levels_db=spec.levels_db,
        audio_s=round(sum(p.clip.duration_s + spec.tail_s for p in played), 3),
        wall_s=round(wall_s, 3),
        metrics=tuple(relevant),
        budgets=tuple(verdicts) if error is None else (),
        observed=len(observations) if len(observations) < len(played) else None,
        missed=len(missed),
        misses=tuple(
            _miss(p, o, what, tail_s=spec.tail_s, audio_root=audio_root)
            for p, o, what in missed[:MISSES_KEPT]
        ),
    )
    return result, record


def _miss(
    played: PlayedStimulus,
    observation: Observation,
    what: str,
    *,
    tail_s: float,
    audio_root: Path | None,
) -> StimulusMiss:
    """``observation`` of ``played``, which the agent got wrong (``what``), as its record."""
    wav = played.wav
    audio = ""
    if wav is not None:
        audio = str(wav)
        if audio_root is not None and wav.is_relative_to(audio_root):
            audio = wav.relative_to(audio_root).as_posix()
    return StimulusMiss(
        stimulus_id=played.stimulus.id,
        seed=played.seed,
        text=played.stimulus.text,
        expect=played.stimulus.expect.value,
        what=what,
        audio=audio,
        clip_s=round(played.clip.duration_s, 3),
        tail_s=tail_s,
        caller=tuple(
            CallerSpan(
                kind=str(e["kind"]),
                start_s=round(float(e["start_s"]), 3),
                end_s=round(float(e["end_s"]), 3),
                text=str(e.get("text", "")),
            )
            for e in played.events
        ),
        agent_speaking=played.stimulus.agent_speaking,
        caller_end_s=round(observation.caller_end_s, 3),
        agent_turn_start_s=_rounded(observation.agent_turn_start_s),
        agent_stopped_s=_rounded(observation.agent_stopped_s),
        agent_resumed=observation.agent_resumed,
    )


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)
