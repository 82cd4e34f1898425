"""One category of a ``turn_taking:`` file played to the project's agent: its stimuli rendered
(once, into the cache), each played through the agent's framework by that adapter's runner,
the metrics computed and each budget checked, as a `TranscriptResult` (so gates, groups,
reports and JUnit read it like any eval's) and a `TurnTakingRecord` (the metrics themselves).

The result has one run and one turn, whose checks are the budgets: it passes when every budget
holds, fails when one is broken, and is an ERROR when a budget could not be measured or the
agent could not be run (a stimulus the session failed on).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from .._turn_taking._metrics import Observation, compute_metrics
from .._turn_taking._observer import PlayedStimulus, TurnTakingObserver
from .._turn_taking._pack import PACK_FORMAT, PACK_VOICES, write_pack
from .._turn_taking._stimulus import Category, Stimulus
from ..errors import AdapterError, AgentEvalError
from ..models import RunResult, Transcript, TranscriptResult, TurnResult
from ..models._turn_taking import TurnTakingRecord
from ..voice._clip import read_wav
from ..voice._sidecar import read_sidecar
from ._judge import judge_budgets
from ._spec import METRIC_CATEGORIES, TurnTakingSpec

__all__ = [
    "observer_for",
    "prepare_stimuli",
    "run_category",
]


def observer_for(adapter: Any, transcript: Transcript, *, tail_s: float) -> TurnTakingObserver:
    """The runner for ``adapter``'s framework, building each session as the adapter does.

    Raises:
        AdapterError: The adapter is not one whose agent's own turn-taking runs here
            (`LiveKitAdapter`, in process).
    """
    module = type(adapter).__module__
    if module.startswith("pytest_agent_eval.adapters.livekit.session"):
        from ..adapters.livekit._turn_taking import adapter_observer

        return adapter_observer(adapter, transcript, tail_s=tail_s)
    if module.startswith("pytest_agent_eval.adapters.pipecat"):
        raise AdapterError(
            "turn-taking conformance does not run Pipecat pipelines yet (docs/turn-taking.md, "
            "'Not built yet'); run this file against a LiveKitAdapter"
        )
    raise AdapterError(
        "turn-taking conformance plays audio through the agent's own VAD, turn detection and "
        f"interruption handling, in process; {type(adapter).__name__} does not run them. "
        "Return a LiveKitAdapter from llm_eval_agent for this file"
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
        out.append(PlayedStimulus(stimulus, read_wav(wav), events))
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


async def run_category(
    spec: TurnTakingSpec,
    category: Category,
    *,
    transcript: Transcript,
    observer: TurnTakingObserver,
    played: Sequence[PlayedStimulus],
) -> tuple[TranscriptResult, TurnTakingRecord]:
    """Play ``played`` (``category``'s stimuli) through ``observer`` and judge the budgets."""
    started = time.perf_counter()
    observations: list[Observation] = []
    error: str | None = None
    for item in played:
        try:
            observations.append(await observer.observe(item))
        except AgentEvalError as exc:
            error = f"stimulus {item.stimulus.id}: {exc}"
            break
    wall_s = time.perf_counter() - started
    metrics = compute_metrics(observations)
    verdicts = judge_budgets(spec.budgets_for(category), metrics, category, observations)
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
        errored=error is not None,
        duration_s=wall_s,
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
        framework=observer.framework,
        clock=observer.clock,
        stimuli=len(played),
        seeds=spec.seeds,
        voices=tuple(v.label for v in PACK_VOICES[: spec.voices]),
        audio_s=round(sum(p.clip.duration_s + spec.tail_s for p in played), 3),
        wall_s=round(wall_s, 3),
        metrics=tuple(relevant),
        budgets=tuple(verdicts) if error is None else (),
    )
    return result, record
