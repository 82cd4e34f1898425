"""The simulation file's JSON Schema and reference page, built here beside the transcript's.

A simulation file is a transcript file plus the caller's and the criteria's fields; its schema
extends the transcript schema. It lives in the schema package, below `pytest_agent_eval.simulation`
(which validates against the shipped copy and takes its turn limits from here), so the
``python -m pytest_agent_eval._schema`` command regenerates both schemas without importing the
simulation runtime.
"""

from __future__ import annotations

import json
from typing import Any

from .._expectations import transcript_keys
from . import build_schema, schema_reference

__all__ = [
    "DEFAULT_MAX_TURNS",
    "DEFAULT_MIN_TURNS",
    "MAX_TURNS_LIMIT",
    "SCHEMA_ID",
    "build_simulation_schema",
    "render_simulation_schema",
    "simulation_reference_page",
]

DEFAULT_MAX_TURNS = 12
"""The most user turns a simulated conversation has when ``max_turns`` is not given (scripted
and simulated together): enough for a booking with its questions, few enough that a caller
that never hangs up costs little."""
DEFAULT_MIN_TURNS = 2
"""The earliest turn after which the caller may end the call by default: never on its first
words (judges and simulators that end a conversation on turn 1 are a known plague)."""
MAX_TURNS_LIMIT = 200
"""The most turns a simulation may ask for."""
SCHEMA_ID = "https://datarootsio.github.io/pytest-agent-eval/schema/simulation.json"

_MODEL_ID = {
    "type": "string",
    "minLength": 1,
    "description": "A pydantic-ai model id, provider:model (openai:gpt-4o-mini, "
    "anthropic:claude-sonnet-4-5, ollama:llama3.1, test).",
}


def build_simulation_schema() -> dict[str, Any]:
    """The simulation JSON Schema (draft 2020-12): the transcript schema's fields and
    definitions, minus ``cases`` and ``far_end`` (the simulated caller is the far end), plus
    the simulation's own."""
    base = build_schema()
    transcript = dict(base["properties"])
    transcript.pop("cases", None)
    transcript.pop("far_end", None)
    turns = dict(transcript.pop("turns"))
    turns["description"] = (
        "Scripted opening turns, ordinary transcript turns with their own expectations, run "
        "before the caller takes over (optional)."
    )
    own: dict[str, Any] = {
        "persona": {
            "type": "string",
            "minLength": 1,
            "description": "Who the caller is and how they behave (the caller model plays it).",
        },
        "goal": {
            "type": "string",
            "description": "What the caller wants from the call; the caller ends the call "
            "when it is reached, or gives up.",
        },
        "criteria": {
            "type": "array",
            "minItems": 1,
            "items": {"type": "string", "minLength": 1},
            "description": "What the agent must do over the whole conversation; each is "
            "judged on its own, with its reason, and a run passes only when every one passes.",
        },
        "max_turns": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TURNS_LIMIT,
            "description": f"The most user turns, scripted and simulated (default "
            f"{DEFAULT_MAX_TURNS}); reaching it ends the call, and the reports say so.",
        },
        "min_turns": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TURNS_LIMIT,
            "description": f"The caller may end the call only after this many user turns "
            f"(default {DEFAULT_MIN_TURNS}).",
        },
        "every_turn": {
            "$ref": "#/$defs/expect",
            "description": "Expectations checked on every simulated turn.",
        },
        "caller": {"$ref": "#/$defs/caller"},
        "judge": {"$ref": "#/$defs/criteria_judge"},
    }
    properties = {"id": transcript.pop("id"), "description": transcript.pop("description")}
    properties |= own
    properties |= transcript
    properties["turns"] = turns
    defs = dict(base["$defs"])
    defs.pop("far_end", None)
    defs["caller"] = {
        "type": "object",
        "additionalProperties": False,
        "description": "The simulated caller's model and sampling.",
        "properties": {
            "model": {
                **_MODEL_ID,
                "description": "The caller's pydantic-ai model id. Default: the "
                "llm_eval_caller_model fixture, then caller_model, then model in "
                "[tool.agent_eval].",
            },
            "temperature": {
                "type": ["number", "null"],
                "minimum": 0,
                "maximum": 2,
                "description": "Sampling temperature (default 0.7: each run a different "
                "caller; the caller cache replays each run exactly); null: the provider's.",
            },
            "seed": {
                "type": "integer",
                "minimum": 0,
                "description": "With the run's index, the seed of each run's caller (sent to "
                "providers that take one, and part of the caller cache's key). Default 0.",
            },
            "max_words": {
                "type": "integer",
                "minimum": 1,
                "maximum": 2000,
                "description": "A caller utterance longer than this is a runaway: the caller "
                "failed (the run is an ERROR, after retries). Default 80.",
            },
            "hears": {
                "enum": ["text", "audio"],
                "description": "text (default): the caller reads what the agent said; audio "
                "(voice agents): it hears the agent's reply audio through the offline Whisper, "
                "as a caller on a phone would; the adapter must save reply audio "
                "(audio_out_dir).",
            },
        },
    }
    defs["criteria_judge"] = {
        "type": "object",
        "additionalProperties": False,
        "description": "The judge of the criteria.",
        "properties": {
            "model": {
                **_MODEL_ID,
                "description": "The criteria judge's pydantic-ai model id. Default: as for "
                "every judge (llm_eval_judge_model fixture, judge_model, model).",
            }
        },
    }
    return {
        "$schema": base["$schema"],
        "$id": SCHEMA_ID,
        "title": "pytest-agent-eval simulation",
        "description": "A simulated caller with a persona and a goal talks to the agent, turn "
        "by turn, until it ends the call or max_turns is reached; a judge then scores each "
        "criterion on the whole conversation. Run N times; the test passes when the fraction "
        "of passing runs reaches the threshold.",
        "type": "object",
        "additionalProperties": False,
        "required": ["id", "persona", "criteria"],
        "properties": properties,
        "$defs": defs,
    }


def render_simulation_schema() -> str:
    """The simulation schema as the shipped files hold it."""
    return json.dumps(build_simulation_schema(), indent=2, ensure_ascii=False) + "\n"


def simulation_reference_page() -> str:
    """docs/simulation-reference.md: every field of a simulation file, from its schema."""
    return schema_reference(
        build_simulation_schema(),
        title="Simulation YAML reference",
        source="the simulation JSON Schema",
        what="a simulation file",
        top="Simulation (top level) {#simulation}",
        top_level_keys=frozenset(key.name for key in transcript_keys()),
        see_also="The transcript fields (`turns`, `voice`, `conditions`, `variants`, `greeting`, "
        "...) mean what they mean in a transcript ([transcripts.md](transcripts.md)); "
        "[simulations.md](simulations.md) explains the simulation's own.",
    )
