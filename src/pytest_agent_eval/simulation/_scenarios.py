"""LiveKit's ``scenarios.yaml``, read as it is: each scenario one simulation.

The format is the one ``lk agent simulate --scenarios`` reads (livekit-cli's ``scenariosFile``):
a top-level ``name`` (and the ``id`` LiveKit Cloud adds), and ``scenarios``, each with a
``label``, the simulated user's ``instructions``, the ``agent_expectations`` the judge grades,
optional ``tags`` and ``userdata`` (any mapping, handed to the agent), and the ``id`` LiveKit
Cloud adds. LiveKit's docs write ``tags`` as a mapping of names to values, its simulation
protocol carries a job's tags as a list of strings, and users write both: both are read. The CLI ignores a field it does not know; here an
unknown field is an error naming the file, the line and the closest known field, because a
misspelt ``agent_expectation`` would otherwise leave the scenario with nothing to judge.

Each scenario becomes a `Simulation`: the label is its id (the test name is made from it),
the instructions its persona (they carry the goal), the expectations its one criterion, each
tag ``name: value`` the tag ``name:value`` (a listed tag as it is written), and ``runs`` and
``threshold`` come from ``[tool.agent_eval]``. The ``id`` is what identifies a scenario: a
label that several scenarios of distinct ids share is accepted, and their tests are named
``label (id)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from .._loader import YamlDocument, read_yaml_document
from ..errors import TranscriptError
from ..models import Transcript
from ._model import Criterion, Simulation

__all__ = ["SCENARIOS_SCHEMA", "load_scenarios", "scenario_tags"]

_TAG_VALUE = {"type": ["string", "number", "boolean"]}

SCENARIOS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "LiveKit scenarios.yaml (lk agent simulate)",
    "type": "object",
    "additionalProperties": False,
    "required": ["scenarios"],
    "properties": {
        "id": {"type": "string", "description": "The scenario group's id (LiveKit Cloud)."},
        "name": {"type": "string", "description": "The scenario group's name."},
        "scenarios": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["label", "instructions", "agent_expectations"],
                "properties": {
                    "id": {"type": "string", "description": "The scenario's id (LiveKit Cloud)."},
                    "label": {"type": "string", "minLength": 1},
                    "instructions": {"type": "string", "minLength": 1},
                    "agent_expectations": {"type": "string", "minLength": 1},
                    "tags": {
                        "description": "A mapping of names to values (LiveKit's docs), or a "
                        "list of strings (LiveKit's simulation protocol).",
                        "oneOf": [
                            {"type": "object", "additionalProperties": _TAG_VALUE},
                            {"type": "array", "items": {"type": "string", "minLength": 1}},
                        ],
                    },
                    "userdata": {"type": "object"},
                },
            },
        },
    },
}
"""LiveKit's scenario file format, as a JSON Schema (what the CLI reads, plus the ``id`` fields
LiveKit Cloud writes into it)."""

_HINTS = {
    "scenarios": "a scenarios.yaml lists its scenarios under `scenarios:`",
    "label": "every scenario needs a `label:`, its name (the test is named after it)",
    "instructions": "every scenario needs `instructions:`, what the simulated user does",
    "agent_expectations": "every scenario needs `agent_expectations:`, what the judge grades",
}


@cache
def _validator() -> Any:
    from jsonschema import Draft202012Validator

    return Draft202012Validator(SCENARIOS_SCHEMA)


def scenario_tags(tags: Mapping[str, Any] | Sequence[str]) -> list[str]:
    """LiveKit's ``{feature: room_booking, difficulty: '2'}`` as our tags,
    ``["feature:room_booking", "difficulty:2"]`` (a boolean reads ``true``/``false``); a list
    of strings (``[smoke, "feature:booking"]``) is taken as it is."""
    if not isinstance(tags, Mapping):
        return [str(tag).strip() for tag in tags]
    out = []
    for name, value in tags.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        out.append(f"{name}:{text}")
    return out


def _check_tags(document: YamlDocument) -> None:
    """Refuse a scenario's ``tags`` that are neither form, saying both (the schema's ``oneOf``
    would only say "not valid under any of the given schemas")."""
    scenarios = document.data.get("scenarios")
    for index, raw in enumerate(scenarios if isinstance(scenarios, list) else []):
        tags = raw.get("tags") if isinstance(raw, dict) else None
        if tags is None:
            continue
        where: tuple[str | int, ...] | None = None
        if isinstance(tags, dict):
            what = "a tag's value is a string, a number or a boolean"
            bad = [k for k, v in tags.items() if not isinstance(v, str | int | float | bool)]
            where = ("tags", bad[0]) if bad else None
        elif isinstance(tags, list):
            what = "a listed tag is a string"
            bad_items = [i for i, v in enumerate(tags) if not isinstance(v, str) or not v.strip()]
            where = ("tags", bad_items[0]) if bad_items else None
        else:
            what, where = "tags are a mapping or a list of strings", ("tags",)
        if where is not None:
            raise document.error(
                ("scenarios", index, *where),
                f"{what}: write `tags: {{feature: booking}}` (LiveKit's docs) or "
                '`tags: [smoke, "feature:booking"]` (a list of strings)',
            )


def load_scenarios(
    path: Path, *, default_threshold: float = 0.8, default_runs: int = 1
) -> list[Simulation]:
    """One `Simulation` per scenario of a LiveKit ``scenarios.yaml``.

    Raises:
        TranscriptError: One error naming the file, the line, the scenario and the field (an
            unknown field, a missing label, instructions or expectations, two scenarios with
            one label).
    """
    holder: dict[str, Any] = {}

    def subject(at: Sequence[str | int], data: Mapping[str, Any]) -> list[str]:
        found = holder.get("data")
        if len(at) >= 2 and at[0] == "scenarios" and isinstance(at[1], int):
            items = found.get("scenarios") if isinstance(found, dict) else None
            item = items[at[1]] if isinstance(items, list) and at[1] < len(items) else None
            label = item.get("label") if isinstance(item, dict) else None
            if isinstance(label, str):
                return [f"scenario {label!r}"]
            return [f"scenario {at[1] + 1}"]
        return []

    document = read_yaml_document(path, subject=subject)
    holder["data"] = document.data
    if not isinstance(document.data, dict):
        raise TranscriptError(
            f"{document.path}: a scenarios file is a mapping with `name:` and `scenarios:`; "
            f"this one holds {type(document.data).__name__}"
        )
    _check_tags(document)
    document.validate(_validator(), hints=_HINTS)
    group = document.data
    scenarios = group["scenarios"]
    labels = [raw["label"].strip() for raw in scenarios]
    seen: dict[tuple[str, str | None], int] = {}
    simulations = []
    for index, raw in enumerate(scenarios):
        label = labels[index]
        scenario_id = raw.get("id")
        identity = (label, scenario_id)
        if identity in seen or (scenario_id is None and labels.count(label) > 1):
            other = seen.get(identity, labels.index(label))
            if other == index:
                other = labels.index(label, index + 1)
            same_id = f" and id {scenario_id!r}" if scenario_id is not None else ""
            raise document.error(
                ("scenarios", index, "label"),
                f"label {label!r}{same_id} is also scenario {other + 1}'s; a scenario is "
                "told apart by its `id` (or its label, when it has no id): give each a "
                "distinct `id`, or a distinct label",
            )
        seen[identity] = index
        name = f"{label} ({scenario_id})" if labels.count(label) > 1 else label
        simulations.append(
            _simulation(document, group, index, raw, name, default_threshold, default_runs)
        )
    return simulations


def _simulation(
    document: YamlDocument,
    group: Mapping[str, Any],
    index: int,
    raw: Mapping[str, Any],
    name: str,
    default_threshold: float,
    default_runs: int,
) -> Simulation:
    at = ("scenarios", index)
    line = document.line(at)
    description = " · ".join(
        str(part)
        for part in (group.get("name"), raw.get("id") and f"LiveKit scenario {raw['id']}")
        if part
    )
    transcript = Transcript(
        id=name,
        turns=[],
        threshold=default_threshold,
        runs=default_runs,
        tags=scenario_tags(raw.get("tags") or {}),
        description=description,
        path=document.path,
        line=line,
        userdata=dict(raw.get("userdata") or {}),
    )
    expectations_line = document.line((*at, "agent_expectations"))
    return Simulation(
        transcript=transcript,
        persona=raw["instructions"],
        criteria=[
            Criterion(
                raw["agent_expectations"].strip(),
                key="agent_expectations",
                location=f"{document.path.name}:{expectations_line}" if expectations_line else None,
            )
        ],
        source="livekit",
    )
