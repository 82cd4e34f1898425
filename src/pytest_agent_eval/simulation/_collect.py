"""Simulations as pytest tests: one item per simulation (per variant, per agent param).

A simulation file or a LiveKit ``scenarios.yaml`` under ``yaml_dirs`` is collected here; each
simulation becomes a `SimulationItem`, a `TranscriptItem` (its transcript part names, tags,
selects and reports it like a transcript's) whose test runs a simulated caller instead of the
transcript's turns, exactly as a YAML transcript's test does otherwise: the agent fixture,
voice fixtures checked, an ERROR refused with its reason, the result recorded for the reports
and JUnit, the threshold asserted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from .._collection import TranscriptItem, transcript_items
from .._config import Settings
from .._fixture import (
    JUDGE_MODEL_FIXTURE,
    adapter_or_fail,
    check_audio_fixtures,
    record_result,
    refuse,
    session_key,
    session_loop,
)
from .._report._progress import live_progress
from .._runner import RunSettings
from ..errors import AgentEvalError, TranscriptError
from ..models import TranscriptResult, describe_conditions
from ._caller import CallerSettings
from ._files import load_simulation_file
from ._model import Simulation, file_kind
from ._run import SimulationSettings, run_simulation

__all__ = [
    "CALLER_MODEL_FIXTURE",
    "SimulationFile",
    "SimulationItem",
    "collect_simulation_file",
    "run_simulation_in_test",
    "simulation_settings",
    "text_agent_skip",
]

CALLER_MODEL_FIXTURE = "llm_eval_caller_model"
"""An optional user fixture returning the simulated caller's model (an id or a pydantic-ai
``Model``), as ``llm_eval_judge_model`` does for judges."""


def collect_simulation_file(path: Path, parent: pytest.Collector) -> SimulationFile | None:
    """A `SimulationFile` for a simulation file or a LiveKit ``scenarios.yaml``, else None."""
    if file_kind(path) is None:
        return None
    return SimulationFile.from_parent(parent, path=path)


class SimulationFile(pytest.File):
    """A simulation file (one simulation) or LiveKit's ``scenarios.yaml`` (one per scenario)."""

    def collect(self) -> Iterable[pytest.Item]:
        settings = self.config.stash[session_key].settings
        try:
            simulations = load_simulation_file(
                self.path,
                default_threshold=settings.threshold,
                default_runs=settings.runs,
                presets=settings.conditions,
                audio_roots=settings.audio_root_paths,
            )
        except TranscriptError as exc:
            raise self.CollectError(str(exc)) from None
        for simulation in simulations:
            yield from transcript_items(
                self, simulation.transcript, item_class=SimulationItem, simulation=simulation
            )


class SimulationItem(TranscriptItem):
    """One simulation as a test (its transcript is the expanded one: a variant's)."""

    def __init__(self, *, simulation: Simulation, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.simulation = simulation.with_transcript(self.transcript)
        self.extra_keyword_matches.add("simulation")

    def execute(self, agent: Any, request: pytest.FixtureRequest) -> None:
        """Run the simulation against ``agent`` and assert its threshold."""
        __tracebackhide__ = True
        result = run_simulation_in_test(self, self.simulation, agent, request)
        result.assert_threshold()

    def reportinfo(self) -> tuple[Path, int | None, str]:
        path, line, head = super().reportinfo()
        return path, line, head.replace("transcript: ", "simulation: ", 1)


def simulation_settings(
    settings: Settings, *, judge_model: Any = None, caller_model: Any = None
) -> SimulationSettings:
    """What ``[tool.agent_eval]`` (and the model fixtures) ask of simulations."""
    cache = settings.caller_cache_path
    return SimulationSettings(
        run=RunSettings.from_settings(settings, judge_model=judge_model),
        caller=CallerSettings(
            model=caller_model or settings.caller_model or settings.model,
            retries=settings.retries,
            timeout_s=settings.timeout,
            cache_dir=cache if settings.caller_cache else None,
            refresh=settings.caller_cache_refresh,
        ),
        audio_dir=cache / "audio",
        voice=settings.voice,
        save_dir=settings.save_simulations_path,
        rootdir=settings.rootdir,
    )


_VOICE_ONLY = ("heard_contains_any", "heard_contains_all", "heard_wer_max")


def text_agent_skip(simulation: Simulation, adapter: Any) -> str | None:
    """Why a text agent skips ``simulation``: its audio conditions or variant change only the
    caller's audio, or it asserts what only a voice agent shows. None when it runs."""
    transcript = simulation.transcript
    agent = type(adapter).__name__
    if transcript.conditions:
        what = f"variant {transcript.variant!r}" if transcript.variant else "its audio conditions"
        return (
            f"simulation {simulation.id!r}: {what} ({describe_conditions(transcript.conditions)}) "
            f"change only the caller's audio, and {agent} is a text agent, which hears no "
            "audio: it would run exactly like the clean simulation. Run it with a voice "
            "adapter (such as LiveKitAdapter or PipecatAdapter)"
        )
    where = [k for k in _VOICE_ONLY if getattr(simulation.every_turn, k)]
    where = [f"every_turn ({', '.join(where)})"] if where else []
    if simulation.caller.hears == "audio":
        where.append("caller.hears: audio (the caller hears the agent's reply audio)")
    for index, turn in enumerate(transcript.turns):
        keys = [k for k in _VOICE_ONLY if getattr(turn.expect, k)]
        keys += ["interrupt"] if turn.interrupt is not None else []
        keys += ["conditions"] if turn.conditions and turn.audio is not None else []
        if keys:
            where.append(f"turn {index + 1} ({', '.join(keys)})")
    if transcript.latency_p95_ms_max is not None:
        where.append("latency_p95_ms_max")
    if not where:
        return None
    return (
        f"simulation {simulation.id!r} asserts what only a voice agent can show: "
        f"{'; '.join(where)}; {agent} is a text agent. Run it with a voice adapter (such as "
        "LiveKitAdapter or PipecatAdapter)"
    )


def _fixture_value(request: pytest.FixtureRequest, name: str) -> Any:
    try:
        return request.getfixturevalue(name)
    except pytest.FixtureLookupError:
        return None


def run_simulation_in_test(
    item: pytest.Item, simulation: Simulation, agent: Any, request: pytest.FixtureRequest
) -> TranscriptResult:
    """Run ``simulation`` inside test ``item`` as a YAML transcript runs in its test: an ERROR
    before any run is refused with its reason, the result is recorded for reports and JUnit."""
    __tracebackhide__ = True
    session = item.config.stash[session_key]
    runs = session.planned_runs(simulation.transcript.runs)
    if runs != simulation.transcript.runs:
        simulation = simulation.with_transcript(replace(simulation.transcript, runs=runs))
    adapter = adapter_or_fail(agent, item)
    speaks = bool(getattr(adapter, "consumes_audio", False))
    if not speaks and (reason := text_agent_skip(simulation, adapter)) is not None:
        pytest.skip(reason)
    transcript = simulation.transcript
    notes: tuple[str, ...] = ()
    if speaks and transcript.has_audio:
        notes = check_audio_fixtures(transcript, session, item)
    settings = simulation_settings(
        session.settings,
        judge_model=_fixture_value(request, JUDGE_MODEL_FIXTURE),
        caller_model=_fixture_value(request, CALLER_MODEL_FIXTURE),
    )
    progress = live_progress(item.config, transcript.runs, simulation.max_turns)
    failure: str | None = None
    try:
        result = session_loop(item.config).run(
            run_simulation(
                simulation,
                adapter,
                settings=settings,
                on_run_done=progress.run_done if progress else None,
                on_turn_start=progress.turn_start if progress else None,
            )
        )
    except AgentEvalError as exc:  # bad input found before any run: say it short
        failure = str(exc)
        if f"{simulation.id!r}" not in failure:
            failure = f"simulation {simulation.id!r}: {failure}"
    finally:
        if progress is not None:
            progress.close()
    if failure is not None:  # outside the except: no "during handling" second copy
        refuse(item, failure)
    record_result(
        item, result, path=transcript.path, description=transcript.description, notes=notes
    )
    caller = result.caller_usage
    requests = sum(r.simulation.requests for r in result.runs if r.simulation is not None)
    replayed = sum(r.simulation.cached_turns for r in result.runs if r.simulation is not None)
    item.user_properties.extend(
        [("agent_eval_caller_requests", requests), ("agent_eval_caller_cached_turns", replayed)]
    )
    if caller is not None:
        item.user_properties.extend(
            [
                ("agent_eval_caller_input_tokens", caller.input_tokens),
                ("agent_eval_caller_output_tokens", caller.output_tokens),
            ]
        )
    return result
