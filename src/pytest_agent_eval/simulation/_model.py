"""A simulation as data: what the YAML says, validated once, as typed records.

A simulation file is a transcript file (its ``id``, ``runs``, ``threshold``, ``tags``, ``voice``,
``conditions``, ``variants``, ``greeting``, ``userdata`` and optional scripted opening
``turns``) plus who the caller is and what the agent must do: ``persona``, ``goal``,
``criteria``, ``max_turns``, ``min_turns``, ``every_turn`` expectations, and the ``caller`` and
``judge`` models. The transcript part is validated and built by the transcript loader
(`pytest_agent_eval._loader.YamlDocument`), so its checks and messages are the transcripts' own;
the rest is checked here, against the JSON Schema `simulation_schema` (which extends the
transcript schema), with the same file, line and field in every message.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from .._compat.pydantic_ai import model_id_problem
from .._expectations import expect_keys
from .._file_kind import FileKind, file_kind
from .._loader import Presets, YamlDocument, read_yaml_document
from .._schema._simulation import (
    DEFAULT_MAX_TURNS,
    DEFAULT_MIN_TURNS,
    MAX_TURNS_LIMIT,
    build_simulation_schema,
    render_simulation_schema,
    simulation_reference_page,
)
from .._serialize import from_json
from ..errors import TranscriptError
from ..models import Expect, Transcript, Turn

__all__ = [
    "DEFAULT_MAX_TURNS",
    "DEFAULT_MIN_TURNS",
    "MAX_TURNS_LIMIT",
    "SIMULATION_KEYS",
    "CallerConfig",
    "Criterion",
    "FileKind",
    "Simulation",
    "build_simulation_schema",
    "file_kind",
    "read_simulation_file",
    "render_simulation_schema",
    "simulated_turn",
    "simulation_reference_page",
    "simulation_schema",
    "turn_limits_problem",
]

DEFAULT_TEMPERATURE = 0.7
"""The caller's sampling temperature when none is given: each run is a different caller (the
caller cache makes each one replay exactly)."""
DEFAULT_MAX_WORDS = 80
"""The longest caller utterance when ``max_words`` is not given: longer is a runaway."""

SIMULATION_KEYS = (
    "persona",
    "goal",
    "criteria",
    "max_turns",
    "min_turns",
    "every_turn",
    "caller",
    "judge",
)
"""The top-level keys a simulation adds to a transcript's."""


@dataclass(frozen=True, slots=True)
class Criterion:
    """One thing the agent must do over the whole conversation, judged on its own.

    Args:
        text: The criterion, in plain words ("The agent confirms the refund amount").
        key: Its place in the file (``criteria[1]``), how reports name its verdict.
        location: ``file:line`` of it, for a simulation loaded from a file.
    """

    text: str
    key: str = ""
    location: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CallerConfig:
    """The simulated caller's model and how it samples.

    Args:
        model: A pydantic-ai model id, or (in Python) a pydantic-ai ``Model``; None: the
            ``llm_eval_caller_model`` fixture, then ``caller_model``, then ``model`` from
            ``[tool.agent_eval]``.
        temperature: Sampling temperature; None leaves the provider's default. Above 0, the
            runs of a simulation are different callers; the caller cache makes each run
            replay exactly.
        seed: Part of each run's seed (with the run's index): sent to providers that take
            one, and part of the cache key, so a new seed is a new set of callers.
        max_words: An utterance longer than this is a runaway: the caller failed (an ERROR of
            the run, retried first), never something the agent has to sit through.
        hears: ``"text"``: the caller reads what the agent said; ``"audio"`` (voice agents):
            it hears the agent's reply audio, through the offline Whisper, as a caller on a
            phone would (the adapter must save reply audio: ``audio_out_dir``).
    """

    model: Any = None
    temperature: float | None = DEFAULT_TEMPERATURE
    seed: int = 0
    max_words: int = DEFAULT_MAX_WORDS
    hears: Literal["text", "audio"] = "text"


@dataclass(frozen=True, kw_only=True)
class Simulation:
    """A persona-driven conversation with the agent, judged at the end, run N times.

    Args:
        transcript: What a simulation shares with a transcript: ``id``, ``runs``,
            ``threshold``, ``tags``, ``voice``, audio ``conditions`` and ``variants``,
            ``greeting`` checks, ``userdata``, ``turn_timeout_s``, and the scripted opening
            turns (``turns``, possibly none) run before the caller takes over.
        persona: Who the caller is and how they behave.
        criteria: What the agent must do over the conversation; each is judged on its own,
            and a run passes only when every one passes. Strings are turned into `Criterion`.
        goal: What the caller wants ("" when the persona says it).
        max_turns: The most user turns (scripted and simulated); reaching it ends the call.
        min_turns: The caller may end the call only after this many user turns.
        every_turn: Expectations checked on every simulated turn (``reply_contains_none``,
            ``max_latency_ms``, ``heard_wer_max``...).
        every_turn_locations: Where each ``every_turn`` key is written (``{"expect.
            reply_contains_none": "refund.yaml:14"}``), so its failures name the line.
        caller: The caller's model and sampling.
        judge_model: The criteria judge's model (id or pydantic-ai ``Model``); None: as for
            every judge (the ``llm_eval_judge_model`` fixture, ``judge_model``, ``model``).
        source: ``simulation`` (a file of ours) or ``livekit`` (a scenario of LiveKit's
            ``scenarios.yaml``).

    Raises:
        TranscriptError: No persona, no criteria, or turn limits that cannot work.
    """

    transcript: Transcript
    persona: str
    criteria: Sequence[Criterion | str]
    goal: str = ""
    max_turns: int = DEFAULT_MAX_TURNS
    min_turns: int = DEFAULT_MIN_TURNS
    every_turn: Expect = field(default_factory=Expect)
    every_turn_locations: Mapping[str, str] = field(default_factory=dict)
    caller: CallerConfig = field(default_factory=CallerConfig)
    judge_model: Any = None
    source: FileKind = "simulation"

    @property
    def criterion_records(self) -> tuple[Criterion, ...]:
        """The criteria as records (``__post_init__`` made every string given one)."""
        return tuple(c for c in self.criteria if isinstance(c, Criterion))

    def __post_init__(self) -> None:
        where = f"simulation {self.transcript.id!r}"
        if not isinstance(self.persona, str) or not self.persona.strip():
            raise TranscriptError(f"{where}: a simulation needs a persona, who the caller is")
        criteria = tuple(
            c if isinstance(c, Criterion) else Criterion(str(c), key=f"criteria[{i}]")
            for i, c in enumerate(self.criteria or ())
        )
        if not criteria or any(not c.text.strip() for c in criteria):
            raise TranscriptError(
                f"{where}: a simulation needs criteria, what the agent must do (each judged "
                "on its own), none of them empty"
            )
        object.__setattr__(self, "criteria", criteria)
        problem = turn_limits_problem(self.max_turns, self.min_turns, len(self.transcript.turns))
        if problem is not None:
            raise TranscriptError(f"{where}: {problem}")

    @property
    def id(self) -> str:
        """The simulation's id (its transcript's)."""
        return self.transcript.id

    def with_transcript(self, transcript: Transcript) -> Simulation:
        """This simulation over another transcript (one of its variants)."""
        return replace(self, transcript=transcript)


def turn_limits_problem(max_turns: int, min_turns: int, scripted: int) -> str | None:
    """Why these turn limits cannot work, or None."""
    for name, value in (("max_turns", max_turns), ("min_turns", min_turns)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{name} must be a whole number >= 1, got {value!r}"
        if value > MAX_TURNS_LIMIT:
            return f"{name} must be at most {MAX_TURNS_LIMIT}, got {value!r}"
    if max_turns < min_turns:
        return (
            f"max_turns ({max_turns}) is below min_turns ({min_turns}), the earliest turn the "
            "caller may end the call at; raise max_turns or lower min_turns"
        )
    if max_turns <= scripted:
        return (
            f"max_turns ({max_turns}) leaves the caller no turn after the {scripted} scripted "
            f"turn(s); raise it above {scripted}"
        )
    return None


def simulated_turn(simulation: Simulation, text: str, audio: Path | None) -> Turn:
    """The `Turn` the caller's words ``text`` make: ``every_turn``'s expectations, its lines,
    and the synthesized ``audio`` (None for a text agent)."""
    line = None
    if simulation.every_turn_locations:
        first = next(iter(simulation.every_turn_locations.values()))
        line = int(first.rsplit(":", 1)[-1]) if first.rsplit(":", 1)[-1].isdigit() else None
    return Turn(
        user=text,
        audio=audio,
        expect=simulation.every_turn,
        line=line,
        locations=dict(simulation.every_turn_locations),
    )


# --------------------------------------------------------------------------------------------
# The schema
# --------------------------------------------------------------------------------------------

PACKAGED_SCHEMA = "_schema/simulation.json"
"""Where the shipped copy lives inside the package (the loader validates against it)."""


@cache
def simulation_schema() -> dict[str, Any]:
    """The simulation JSON Schema shipped inside the package."""
    import json

    text = resources.files("pytest_agent_eval").joinpath(PACKAGED_SCHEMA).read_text("utf-8")
    return json.loads(text)  # type: ignore[no-any-return]


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(simulation_schema())


_HINTS = {
    "persona": "add `persona:`, who the caller is and how they behave",
    "criteria": "add `criteria:`, a list of what the agent must do (each judged on its own)",
}


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def read_simulation_file(
    path: Path,
    *,
    default_threshold: float = 0.8,
    default_runs: int = 1,
    presets: Presets | None = None,
    audio_roots: Sequence[Path] | None = None,
) -> list[Simulation]:
    """The simulation of a simulation file of ours (one); LiveKit's ``scenarios.yaml`` is read
    by `load_simulation_file`, which tells the two apart.

    Raises:
        TranscriptError: One error with the file, line, simulation and field.
    """
    document = read_yaml_document(path, subject=_subject)
    data = document.data
    if not isinstance(data, dict):
        raise TranscriptError(
            f"{document.path}: a simulation file is a mapping with id, persona and criteria; "
            f"this one holds {type(data).__name__}"
        )
    document.validate(_validator(), hints=_HINTS)
    for at in (("caller", "model"), ("judge", "model")):
        value = data.get(at[0], {}).get(at[1])
        if isinstance(value, str) and (problem := model_id_problem(value)) is not None:
            raise document.error(at, f"{problem}; write provider:model, e.g. 'openai:gpt-4o-mini'")
    scripted = len(data.get("turns", []))
    max_turns = data.get("max_turns", DEFAULT_MAX_TURNS)
    min_turns = data.get("min_turns", DEFAULT_MIN_TURNS)
    problem = turn_limits_problem(max_turns, min_turns, scripted)
    if problem is not None:
        raise document.error(("max_turns" if "max_turns" in data else "min_turns",), problem)
    every_turn = data.get("every_turn") or {}
    for key in expect_keys():
        if key.check is None or key.name not in every_turn:
            continue
        for inner, found in key.check(every_turn[key.name]):
            fix = f". {key.yaml_fix}" if key.yaml_fix else ""
            raise document.error(("every_turn", key.name, *inner), f"{found}{fix}")
    transcript = document.build_transcript(
        {k: v for k, v in data.items() if k not in SIMULATION_KEYS},
        default_threshold=default_threshold,
        default_runs=default_runs,
        presets=presets,
        audio_roots=audio_roots,
        audio_to_come=True,  # the caller's words are spoken to a voice agent
    )
    caller = data.get("caller", {})
    return [
        Simulation(
            transcript=transcript,
            persona=data["persona"],
            goal=data.get("goal", ""),
            criteria=[
                Criterion(text, key=f"criteria[{i}]", location=_location(document, ("criteria", i)))
                for i, text in enumerate(data["criteria"])
            ],
            max_turns=max_turns,
            min_turns=min_turns,
            every_turn=_expect(every_turn),
            every_turn_locations=_every_turn_locations(document, every_turn),
            caller=CallerConfig(
                model=caller.get("model"),
                temperature=caller.get("temperature", DEFAULT_TEMPERATURE),
                seed=caller.get("seed", 0),
                max_words=caller.get("max_words", DEFAULT_MAX_WORDS),
                hears=caller.get("hears", "text"),
            ),
            judge_model=data.get("judge", {}).get("model"),
        )
    ]


def _subject(at: Sequence[str | int], data: Mapping[str, Any]) -> list[str]:
    parts = []
    if isinstance(data.get("id"), str):
        parts.append(f"simulation {data['id']!r}")
    if len(at) >= 2 and at[0] == "turns" and isinstance(at[1], int):
        parts.append(f"turn {at[1] + 1}")
    return parts


def _location(document: YamlDocument, at: tuple[str | int, ...]) -> str | None:
    line = document.line(at)
    return f"{document.path.name}:{line}" if line else None


def _every_turn_locations(document: YamlDocument, raw: Mapping[str, Any]) -> dict[str, str]:
    """``{"expect.<key>": "file:line"}`` for each ``every_turn`` key (and ``[j]`` for each
    entry of a list of entries), as a transcript turn's `Turn.locations` say them."""
    found: dict[str, str | None] = {}
    for name, value in raw.items():
        found[f"expect.{name}"] = _location(document, ("every_turn", name))
        if isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for j in range(len(value)):
                found[f"expect.{name}[{j}]"] = _location(document, ("every_turn", name, j))
    return {k: v for k, v in found.items() if v is not None}


def _expect(raw: Mapping[str, Any]) -> Expect:
    hints = _expect_hints()
    return Expect(
        **{
            key.name: from_json(hints[key.name], raw[key.name], path=f"every_turn.{key.name}")
            for key in expect_keys()
            if key.name in raw
        }
    )


@cache
def _expect_hints() -> dict[str, Any]:
    return typing.get_type_hints(Expect)
