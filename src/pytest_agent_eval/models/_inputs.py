"""Inputs: transcripts, turns, expectations and the voice and audio settings they carry."""

from __future__ import annotations

import os
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from .._serialize import from_json
from ._far_end import FarEnd
from ._keypad import DtmfInput, PhoneCall, TransferExpect

__all__ = [
    "MAX_RUNS",
    "MAX_TURN_TIMEOUT_S",
    "AudioCondition",
    "CallExpect",
    "Case",
    "DtmfInput",
    "Expect",
    "GreetingExpect",
    "InterruptConfig",
    "JudgeConfig",
    "PhoneCall",
    "ToolCallArgsConfig",
    "ToolCallOutcomeConfig",
    "ToolCalledConfig",
    "ToolOutcome",
    "Transcript",
    "Turn",
    "Variant",
    "VoiceSettings",
    "describe_conditions",
]

_PathLike: TypeAlias = str | os.PathLike[str]


MAX_RUNS = 10_000
"""Most runs of one transcript (``config.LIMITS`` holds the same numbers for the settings)."""
MAX_TURN_TIMEOUT_S = 3600.0
"""Longest per-turn timeout a transcript may ask for."""


# --------------------------------------------------------------------------------------------
# Inputs: transcripts, turns, expectations
# --------------------------------------------------------------------------------------------


@dataclass
class JudgeConfig:
    """An LLM-as-judge rubric: what a YAML ``judge:`` block becomes.

    In Python, ``Expect(judge="The reply confirms the time.")`` and
    ``Expect(judge={"rubric": ...})`` are converted to this, as the loader does.

    Args:
        rubric: Natural-language rubric sent to the judge model.
        model: pydantic-ai model id; falls back to ``judge_model`` then ``model`` from config.

    Raises:
        TranscriptError: For an empty rubric or a value of the wrong type.
    """

    rubric: str
    model: str | None = None

    def __post_init__(self) -> None:
        from ..errors import TranscriptError

        if not isinstance(self.rubric, str) or not self.rubric.strip():
            raise TranscriptError(
                f"judge: 'rubric' must be a non-empty string saying what a good reply does, "
                f"got {self.rubric!r}"
            )
        if self.model is not None and not isinstance(self.model, str):
            raise TranscriptError(
                f"judge: 'model' must be a pydantic-ai model id string or None, got {self.model!r}"
            )


@dataclass
class ToolCallArgsConfig:
    """One tool-argument assertion: what an entry of YAML ``tool_calls_args`` becomes.

    In Python, ``Expect(tool_calls_args=[{"tool": "book", "args": {"time": "7pm"}}])`` is
    converted to this, as the loader does; ``judge`` may be a rubric string or a mapping.

    Args:
        tool: Name of the tool whose arguments to check.
        args: Expected arguments for the deterministic check, or None.
        mode: "subset" or "exact" (deterministic check only).
        judge: Optional LLM-judge config for the arguments (a `JudgeConfig`, a rubric string
            or ``{"rubric": ..., "model": ...}``).

    Raises:
        ValueError: If neither args nor judge is provided, or a value has the wrong type
            (`TranscriptError`, a ValueError).
    """

    tool: str
    args: dict[str, Any] | None = None
    mode: str = "subset"
    judge: JudgeConfig | None = None

    def __post_init__(self) -> None:
        from ..errors import TranscriptError

        where = f"tool_calls_args entry for {self.tool!r}"
        if not isinstance(self.tool, str) or not self.tool:
            raise TranscriptError(
                f"tool_calls_args entry: 'tool' must be the tool's name, got {self.tool!r}"
            )
        if self.args is not None and not isinstance(self.args, Mapping):
            raise TranscriptError(
                f"{where}: 'args' must be a mapping of expected arguments, "
                f"got {type(self.args).__name__} {self.args!r}"
            )
        self.judge = _as_judge_config(self.judge, where)
        if self.args is None and self.judge is None:
            raise ValueError(
                f"tool_calls_args entry for {self.tool!r} needs 'args' (deterministic check) "
                "or 'judge' (LLM-judged rubric); got neither"
            )
        if self.mode not in ("subset", "exact"):
            raise ValueError(
                f"tool_calls_args entry for {self.tool!r}: mode must be 'subset' or 'exact', "
                f"got {self.mode!r}"
            )


ToolOutcome: TypeAlias = Literal["ok", "error", "pending", "cancelled", "refused"]
"""How a tool call ended, as far as the adapter saw: it returned (``ok``), it failed
(``error``), it was still running when the turn ended (``pending``), it was stopped before
it returned (``cancelled``: a barge-in's interruption cut the reply that ran it), or the
framework refused it before running anything (``refused``: the function was not offered at
that moment, or the agent has no such function)."""


@dataclass
class ToolCallOutcomeConfig:
    """One tool-outcome assertion in a YAML transcript turn (``tool_calls_outcome``).

    Some call to ``tool`` in the turn must satisfy every condition given.

    Args:
        tool: Name of the tool whose calls to check.
        status: ``"ok"`` (the call returned), ``"error"`` (it failed), ``"cancelled"`` (it
            was stopped before it returned, an interruption cut it) or ``"refused"`` (the
            framework refused it: not offered, or unknown), or None for any.
        output_contains: Strings that must all appear in what the call gave back (its output,
            and for a failed call its error text too), case-insensitive.
        output_matches: Regexes that must all match it (``re.search``, case-insensitive).

    Raises:
        ValueError: If no condition is given, or ``status`` is another word.
    """

    tool: str
    status: Literal["ok", "error", "cancelled", "refused"] | None = None
    output_contains: list[str] = field(default_factory=list)
    output_matches: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in (None, "ok", "error", "cancelled", "refused"):
            raise ValueError(
                f"tool_calls_outcome entry for {self.tool!r}: status must be 'ok' or 'error' "
                "(it returned or failed), 'cancelled' (an interruption stopped it) or "
                f"'refused' (the framework refused it), got {self.status!r}"
            )
        if self.status is None and not (self.output_contains or self.output_matches):
            raise ValueError(
                f"tool_calls_outcome entry for {self.tool!r} needs 'status', 'output_contains' "
                "or 'output_matches'; got none"
            )


@dataclass
class GreetingExpect:
    """Checks on what the agent says on its own before turn 1 (a transcript's ``greeting:``).

    The same text checks as a turn's reply, on the greeting's text (every utterance the agent
    started before the user's first turn, space-joined). All case-insensitive.

    Args:
        contains_any: At least one of these strings appears.
        contains_all: Every one of these strings appears.
        contains_none: None of these strings appears.
        matches_any: At least one of these regexes matches (``re.search``).
        matches_all: Every one of these regexes matches.
    """

    contains_any: list[str] = field(default_factory=list)
    contains_all: list[str] = field(default_factory=list)
    contains_none: list[str] = field(default_factory=list)
    matches_any: list[str] = field(default_factory=list)
    matches_all: list[str] = field(default_factory=list)


@dataclass
class ToolCalledConfig:
    """One entry of ``call_expect.tool_called``: a tool the agent called at some point of the
    call, with these arguments when ``args`` is given.

    Args:
        tool: The tool's name.
        args: Expected arguments (``mode`` says how they compare), or None: any call of
            ``tool`` passes.
        mode: ``"subset"`` (expected items must appear; nested mappings too) or ``"exact"``.
    """

    tool: str
    args: dict[str, Any] | None = None
    mode: str = "subset"

    def __post_init__(self) -> None:
        from ..errors import TranscriptError

        if not isinstance(self.tool, str) or not self.tool:
            raise TranscriptError(
                f"call_expect.tool_called entry: 'tool' must be the tool's name, got {self.tool!r}"
            )
        if self.args is not None and not isinstance(self.args, Mapping):
            raise TranscriptError(
                f"call_expect.tool_called entry for {self.tool!r}: 'args' must be a mapping of "
                f"expected arguments, got {type(self.args).__name__} {self.args!r}"
            )
        if self.mode not in ("subset", "exact"):
            raise TranscriptError(
                f"call_expect.tool_called entry for {self.tool!r}: mode must be 'subset' or "
                f"'exact', got {self.mode!r}"
            )


@dataclass
class CallExpect:
    """Checks over the whole call, once it is over (a transcript's or simulation's
    ``call_expect:``): what no single turn shows.

    Args:
        tool_called: Tools the agent called at some point of the call (any turn, or before
            turn 1), each with its arguments when given.
        hook: ``"module:function"``, a function of yours importable from the rootdir, called
            with the run (`RunResult`: every turn, tool call and reply, and what the adapter
            put in each turn's ``metadata``); it returns a bool, ``(passed, reason)`` or an
            `EvalResult`, and may be async.
    """

    tool_called: list[ToolCalledConfig] = field(default_factory=list)
    hook: str | None = None


@dataclass
class Expect:
    """Expectations for a single transcript turn.

    Args:
        evaluators: Programmatic evaluators (Python API).
        judge: YAML-defined judge config.
        tool_calls_include: Tool names that must appear in tool_calls.
        tool_calls_exclude: Tool names that must NOT appear in tool_calls.
        tool_calls_ordered: If True, tool_calls_include must appear in the given order.
        tool_calls_args: Assertions on the arguments of specific tool calls.
        reply_contains_any: Reply must contain at least one of these strings.
        reply_contains_all: Reply must contain all of these strings.
        reply_matches_any: Reply must match at least one of these regex patterns.
        reply_matches_all: Reply must match all of these regex patterns.
        heard_contains_any: Voice turns: what the agent's speech recognizer heard must contain
            at least one of these strings.
        heard_contains_all: Voice turns: what was heard must contain all of these strings.
        max_latency_ms: Voice turns: the time from the end of the user's speech to the first
            reply text must not exceed this many milliseconds.
        reply_contains_none: Reply must contain none of these strings (case-insensitive).
        tool_calls_outcome: How specific tool calls ended: returned or failed, and what they
            gave back.
        agent_is: Multi-agent adapters: the agent active at the end of the turn.
        handoff_to: Multi-agent adapters: a handoff to this agent happened in the turn.
        handoff_from: Multi-agent adapters: a handoff away from this agent happened in the turn
            (with ``handoff_to``: the same handoff went from this agent to that one).
        heard_wer_max: Voice turns: the word error rate of what the speech recognizer heard,
            against the words the user spoke, must not exceed this.
        dtmf_sent: Phone agents: the keys the agent sent on the line in this turn, in order
            (``""``: none); fails too when the reply claims a key press that was not sent.
        call_ended: Phone agents: the agent ended the call in this turn (True) or did not
            (False).
        transferred_to: Phone agents: the agent transferred the call in this turn, there
            (`TransferExpect`; a string is its ``to``).

    Each YAML key and its checks are defined in `pytest_agent_eval._expectations`.
    """

    evaluators: list[Any] = field(default_factory=list)
    judge: JudgeConfig | None = None
    tool_calls_include: list[str] = field(default_factory=list)
    tool_calls_exclude: list[str] = field(default_factory=list)
    tool_calls_ordered: bool = False
    tool_calls_args: list[ToolCallArgsConfig] = field(default_factory=list)
    reply_contains_any: list[str] = field(default_factory=list)
    reply_contains_all: list[str] = field(default_factory=list)
    reply_matches_any: list[str] = field(default_factory=list)
    reply_matches_all: list[str] = field(default_factory=list)
    heard_contains_any: list[str] = field(default_factory=list)
    heard_contains_all: list[str] = field(default_factory=list)
    max_latency_ms: float | None = None
    # New expectations append their fields here, after every existing one: Expect is positional.
    reply_contains_none: list[str] = field(default_factory=list)
    tool_calls_outcome: list[ToolCallOutcomeConfig] = field(default_factory=list)
    agent_is: str | None = None
    handoff_to: str | None = None
    handoff_from: str | None = None
    heard_wer_max: float | None = None
    dtmf_sent: str | None = None
    call_ended: bool | None = None
    transferred_to: TransferExpect | None = None

    def __post_init__(self) -> None:
        self.transferred_to = TransferExpect.coerce(self.transferred_to)
        # Values written the YAML way (a rubric string, dicts for tool_calls_args) become the
        # typed records, through the serializer the loader uses; a bad one is a TranscriptError
        # naming the field, never an AttributeError deep inside an evaluator.
        from ..errors import TranscriptError

        self.judge = _as_judge_config(self.judge, "Expect(judge=...)")
        if isinstance(self.tool_calls_args, Mapping | ToolCallArgsConfig):
            self.tool_calls_args = [self.tool_calls_args]  # type: ignore[list-item]
        if isinstance(self.tool_calls_args, list | tuple):
            # Still YAML-shaped here; the decoding below makes each entry a ToolCallArgsConfig.
            self.tool_calls_args = [
                {**entry, "judge": _as_judge_config(entry["judge"], "tool_calls_args judge")}  # type: ignore[misc]
                if isinstance(entry, Mapping) and entry.get("judge") is not None
                else entry
                for entry in self.tool_calls_args
            ]
        hints = _expect_hints()
        for f in fields(self):
            if f.name in ("evaluators", "judge"):
                continue
            value = getattr(self, f.name)
            if isinstance(value, str) and typing.get_origin(hints[f.name]) is list:
                raise TranscriptError(
                    f"Expect({f.name}=...): expected a list, got the string {value!r}; "
                    f"write {f.name}=[{value!r}]"
                )
            try:
                converted = from_json(hints[f.name], _yaml_shaped(value))
            except ValueError as exc:
                raise TranscriptError(f"Expect({f.name}=...): {exc}") from None
            setattr(self, f.name, converted)
        if not isinstance(self.evaluators, list | tuple):
            raise TranscriptError(
                "Expect(evaluators=...): expected a list of evaluators, "
                f"got {type(self.evaluators).__name__}"
            )


def _yaml_shaped(value: Any) -> Any:
    """Tuples as lists (the serializer reads JSON shapes); everything else as it is."""
    if isinstance(value, tuple):
        return [_yaml_shaped(v) for v in value]
    if isinstance(value, list):
        return [_yaml_shaped(v) for v in value]
    return value


def _as_judge_config(value: Any, where: str) -> JudgeConfig | None:
    """``value`` as a `JudgeConfig`: one already, a rubric string, or a ``{rubric, model}``
    mapping; None stays None."""
    from ..errors import TranscriptError

    if value is None or isinstance(value, JudgeConfig):
        return value
    if isinstance(value, str):
        return JudgeConfig(rubric=value)
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - {"rubric", "model"})
        if unknown:
            raise TranscriptError(
                f"{where}: unknown judge field {unknown[0]!r}; a judge takes 'rubric' and "
                "optionally 'model'"
            )
        if "rubric" not in value:
            raise TranscriptError(
                f"{where}: missing required field 'rubric'; a judge needs a `rubric:` saying "
                "what a good reply does"
            )
        return JudgeConfig(rubric=value["rubric"], model=value.get("model"))
    raise TranscriptError(
        f"{where}: a judge is a rubric string, {{'rubric': ...}} or JudgeConfig(...), "
        f"got {type(value).__name__} {value!r}"
    )


_EXPECT_HINTS: dict[str, Any] = {}


def _expect_hints() -> dict[str, Any]:
    if not _EXPECT_HINTS:
        import typing

        _EXPECT_HINTS.update(typing.get_type_hints(Expect))
    return _EXPECT_HINTS


@dataclass
class VoiceSettings:
    """How a turn's ``user`` text becomes speech; every field is optional and layered.

    Defined here rather than with the synthesizer because `Turn` and `Transcript` carry it and
    this module imports nothing further down the data flow (``synthesize/`` loads the planner and
    the audio code on import).

    Settings merge from ``[tool.agent_eval.voice]``, then the transcript's ``voice:`` block,
    then the turn's ``voice:`` block; a field left ``None`` inherits from the layer below.

    Args:
        backend: TTS backend name (``"hibari"`` is the offline default, ``"openai"`` a cloud one).
        voice: Voice name within the backend.
        model: Model name within the backend, where it has several.
        speed: Speaking rate, 1.0 is normal.
        sample_rate: Output WAV sample rate in Hz.
        seed: Seed for backends with a random component.
        language: Language or accent code, for backends that take one.
    """

    backend: str | None = None
    voice: str | None = None
    model: str | None = None
    speed: float | None = None
    sample_rate: int | None = None
    seed: int | None = None
    language: str | None = None

    def merged_over(self, base: VoiceSettings | None) -> VoiceSettings:
        """Return these settings with unset fields taken from ``base``."""
        if base is None:
            return VoiceSettings(**self.to_dict())
        merged = base.to_dict()
        merged.update({k: v for k, v in self.to_dict().items() if v is not None})
        return VoiceSettings(**merged)

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (None included)."""
        return {
            "backend": self.backend,
            "voice": self.voice,
            "model": self.model,
            "speed": self.speed,
            "sample_rate": self.sample_rate,
            "seed": self.seed,
            "language": self.language,
        }


@dataclass(frozen=True)
class AudioCondition:
    """One thing that happens to a turn's audio before the agent hears it (noise, a phone line).

    Applied at run time to the clean fixture, never to the file on disk; the kinds and their
    parameters are listed in `pytest_agent_eval._conditions` (``CONDITION_KINDS``), and the
    audio work is `pytest_agent_eval.voice._degrade.apply`.

    Args:
        kind: ``noise``, ``gain``, ``tempo``, ``telephone``, ``codec``, ``clipping``,
            ``reverb``, ``silence`` or ``dropouts``.
        params: Its parameters (the loader fills in the defaults).
    """

    kind: str
    params: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """``noise(color=pink, snr_db=10)``: the kind and its parameters, for reports."""
        args = ", ".join(f"{k}={_plain(v)}" for k, v in self.params.items())
        return f"{self.kind}({args})"


def _plain(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def describe_conditions(conditions: Iterable[AudioCondition]) -> str:
    """The conditions of a chain, in order, comma-separated ("" for none)."""
    return ", ".join(c.describe() for c in conditions)


@dataclass
class Case:
    """One row of a transcript's dataset (``cases:``): the transcript's turns with the row's
    fields filled in, run as its own test, ``booking[ID]``.

    Args:
        id: The readable id (the row's ``id`` field, else ``case1``, ``case2``...).
        fields: The row, field name -> value.
        turns: The transcript's turns with ``{field}`` replaced by the row's values.
        source: Where the row came from (``cases.csv:3``, ``cases[1]``), for messages.
    """

    id: str
    fields: dict[str, Any]
    turns: list[Turn]
    source: str = ""


@dataclass
class Variant:
    """One audio variant of a transcript: the same conversation, its own test, its own audio.

    Args:
        name: The readable id suffix (``phone`` makes the test ``booking[phone]``).
        conditions: Applied to every audio turn of the variant, after the turn's own and the
            transcript's (see `pytest_agent_eval._conditions`).
        threshold: The variant's own pass threshold, or None for the transcript's.
    """

    name: str
    conditions: list[AudioCondition] = field(default_factory=list)
    threshold: float | None = None


@dataclass
class InterruptConfig:
    """A turn that speaks over the agent's reply to the turn before (barge-in).

    The turn's own ``audio`` is the interrupting utterance; it starts ``after_ms`` into the
    previous reply's audio, or at its ``at_word``-th word (exactly one of the two), and the
    agent must stop speaking within ``stop_within_ms`` of the start of that speech. The turn's
    ``expect`` checks what the agent does next.

    Args:
        stop_within_ms: Most milliseconds from the start of the interrupting speech to the
            agent's audio stopping. It includes the session's minimum interruption duration.
        after_ms: Start the interruption this long after the previous reply started playing.
        at_word: Start it at this word (1-based) of the previous reply, as timed by spreading
            the reply's words evenly over its speech audio.
    """

    stop_within_ms: float
    after_ms: float | None = None
    at_word: int | None = None

    def __post_init__(self) -> None:
        if (self.after_ms is None) == (self.at_word is None):
            raise ValueError("interrupt needs exactly one of after_ms and at_word")


@dataclass
class Turn:
    """A single turn in a transcript.

    Args:
        user: The user message (also used as the transcript when ``audio`` is set); empty
            in a turn of keys alone (``dtmf:`` and no words), whose reply answers the keys.
        audio: Optional path to a WAV file for voice adapters. Resolved relative to
            the YAML file's directory when loaded from YAML.
        expect: Expectations for the agent's reply.
        voice: Per-turn voice settings for fixture synthesis, overriding the transcript's.
        line: Line of the turn in its YAML file, when loaded from YAML.
        conditions: Audio conditions of this turn, applied before the transcript's and the
            variant's (see `pytest_agent_eval._conditions`).
        interrupt: This turn speaks over the agent's reply to the turn before (barge-in).
        locations: Where each key of the turn is written, when loaded from YAML:
            ``{"expect.reply_contains_all": "weather.yaml:11", "expect.tool_calls_args[0]":
            "weather.yaml:13"}``; a failed check names its line from it. Empty for a turn built
            in Python, whose checks are named by their key alone.
        dtmf: Keys the caller presses in this turn, before or after its speech (`DtmfInput`;
            a string is its ``digits``).
    """

    user: str
    audio: _PathLike | None = None
    expect: Expect = field(default_factory=Expect)
    voice: VoiceSettings | None = None
    line: int | None = None
    conditions: list[AudioCondition] = field(default_factory=list)
    interrupt: InterruptConfig | None = None
    locations: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    dtmf: DtmfInput | None = None

    def __post_init__(self) -> None:
        if isinstance(self.dtmf, str):
            self.dtmf = DtmfInput(self.dtmf)


@dataclass
class Transcript:
    """A multi-turn evaluation transcript.

    Args:
        id: Unique identifier used as the pytest test name.
        turns: Ordered list of turns.
        threshold: Fraction of runs that must pass (0.0-1.0).
        runs: Number of times to execute this transcript.
        tags: Optional quality-gate tags (e.g. ["gate:booking"]).
        description: Free text shown in reports.
        voice: Transcript-wide voice settings for fixture synthesis.
        path: The YAML file it was loaded from, if any.
        line: Line of the ``id`` key in that file, if known.
        greeting: Checks on what the agent says on its own before turn 1, or None. An adapter
            that cannot observe a greeting fails such a run with an errored verdict.
        conditions: Audio conditions for every audio turn, after each turn's own (see
            `pytest_agent_eval._conditions`).
        variants: The audio variants the transcript runs under, each its own test (see
            `pytest_agent_eval.expand`); empty: one test.
        seed: Seed of the random parts of the audio conditions (noise, dropouts).
        variant: The variant this transcript is (set by expansion), or None.
        base_id: The id before expansion (``booking`` for ``booking[phone]``), or None when
            this transcript was not expanded.
        id_suffixes: The readable parts expansion added to the id, in order (``["phone"]``).
        latency_p95_ms_max: Most milliseconds the 95th percentile of voice-turn latency over
            all runs may reach (checked on the whole result), or None.
        turn_timeout_s: Seconds one agent turn may take; None uses ``turn_timeout_s`` from
            the marker or ``[tool.agent_eval]`` (300 by default).
        cases: The dataset this transcript is a template for, each case its own test (see
            `pytest_agent_eval.expand`); empty: no dataset.
        case: The id of the case this transcript is (set by expansion), or None.
        userdata: Data for the agent under test, handed to the session factory with the run's
            information (``info.transcript.userdata``), so an agent can seed its fakes per
            transcript or simulation (a LiveKit scenario's ``userdata``).
        locations: Where each top-level check key is written (``{"greeting": "a.yaml:3"}``),
            when loaded from YAML; see `Turn.locations`.
        call_expect: Checks over the whole call, once it is over, or None (see `CallExpect`).
        phone: The phone call this conversation is (its ``phone:``: the caller's number and
            the number dialled), or None (see `PhoneCall`).
        far_end: Who answers an outbound agent's call (its ``far_end:``), which then drives
            the conversation, or None (see `FarEnd`).
    """

    id: str
    turns: list[Turn]
    threshold: float = 0.8
    runs: int = 1
    tags: list[str] = field(default_factory=list)
    description: str = ""
    voice: VoiceSettings | None = None
    path: Path | None = None
    line: int | None = None
    greeting: GreetingExpect | None = None
    conditions: list[AudioCondition] = field(default_factory=list)
    variants: list[Variant] = field(default_factory=list)
    seed: int = 0
    variant: str | None = None
    base_id: str | None = None
    id_suffixes: list[str] = field(default_factory=list)
    latency_p95_ms_max: float | None = None
    turn_timeout_s: float | None = None
    cases: list[Case] = field(default_factory=list)
    case: str | None = None
    userdata: dict[str, Any] = field(default_factory=dict)
    locations: dict[str, str] = field(default_factory=dict, repr=False, compare=False)
    call_expect: CallExpect | None = None
    phone: PhoneCall | None = None
    far_end: FarEnd | None = None

    def __post_init__(self) -> None:
        # An empty ``turns`` is allowed here, as in the earlier package (a transcript built up
        # turn by turn); the loader rejects an empty YAML transcript and the runner one that is
        # run empty, each with its own message.
        # Imported here: errors is tiny, but keeping models import-light is the point.
        from ..errors import TranscriptError

        where = f"transcript {self.id!r}"
        for name, kind in (("threshold", (int, float)), ("runs", (int,))):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, kind):
                raise TranscriptError(
                    f"{where}: {name} must be a number, got {type(value).__name__} {value!r}"
                )
        if not 0.0 <= float(self.threshold) <= 1.0:
            raise TranscriptError(
                f"{where}: threshold must be between 0.0 and 1.0, got {self.threshold!r}"
            )
        if int(self.runs) < 1:
            raise TranscriptError(f"{where}: runs must be at least 1, got {self.runs!r}")
        if int(self.runs) > MAX_RUNS:
            raise TranscriptError(
                f"{where}: runs must be at most {MAX_RUNS} (the most pytest-agent-eval allows), "
                f"got {self.runs!r}"
            )
        timeout = self.turn_timeout_s
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, int | float)
            or not 0 < timeout <= MAX_TURN_TIMEOUT_S
        ):
            raise TranscriptError(
                f"{where}: turn_timeout_s must be a number of seconds > 0 and <= "
                f"{MAX_TURN_TIMEOUT_S:g}, got {timeout!r}"
            )

    @property
    def has_audio(self) -> bool:
        """True when any turn carries an ``audio`` fixture."""
        return any(t.audio is not None for t in self.turns)
