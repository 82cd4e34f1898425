"""Audio conditions: what a turn's audio goes through before the agent hears it.

A transcript (``conditions:``), a turn (``conditions:``) and each of its variants
(``variants:``) list conditions; they are applied at run time to the clean fixture, never to
the file on disk, deterministically from a seed (`apply` in
`pytest_agent_eval.voice._degrade` does the audio work). This module is the data
side, light enough for every part of the package: the catalog of kinds and their parameters
(`CONDITION_KINDS`), the built-in presets (`BUILTIN_PRESETS`, extended by
``[tool.agent_eval.conditions]``), reading a YAML or TOML value into `AudioCondition` s
(`parse_conditions`), the JSON Schema of such a value, and the per-turn chain and seed.

A list of conditions is applied in order. A turn's chain is the turn's own conditions (how
this user speaks: a pause before speaking, a fast talker), then the transcript's, then the
variant's (the room, the line), so noise added by a variant also fills a silence a turn asked
for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from ._text import did_you_mean
from .errors import AgentEvalError
from .models import AudioCondition, Transcript
from .models._far_end import far_end_pieces

__all__ = [
    "BUILTIN_PRESETS",
    "CONDITION_KINDS",
    "VARIANT_NAME_PATTERN",
    "ConditionKind",
    "ConditionProblem",
    "Param",
    "condition_problems",
    "condition_schema",
    "condition_seed",
    "parse_conditions",
    "parse_presets",
    "resolve_condition",
    "seed_of",
    "streamed_conditions",
    "turn_conditions",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Param:
    """One parameter of a condition kind."""

    name: str
    type: str
    """``number``, ``integer`` or ``choice``."""
    description: str
    default: Any = None
    """The value when the parameter is left out; None with ``required``."""
    required: bool = False
    minimum: float | None = None
    maximum: float | None = None
    exclusive_minimum: float | None = None
    choices: tuple[str, ...] = ()

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of the value."""
        out: dict[str, Any]
        if self.type == "choice":
            out = {"enum": list(self.choices)}
        else:
            out = {"type": self.type}
            if self.minimum is not None:
                out["minimum"] = self.minimum
            if self.maximum is not None:
                out["maximum"] = self.maximum
            if self.exclusive_minimum is not None:
                out["exclusiveMinimum"] = self.exclusive_minimum
        default = "" if self.required else f" Default: {self.default}."
        return {**out, "description": self.description + default}

    def problem(self, value: Any) -> str | None:
        """What is wrong with ``value``, or None."""
        if self.type == "choice":
            if value not in self.choices:
                return (
                    f"{value!r} is not one of {', '.join(self.choices)}"
                    f"{did_you_mean(str(value), self.choices)}"
                )
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"must be a number, got {type(value).__name__} {value!r}"
        if self.type == "integer" and not float(value).is_integer():
            return f"must be a whole number, got {value!r}"
        if self.minimum is not None and value < self.minimum:
            return f"must be at least {self.minimum:g}, got {value!r}"
        if self.maximum is not None and value > self.maximum:
            return f"must be at most {self.maximum:g}, got {value!r}"
        if self.exclusive_minimum is not None and value <= self.exclusive_minimum:
            return f"must be above {self.exclusive_minimum:g}, got {value!r}"
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class ConditionKind:
    """A kind of condition and its parameters."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    @property
    def required(self) -> tuple[str, ...]:
        """Names of the parameters without a default."""
        return tuple(p.name for p in self.params if p.required)


def _kinds(*kinds: ConditionKind) -> dict[str, ConditionKind]:
    return {k.name: k for k in kinds}


CONDITION_KINDS: dict[str, ConditionKind] = _kinds(
    ConditionKind(
        name="noise",
        description="Additive noise at a signal-to-noise ratio measured against the speech "
        "(voiced frames), over the whole clip. white and pink are generated; babble mixes "
        "other fixtures of the suite (the WAVs next to this one), or the clip itself played "
        "backwards when it has no neighbours.",
        params=(
            Param(
                name="snr_db",
                type="number",
                minimum=-20,
                maximum=60,
                default=20,
                description="Speech-to-noise ratio in dB: lower is noisier.",
            ),
            Param(
                name="color",
                type="choice",
                choices=("white", "pink", "babble"),
                default="white",
                description="The noise: white, pink (1/f), or babble (other speakers).",
            ),
            Param(
                name="talkers",
                type="integer",
                minimum=1,
                maximum=16,
                default=4,
                description="Babble only: how many other voices are mixed.",
            ),
        ),
    ),
    ConditionKind(
        name="gain",
        description="A level change in dB (louder or quieter speaker), clipped at full scale.",
        params=(
            Param(
                name="db",
                type="number",
                minimum=-60,
                maximum=40,
                required=True,
                description="Gain in dB; negative is quieter.",
            ),
        ),
    ),
    ConditionKind(
        name="tempo",
        description="Faster or slower speech at the same pitch (a fast or slow talker).",
        params=(
            Param(
                name="factor",
                type="number",
                minimum=0.5,
                maximum=2.0,
                required=True,
                description="Speed factor: 1.25 is 25% faster (shorter), 0.8 slower.",
            ),
        ),
    ),
    ConditionKind(
        name="telephone",
        description="A narrowband phone line: the voice band only, 8 kHz, G.711 mu-law "
        "(then back to the clip's rate).",
        params=(
            Param(
                name="low_hz",
                type="number",
                minimum=0,
                maximum=1000,
                default=300,
                description="Low edge of the band in Hz.",
            ),
            Param(
                name="high_hz",
                type="number",
                minimum=1000,
                maximum=3900,
                default=3400,
                description="High edge of the band in Hz.",
            ),
            Param(
                name="codec",
                type="choice",
                choices=("mulaw", "none"),
                default="mulaw",
                description="mulaw (G.711) or none (band and rate only).",
            ),
        ),
    ),
    ConditionKind(
        name="codec",
        description="Lossy compression and back: mp3, or gsm (GSM 06.10 full rate, which "
        "also narrows the audio to 8 kHz).",
        params=(
            Param(
                name="format",
                type="choice",
                choices=("mp3", "gsm"),
                default="mp3",
                description="The codec.",
            ),
            Param(
                name="quality",
                type="number",
                minimum=0,
                maximum=9.9,
                default=6,
                description="mp3 only: variable-bitrate quality, 0 best to 9.9 worst.",
            ),
        ),
    ),
    ConditionKind(
        name="clipping",
        description="Hard clipping (an overdriven microphone): everything louder than a level "
        "under the clip's own peak is cut off, so it clips whatever the fixture's level.",
        params=(
            Param(
                name="threshold_db",
                type="number",
                minimum=-40,
                maximum=0,
                default=-6,
                description="The clipping level, in dB under the clip's peak.",
            ),
        ),
    ),
    ConditionKind(
        name="reverb",
        description="Room reverberation (a speakerphone, a hall).",
        params=(
            Param(
                name="room_size",
                type="number",
                minimum=0,
                maximum=1,
                default=0.5,
                description="Room size, 0 to 1.",
            ),
            Param(
                name="wet",
                type="number",
                minimum=0,
                maximum=1,
                default=0.3,
                description="Level of the reverberated sound, 0 to 1.",
            ),
            Param(
                name="damping",
                type="number",
                minimum=0,
                maximum=1,
                default=0.5,
                description="High-frequency damping, 0 to 1.",
            ),
        ),
    ),
    ConditionKind(
        name="silence",
        description="Silence added before and after the audio (a caller who waits before "
        "speaking).",
        params=(
            Param(
                name="lead_s",
                type="number",
                minimum=0,
                maximum=30,
                default=0,
                description="Seconds of silence before.",
            ),
            Param(
                name="trail_s",
                type="number",
                minimum=0,
                maximum=30,
                default=0,
                description="Seconds of silence after.",
            ),
        ),
    ),
    ConditionKind(
        name="dropouts",
        description="Packet loss: short packets of audio replaced by silence at random "
        "(seeded), as a lossy network with no concealment.",
        params=(
            Param(
                name="rate",
                type="number",
                minimum=0,
                maximum=0.9,
                default=0.05,
                description="Chance that each packet is lost.",
            ),
            Param(
                name="packet_ms",
                type="number",
                minimum=5,
                maximum=500,
                default=20,
                description="Packet length in milliseconds.",
            ),
        ),
    ),
)
"""Every kind of audio condition, by name."""


def _c(kind: str, **params: Any) -> AudioCondition:
    return resolve_condition(AudioCondition(kind, dict(params)))


def _builtin_presets() -> dict[str, list[AudioCondition]]:
    return {
        "clean": [],
        "quiet": [_c("noise", color="pink", snr_db=20)],
        "noisy": [_c("noise", color="pink", snr_db=10)],
        "cafe": [
            _c("reverb", room_size=0.4, wet=0.2),
            _c("noise", color="babble", snr_db=10, talkers=4),
        ],
        "phone": [_c("telephone")],
        "mobile": [_c("codec", format="gsm"), _c("dropouts", rate=0.03, packet_ms=20)],
        "far_field": [_c("reverb", room_size=0.8, wet=0.5, damping=0.3)],
        "fast": [_c("tempo", factor=1.25)],
    }


VARIANT_NAME_PATTERN = r"^[A-Za-z0-9_.+]+$"
"""A variant or preset name: letters, digits, ``_``, ``.`` and ``+`` (it becomes part of a test
id, where ``-`` joins parts)."""

_NAME = re.compile(VARIANT_NAME_PATTERN)


def resolve_condition(condition: AudioCondition) -> AudioCondition:
    """``condition`` with every parameter given (defaults filled in) and checked.

    Raises:
        ValueError: Unknown kind or parameter, a missing required one, or a bad value.
    """
    kind = CONDITION_KINDS.get(condition.kind)
    if kind is None:
        raise ValueError(
            f"unknown audio condition {condition.kind!r}"
            f"{did_you_mean(condition.kind, CONDITION_KINDS)}; known: " + ", ".join(CONDITION_KINDS)
        )
    known = {p.name: p for p in kind.params}
    for name in condition.params:
        if name not in known:
            raise ValueError(
                f"{kind.name}: unknown parameter {name!r}{did_you_mean(name, known)}; it takes "
                + ", ".join(known)
            )
    params: dict[str, Any] = {}
    for param in kind.params:
        if param.name in condition.params:
            value = condition.params[param.name]
            problem = param.problem(value)
            if problem is not None:
                raise ValueError(f"{kind.name}.{param.name} {problem}")
            params[param.name] = int(value) if param.type == "integer" else value
        elif param.required:
            raise ValueError(f"{kind.name} needs {param.name!r} ({param.description})")
        else:
            params[param.name] = param.default
    return AudioCondition(kind.name, params)


class ConditionProblem(AgentEvalError, ValueError):
    """A problem in a conditions value: where inside it (``(1, "noise")``), and what."""

    def __init__(self, path: tuple[str | int, ...], message: str) -> None:
        super().__init__(message)
        self.path = path
        self.message = message


def parse_conditions(
    value: Any, presets: Mapping[str, Sequence[AudioCondition]] | None = None
) -> list[AudioCondition]:
    """A YAML or TOML conditions value as resolved `AudioCondition` s, in order.

    The value is a list; each entry is a kind with its parameters (``{noise: {snr_db: 10}}``),
    a kind that needs none (``telephone``), or the name of a preset, whose conditions take its
    place. A single entry may stand alone, without the list.

    Raises:
        ConditionProblem: Naming the entry and what is wrong, with the fix.
    """
    known = dict(_builtin_presets() if presets is None else presets)
    entries = value if isinstance(value, list) else [value]
    out: list[AudioCondition] = []
    for index, entry in enumerate(entries):
        out.extend(_parse_entry(entry, index, known))
    return out


def _parse_entry(
    entry: Any, index: int, presets: Mapping[str, Sequence[AudioCondition]]
) -> list[AudioCondition]:
    if isinstance(entry, str):
        if entry in presets:
            return list(presets[entry])
        if entry in CONDITION_KINDS:
            try:
                return [resolve_condition(AudioCondition(entry))]
            except ValueError as exc:
                raise ConditionProblem(
                    (index,), f"{exc}; write it as {{{entry}: {{...}}}}"
                ) from None
        names = [*presets, *CONDITION_KINDS]
        raise ConditionProblem(
            (index,),
            f"{entry!r} is neither a condition nor a preset{did_you_mean(entry, names)}. "
            f"Conditions: {', '.join(CONDITION_KINDS)}; presets: {', '.join(presets)} "
            "(add your own in [tool.agent_eval.conditions])",
        )
    if isinstance(entry, Mapping) and len(entry) == 1:
        ((kind, params),) = entry.items()
        if params is None:
            params = {}
        if not isinstance(params, Mapping):
            raise ConditionProblem(
                (index, str(kind)),
                f"the parameters of {kind!r} must be a mapping (e.g. {{snr_db: 10}}), got "
                f"{params!r}",
            )
        try:
            return [resolve_condition(AudioCondition(str(kind), dict(params)))]
        except ValueError as exc:
            raise ConditionProblem((index, str(kind)), str(exc)) from None
    raise ConditionProblem(
        (index,),
        "each condition is a name (telephone, or a preset such as cafe) or one kind with its "
        f"parameters ({{noise: {{snr_db: 10}}}}); got {entry!r}",
    )


def parse_presets(
    table: Mapping[str, Any], *, where: str, error: Callable[[str], Exception]
) -> dict[str, list[AudioCondition]]:
    """``[tool.agent_eval.conditions]``: the built-in presets plus the user's.

    Each preset is a list of conditions (as in YAML) or a table of kind -> parameters, applied
    in the order written. A preset may name presets defined before it or built in.

    Raises:
        The exception ``error`` makes, naming the preset and the fix.
    """
    presets = _builtin_presets()
    for name, value in table.items():
        at = f"{where}.{name}"
        if not _NAME.match(name):
            raise error(
                f"{at}: a preset name may hold letters, digits, '_', '.' and '+' only "
                "(it becomes part of test ids)"
            )
        if name == "clean":
            raise error(f"{at}: 'clean' is the built-in preset without conditions; pick a name")
        if name in CONDITION_KINDS:
            raise error(f"{at}: {name!r} is a condition kind; give the preset another name")
        entries: Any = value
        if isinstance(value, Mapping):
            entries = [{kind: params} for kind, params in value.items()]
        elif not isinstance(value, list):
            raise error(
                f"{at} must be a list of conditions or a table of kind = {{parameters}}, got "
                f"{type(value).__name__} {value!r}"
            )
        try:
            presets[name] = parse_conditions(entries, {k: v for k, v in presets.items()})
        except ConditionProblem as exc:
            raise error(f"{at}: {exc}") from None
    return presets


def condition_schema() -> dict[str, Any]:
    """JSON Schema of a conditions value (``#/$defs/conditions``)."""
    kinds: dict[str, Any] = {}
    for kind in CONDITION_KINDS.values():
        kinds[kind.name] = {
            "type": ["object", "null"],
            "additionalProperties": False,
            "description": kind.description,
            "properties": {p.name: p.schema() for p in kind.params},
        }
        if kind.required:
            kinds[kind.name]["required"] = list(kind.required)
    entry = {
        "anyOf": [
            {
                "type": "string",
                "minLength": 1,
                "description": "A condition that needs no parameters (telephone) or a preset "
                "(clean, quiet, noisy, cafe, phone, mobile, far_field, fast, or one of "
                "[tool.agent_eval.conditions]).",
            },
            {
                "type": "object",
                "minProperties": 1,
                "maxProperties": 1,
                "additionalProperties": False,
                "properties": kinds,
            },
        ]
    }
    return {
        "anyOf": [{"type": "array", "items": entry}, entry],
        "description": "Audio conditions applied to the clean fixture at run time, in order "
        "(see docs/voice-robustness.md).",
    }


def turn_conditions(transcript: Transcript, index: int) -> list[AudioCondition]:
    """The conditions turn ``index`` streams under: its own, then the transcript's (which, in
    an expanded variant, end with the variant's)."""
    return [*transcript.turns[index].conditions, *transcript.conditions]


def streamed_conditions(transcript: Transcript, index: int) -> tuple[AudioCondition, ...]:
    """The conditions turn ``index``'s audio streams under (`turn_conditions`), or none for a
    text turn, which has no audio to change: what the runner hands the adapter on the turn's
    `TurnInput` and, for every turn at once, on `ConversationInfo.turn_conditions`."""
    turn = transcript.turns[index]
    if turn.audio is None and not far_end_pieces(transcript.far_end, index, turn.user):
        return ()  # (a far end's turn heard as audio is streamed: a phone line changes it)
    return tuple(turn_conditions(transcript, index))


def condition_seed(transcript: Transcript, turn_index: int, run_index: int) -> int:
    """The seed of one turn's conditions in one run: from the transcript's ``seed``, its
    variant, the turn and the run, so each run hears its own draw of the noise and the same
    run always hears the same one."""
    return seed_of(f"{transcript.seed}/{transcript.variant or ''}/{turn_index}/{run_index}")


def seed_of(key: str) -> int:
    """A seed for audio conditions (0 to 2**63 - 1) named by ``key``: the same key, the same
    draw, on every machine."""
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big") >> 1


BUILTIN_PRESETS: Mapping[str, tuple[AudioCondition, ...]] = MappingProxyType(
    {name: tuple(chain) for name, chain in _builtin_presets().items()}
)
"""The presets every project has: ``clean`` (none), ``quiet`` and ``noisy`` (pink noise at 20
and 10 dB), ``cafe`` (a small room and babble at 10 dB), ``phone`` (a narrowband line with
mu-law), ``mobile`` (GSM and 3% packet loss), ``far_field`` (a large room) and ``fast``
(1.25x tempo)."""


def condition_problems(transcript: Transcript) -> list[tuple[int | None, str]]:
    """Audio conditions that could only pass for the wrong reason: on a turn without audio, or
    on a transcript (or variant) with no audio turn at all. As (turn index or None, problem)."""
    out: list[tuple[int | None, str]] = []
    for index, turn in enumerate(transcript.turns):
        if turn.conditions and turn.audio is None:
            out.append(
                (
                    index,
                    "audio conditions need 'audio:' on the turn (a text turn has no audio "
                    "to change)",
                )
            )
    degraded = bool(transcript.conditions) or any(v.conditions for v in transcript.variants)
    heard = transcript.far_end is not None and transcript.far_end.played_as == "audio"
    if degraded and not transcript.has_audio and not heard:
        out.append(
            (
                None,
                "audio conditions and variants need at least one turn with 'audio:' (without "
                "audio every variant would run exactly the same)",
            )
        )
    return out
