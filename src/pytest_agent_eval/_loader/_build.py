"""The models built from data the schema accepted: turns, expectations, audio conditions read
against the presets, audio kept inside the project, then every problem of the built
transcript (`transcript_problems`) raised with file and line."""

from __future__ import annotations

import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from .._conditions import (
    ConditionProblem,
    parse_conditions,
)
from .._expectations import expect_keys, transcript_keys, turn_keys
from .._problems import TranscriptProblem, transcript_problems
from .._serialize import from_json
from ..errors import TranscriptError
from ..models import AudioCondition, DtmfInput, Expect, Transcript, Turn, Variant, VoiceSettings
from ..models._far_end import FarEnd, far_end_wav, spoken_lines
from ._messages import validate_schema
from ._yaml import FieldPath, LineIndex, field_where, format_path

__all__ = [
    "Presets",
    "checked_build",
    "iter_audio_paths",
    "load_one",
]

Presets = Mapping[str, Sequence[AudioCondition]]
"""Named lists of audio conditions (``[tool.agent_eval.conditions]`` and the built-in ones)."""


def load_one(
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
    default_threshold: float,
    default_runs: int,
    presets: Presets | None,
    roots: Sequence[Path],
) -> Transcript:
    validate_schema(data, path, lines)
    return checked_build(data, path, lines, default_threshold, default_runs, presets, roots)


def checked_build(
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
    default_threshold: float,
    default_runs: int,
    presets: Presets | None,
    roots: Sequence[Path],
    *,
    audio_to_come: bool = False,
) -> Transcript:
    """The `Transcript` of data the schema already accepted, then every check beyond the
    schema (`transcript_problems`: regexes, pause markers, conditions, interruptions), the
    first problem raised with file, line and field; audio inside the project is checked as
    the turns are built. ``audio_to_come``: turns with audio will be added as it runs (a
    simulated caller speaks), so conditions need no written audio turn."""
    audio = _AudioConditions.read(data, path, lines, presets)
    transcript = _build(data, path, lines, default_threshold, default_runs, audio, roots)
    problems = [*_as_written(data), *transcript_problems(transcript, audio_to_come=audio_to_come)]
    for found in problems:
        raise found.in_yaml(field_where(path, lines, found.at, data), format_path(found.at))
    return transcript


def _as_written(data: Mapping[str, Any]) -> Iterator[TranscriptProblem]:
    """What is wrong in how the YAML is written, which the built transcript no longer shows
    (its defaults filled in)."""
    phone = data.get("phone")
    phone = phone if isinstance(phone, Mapping) else {}
    if phone.get("direction") == "outbound" and "caller_number" in phone:
        yield TranscriptProblem(
            ("phone", "caller_number"),
            "means nothing on an outbound call: the agent dials the number its "
            "create_sip_participant request gives in sip_call_to, and nobody calls it; "
            "leave caller_number out (trunk_number is still the number the call comes from)",
        )


@dataclass
class _AudioConditions:
    """The audio conditions of a transcript, read and resolved against the presets."""

    transcript: list[AudioCondition]
    turns: list[list[AudioCondition]]
    variants: list[Variant]

    @classmethod
    def read(
        cls, data: dict[str, Any], path: Path, lines: LineIndex, presets: Presets | None
    ) -> _AudioConditions:
        def parse(value: Any, at: FieldPath) -> list[AudioCondition]:
            try:
                return parse_conditions(value, presets)
            except ConditionProblem as exc:
                inner = exc.path if isinstance(value, list) else exc.path[1:]
                field = (*at, *inner)
                raise TranscriptError(
                    f"{field_where(path, lines, field, data)}, {format_path(field)}: {exc}"
                ) from None

        transcript = parse(data["conditions"], ("conditions",)) if "conditions" in data else []
        turns = [
            parse(turn["conditions"], ("turns", i, "conditions")) if "conditions" in turn else []
            for i, turn in enumerate(data.get("turns", []))
        ]
        variants: list[Variant] = []
        seen: dict[str, int] = {}
        for i, raw in enumerate(data.get("variants", [])):
            at: FieldPath = ("variants", i)
            if isinstance(raw, str):
                name, threshold = raw, None
                conditions = parse(raw, at)
            else:
                name, threshold = raw["name"], raw.get("threshold")
                conditions = (
                    parse(raw["conditions"], (*at, "conditions")) if "conditions" in raw else []
                )
            if name in seen:
                raise TranscriptError(
                    f"{field_where(path, lines, at, data)}, {format_path(at)}: variant {name!r} is "
                    f"listed twice (also variants[{seen[name]}]); variant names name the tests"
                )
            seen[name] = i
            variants.append(Variant(name=name, conditions=conditions, threshold=threshold))
        return cls(transcript=transcript, turns=turns, variants=variants)


def _build(
    data: dict[str, Any],
    path: Path,
    lines: LineIndex,
    default_threshold: float,
    default_runs: int,
    audio: _AudioConditions,
    audio_roots: Sequence[Path],
) -> Transcript:
    base = path.parent
    raw_turns = data.get("turns", [])  # a far end that drives the call alone has none
    turns = [_build_turn(t, i, base, lines, audio.turns[i]) for i, t in enumerate(raw_turns)]
    for index, (turn, raw) in enumerate(zip(turns, raw_turns, strict=True)):
        turn.locations = _turn_locations(raw, index, lines, path.name)
    for index, turn in enumerate(turns):
        if turn.audio is not None:
            _check_audio_inside(Path(turn.audio), index, audio_roots, path, lines, data)
    return Transcript(
        id=data["id"],
        turns=turns,
        tags=list(data.get("tags", [])),
        description=data.get("description", ""),
        voice=_voice(data.get("voice")),
        path=path,
        line=lines.line(("id",)),
        threshold=float(data.get("threshold", default_threshold)),
        runs=int(data.get("runs", default_runs)),
        conditions=audio.transcript,
        variants=audio.variants,
        seed=int(data.get("seed", 0)),
        userdata=dict(data.get("userdata") or {}),
        **_key_values(Transcript, transcript_keys(), _long_far_end(data)),
        turn_timeout_s=data.get("turn_timeout_s"),
        locations={
            key.name: f"{path.name}:{lines.line((key.name,))}"
            for key in transcript_keys()
            if key.name in data
        },
    )


def _turn_locations(
    raw: Mapping[str, Any], index: int, lines: LineIndex, file_name: str
) -> dict[str, str]:
    """``file:line`` of each check key of one turn (`Turn.locations`): every ``expect:`` key,
    each entry of a list of entries (``expect.tool_calls_args[1]``), and the turn-level keys."""
    at: FieldPath = ("turns", index)
    found: dict[str, int | None] = {}
    for name, value in (raw.get("expect") or {}).items():
        found[f"expect.{name}"] = lines.line((*at, "expect", name))
        if isinstance(value, list) and any(isinstance(v, dict) for v in value):
            for j in range(len(value)):
                found[f"expect.{name}[{j}]"] = lines.line((*at, "expect", name, j))
    for key in turn_keys():
        if key.name in raw:
            found[key.name] = lines.line((*at, key.name))
    return {key: f"{file_name}:{line}" for key, line in found.items() if line is not None}


def _key_values(
    owner: type, keys: Iterable[Any], raw: dict[str, Any], *, path: str = ""
) -> dict[str, Any]:
    """The expectation keys that live outside ``expect:`` (``greeting`` on a transcript,
    ``interrupt`` on a turn), typed as the ``owner`` dataclass's fields of the same name."""
    hints = _type_hints(owner)
    return {
        key.name: from_json(hints[key.name], raw[key.name], path=f"{path}{key.name}")
        for key in keys
        if key.name in raw
    }


@cache
def _type_hints(owner: type) -> dict[str, Any]:
    return typing.get_type_hints(owner)


def _build_turn(
    raw: dict[str, Any],
    index: int,
    base: Path,
    lines: LineIndex,
    conditions: list[AudioCondition],
) -> Turn:
    audio = raw.get("audio")
    resolved = None
    if audio is not None:
        # Joining onto an absolute path yields that path; folders are resolved, the file
        # itself is not, so a symlinked WAV keeps the name the transcript gave it.
        candidate = base / Path(audio).expanduser()
        resolved = candidate.parent.resolve() / candidate.name
    return Turn(
        user=raw.get("user", ""),  # none: a turn of keys alone (the schema asks for dtmf)
        audio=resolved,
        expect=_build_expect(raw.get("expect") or {}),
        voice=_voice(raw.get("voice")),
        line=lines.line(("turns", index)),
        conditions=conditions,
        # A turn's keys may be written as a string: ``dtmf: "4521#"`` is its digits.
        **_key_values(Turn, turn_keys(), _long_dtmf(raw), path=f"turns[{index}]."),
    )


def _long_far_end(raw: dict[str, Any]) -> dict[str, Any]:
    if "far_end" not in raw:
        return raw
    return {**raw, "far_end": FarEnd.coerce(raw["far_end"])}


def _long_dtmf(raw: dict[str, Any]) -> dict[str, Any]:
    if "dtmf" not in raw:
        return raw
    return {**raw, "dtmf": DtmfInput.coerce(raw["dtmf"])}


def _check_audio_inside(
    audio: Path,
    index: int,
    roots: Sequence[Path],
    path: Path,
    lines: LineIndex,
    data: Mapping[str, Any],
) -> None:
    """Refuse an ``audio:`` file outside the project: ``/proc/self/environ`` or
    ``../../etc/passwd`` would otherwise be read and, in the HTML report, embedded."""
    real = audio.resolve()  # symlinks too: a link inside the project may point anywhere
    allowed = [Path(root).resolve() for root in roots]
    if any(real == root or root in real.parents for root in allowed):
        return
    field: FieldPath = ("turns", index, "audio")
    shown = ", ".join(str(root) for root in allowed)
    written = data["turns"][index].get("audio", str(audio))
    raise TranscriptError(
        f"{field_where(path, lines, field, data)}, {format_path(field)}: {written!r} resolves "
        f"to {real}, outside the project ({shown}); audio fixtures must live inside the "
        "project folder, or in a folder listed in audio_roots under [tool.agent_eval]"
    )


def _build_expect(raw: dict[str, Any]) -> Expect:
    """The `Expect` of a turn from its YAML values, which `Expect` decodes into its typed
    fields itself (once: the same decoding a Python-built `Expect` gets)."""
    return Expect(**{key.name: raw[key.name] for key in expect_keys() if key.name in raw})


def _voice(raw: Mapping[str, Any] | None) -> VoiceSettings | None:
    return VoiceSettings(**raw) if raw else None


def iter_audio_paths(transcripts: Iterable[Transcript]) -> Iterator[Path]:
    """Every resolved audio fixture path referenced by ``transcripts``: the turns' ``audio:``
    and the spoken lines of a far end heard as audio."""
    for transcript in transcripts:
        for turn in transcript.turns:
            if turn.audio is not None:
                yield Path(turn.audio)
        far = transcript.far_end
        if far is not None and far.played_as == "audio":
            folder = transcript.path.parent if transcript.path is not None else Path()
            for part, _ in spoken_lines(far):
                yield folder / far_end_wav(transcript.base_id or transcript.id, part)
