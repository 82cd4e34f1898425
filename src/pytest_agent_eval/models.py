"""The data of an evaluation: transcripts going in, results coming out.

Public records are plain dataclasses, as the seed documentation shows them. Validation of YAML
happens at the edge (`loader`); these classes only check invariants a Python user could break.
What the agent did in a turn is one record, `AgentTurn`, shared by `AgentReply` (what an adapter
returns), `TurnContext` (what evaluators see) and `TurnResult` (what reports show). Results turn
into plain JSON and back through one typed serializer (`to_dict` / `from_dict` wrap it), so they
can travel inside pytest reports, including across xdist workers.
"""

from __future__ import annotations

import functools
import math
import os
import typing
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, TypeAlias

from ._serialize import from_json, to_json

__all__ = [
    "MAX_RUNS",
    "MAX_TURN_TIMEOUT_S",
    "SCORE_MAX_DECIMALS",
    "AgentReply",
    "AgentSpeech",
    "AgentTurn",
    "AudioCondition",
    "BargeIn",
    "CallEnd",
    "Case",
    "EvalResult",
    "Expect",
    "Greeting",
    "GreetingExpect",
    "Handoff",
    "InterruptConfig",
    "JudgeConfig",
    "Message",
    "RunResult",
    "SimulatedCaller",
    "ToolCall",
    "ToolCallArgsConfig",
    "ToolCallOutcomeConfig",
    "ToolOutcome",
    "Transcript",
    "TranscriptResult",
    "Turn",
    "TurnContext",
    "TurnResult",
    "Usage",
    "Variant",
    "Verdict",
    "VoiceSettings",
    "describe_conditions",
    "passes_needed",
    "percentile",
    "score_and_threshold_text",
    "sum_usage",
    "wilson_interval",
]

_PathLike: TypeAlias = str | os.PathLike[str]

# z for a two-sided 95% interval.
_Z95 = 1.959963984540054

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
        from .errors import TranscriptError

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
        from .errors import TranscriptError

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


ToolOutcome: TypeAlias = Literal["ok", "error", "pending"]
"""How a tool call ended, as far as the adapter saw: it returned (``ok``), it failed
(``error``), or it was still running when the turn ended (``pending``)."""


@dataclass
class ToolCallOutcomeConfig:
    """One tool-outcome assertion in a YAML transcript turn (``tool_calls_outcome``).

    Some call to ``tool`` in the turn must satisfy every condition given.

    Args:
        tool: Name of the tool whose calls to check.
        status: ``"ok"`` (the call returned) or ``"error"`` (it failed), or None for any.
        output_contains: Strings that must all appear in what the call gave back (its output,
            and for a failed call its error text too), case-insensitive.
        output_matches: Regexes that must all match it (``re.search``, case-insensitive).

    Raises:
        ValueError: If no condition is given, or ``status`` is another word.
    """

    tool: str
    status: Literal["ok", "error"] | None = None
    output_contains: list[str] = field(default_factory=list)
    output_matches: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.status not in (None, "ok", "error"):
            raise ValueError(
                f"tool_calls_outcome entry for {self.tool!r}: status must be 'ok' or 'error', "
                f"got {self.status!r}"
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

    Each YAML key and its checks are defined in `pytest_agent_eval.expectations`.
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

    def __post_init__(self) -> None:
        # Values written the YAML way (a rubric string, dicts for tool_calls_args) become the
        # typed records, through the serializer the loader uses; a bad one is a TranscriptError
        # naming the field, never an AttributeError deep inside an evaluator.
        from .errors import TranscriptError

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
    from .errors import TranscriptError

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
    parameters are listed in `pytest_agent_eval.conditions` (``CONDITION_KINDS``), and the
    audio work is `pytest_agent_eval.audio_fixtures.conditions.apply`.

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
            transcript's (see `pytest_agent_eval.conditions`).
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
        user: The user message (also used as the transcript when ``audio`` is set).
        audio: Optional path to a WAV file for voice adapters. Resolved relative to
            the YAML file's directory when loaded from YAML.
        expect: Expectations for the agent's reply.
        voice: Per-turn voice settings for fixture synthesis, overriding the transcript's.
        line: Line of the turn in its YAML file, when loaded from YAML.
        conditions: Audio conditions of this turn, applied before the transcript's and the
            variant's (see `pytest_agent_eval.conditions`).
        interrupt: This turn speaks over the agent's reply to the turn before (barge-in).
        locations: Where each key of the turn is written, when loaded from YAML:
            ``{"expect.reply_contains_all": "weather.yaml:11", "expect.tool_calls_args[0]":
            "weather.yaml:13"}``; a failed check names its line from it. Empty for a turn built
            in Python, whose checks are named by their key alone.
    """

    user: str
    audio: _PathLike | None = None
    expect: Expect = field(default_factory=Expect)
    voice: VoiceSettings | None = None
    line: int | None = None
    conditions: list[AudioCondition] = field(default_factory=list)
    interrupt: InterruptConfig | None = None
    locations: dict[str, str] = field(default_factory=dict, repr=False, compare=False)


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
            `pytest_agent_eval.conditions`).
        variants: The audio variants the transcript runs under, each its own test (see
            `pytest_agent_eval.expansion`); empty: one test.
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
            `pytest_agent_eval.expansion`); empty: no dataset.
        case: The id of the case this transcript is (set by expansion), or None.
        userdata: Data for the agent under test, handed to the session factory with the run's
            information (``info.transcript.userdata``), so an agent can seed its fakes per
            transcript or simulation (a LiveKit scenario's ``userdata``).
        locations: Where each top-level check key is written (``{"greeting": "a.yaml:3"}``),
            when loaded from YAML; see `Turn.locations`.
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

    def __post_init__(self) -> None:
        # An empty ``turns`` is allowed here, as in the earlier package (a transcript built up
        # turn by turn); the loader rejects an empty YAML transcript and the runner one that is
        # run empty, each with its own message.
        # Imported here: errors is tiny, but keeping models import-light is the point.
        from .errors import TranscriptError

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


# --------------------------------------------------------------------------------------------
# What flows between runner and agent
# --------------------------------------------------------------------------------------------


class ToolCall(str):
    """A tool-call name that optionally carries the arguments it was invoked with.

    Subclasses ``str`` so name-based checks keep working unchanged: ``"book_slot"
    in ctx.tool_calls``, equality against plain strings, and hand-rolled agents
    returning ``list[str]`` (the runner normalises those to ``ToolCall`` with
    ``args=None``). Made as ``ToolCall(name, args, *, output=..., is_error=..., ...)``:

    Attributes:
        name: The tool name (the string itself).
        args: The arguments the tool was called with, or None when the adapter
            could not capture them.
        output: What the tool returned, when the adapter saw it.
        is_error: True when the call failed (bad arguments, unknown tool, exception).
        call_id: The id linking the call to its result, when the framework has one.
        error: The failure in the tool's own words when the call failed (for an exception,
            its type and message), which may say more than ``output``: a framework can hide
            an exception from the model behind a generic output.
        done: True when the adapter saw the call finish (return or failure), False when it saw
            it still running at the end of the turn, None when the adapter does not say.
            Together with ``is_error`` and ``output`` it gives `outcome`.

    Example:
        ```python
        call = ToolCall("book_slot", {"date": "tomorrow", "time": "10am"})
        call == "book_slot"          # True
        call.args["time"]            # "10am"
        ```
    """

    args: dict[str, Any] | None
    output: Any
    is_error: bool
    call_id: str | None
    error: str | None
    done: bool | None

    def __new__(
        cls,
        name: str,
        args: dict[str, Any] | None = None,
        *,
        output: Any = None,
        is_error: bool = False,
        call_id: str | None = None,
        error: str | None = None,
        done: bool | None = None,
    ) -> ToolCall:
        """Create a ToolCall from a tool name and optional captured arguments."""
        obj = super().__new__(cls, name)
        obj.args = args
        obj.output = output
        obj.is_error = is_error
        obj.call_id = call_id
        obj.error = error
        obj.done = done
        return obj

    @property
    def outcome(self) -> ToolOutcome | None:
        """How the call ended, or None when the adapter did not observe it.

        ``"error"`` when it failed; ``"pending"`` when the adapter saw it still running at the
        end of the turn; ``"ok"`` when the adapter saw it finish, or recorded what it returned.
        A bare ``ToolCall(name)`` (a hand-written agent naming the tools it used) has no
        outcome: checks on outcomes then error instead of guessing.
        """
        if self.is_error:
            return "error"
        if self.done is False:
            return "pending"
        if self.done or self.output is not None:
            return "ok"
        return None

    @property
    def name(self) -> str:
        """The tool name (the string value itself)."""
        return str(self)

    def __repr__(self) -> str:
        return f"ToolCall({str(self)!r}, args={self.args!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild_tool_call,
            (
                str(self),
                self.args,
                self.output,
                self.is_error,
                self.call_id,
                self.error,
                self.done,
            ),
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict of the call."""
        return {
            "name": str(self),
            "args": to_json(self.args),
            "output": to_json(self.output),
            "is_error": self.is_error,
            "call_id": self.call_id,
            "error": self.error,
            "done": self.done,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ToolCall:
        """Inverse of `to_dict`."""
        return cls(
            data["name"],
            data.get("args"),
            output=data.get("output"),
            is_error=bool(data.get("is_error", False)),
            call_id=data.get("call_id"),
            error=data.get("error"),
            done=data.get("done"),
        )

    @classmethod
    def coerce(cls, value: Any) -> ToolCall:
        """Turn what an agent returned for a tool call into a ToolCall.

        Accepts a ToolCall, a plain name, a ``(name, args)`` pair, or a mapping with a
        ``name`` (and optional ``args``/``arguments``).
        """
        if isinstance(value, ToolCall):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, Mapping) and "name" in value:
            args = value.get("args", value.get("arguments"))
            return cls(str(value["name"]), dict(args) if isinstance(args, Mapping) else None)
        if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
            args = value[1]
            return cls(value[0], dict(args) if isinstance(args, Mapping) else None)
        raise TypeError(
            f"a tool call must be a name, ToolCall(name, args) or (name, args); got {value!r}"
        )


def _rebuild_tool_call(
    name: str,
    args: dict[str, Any] | None,
    output: Any,
    is_error: bool,
    call_id: str | None,
    error: str | None = None,
    done: bool | None = None,
) -> ToolCall:
    return ToolCall(
        name, args, output=output, is_error=is_error, call_id=call_id, error=error, done=done
    )


class Message(dict[str, Any]):
    """One entry of the conversation history, in OpenAI chat format.

    It *is* a dict (``history[-1]["content"]``, ``json.dumps``, ``dict(msg)`` all work and
    yield only OpenAI keys) and also offers attributes (``history[-1].content``). A user turn
    with an audio fixture carries the resolved path as ``.audio`` / ``["audio"]`` without
    adding a non-standard key to the dict itself, so it never leaks into API calls. The same
    way, an assistant message names the calls whose arguments the agent did not report
    (``uncaptured_args``, their ids): their ``arguments`` read ``"{}"`` in the OpenAI format,
    and a judge is told they were not captured rather than shown an empty call.
    """

    audio: Path | None
    uncaptured_args: frozenset[str]

    def __init__(
        self,
        role: str,
        content: str | None,
        *,
        audio: Path | None = None,
        uncaptured_args: frozenset[str] = frozenset(),
        **extra: Any,
    ) -> None:
        super().__init__(role=role, content=content, **extra)
        self.audio = audio
        self.uncaptured_args = frozenset(uncaptured_args)

    def __missing__(self, key: str) -> Any:
        if key == "audio":
            return self.audio
        raise KeyError(key)

    def get(self, key: str, default: Any = None) -> Any:
        if key == "audio" and not dict.__contains__(self, "audio"):
            return self.audio if self.audio is not None else default
        return super().get(key, default)

    @property
    def role(self) -> str:
        """``"system"``, ``"user"``, ``"assistant"`` or ``"tool"``."""
        return str(self["role"])

    @property
    def content(self) -> str | None:
        """The text of the message (None for an assistant message that only calls tools)."""
        return dict.get(self, "content")

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """OpenAI-style ``tool_calls`` of an assistant message, or an empty list."""
        return list(dict.get(self, "tool_calls") or [])

    @property
    def tool_call_id(self) -> str | None:
        """For a ``tool`` message, the id of the call it answers."""
        return dict.get(self, "tool_call_id")

    def to_openai(self) -> dict[str, Any]:
        """A plain dict with only OpenAI chat keys."""
        return dict(self)

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild_message, (dict(self), self.audio, self.uncaptured_args))


def _rebuild_message(
    data: dict[str, Any], audio: Path | None, uncaptured_args: frozenset[str] = frozenset()
) -> Message:
    data = dict(data)
    return Message(
        data.pop("role"),
        data.pop("content", None),
        audio=audio,
        uncaptured_args=uncaptured_args,
        **data,
    )


@dataclass
class Usage:
    """Token usage reported by an agent or a judge.

    Args:
        input_tokens: Prompt tokens.
        output_tokens: Completion tokens.
        requests: Number of model requests, or None when the source does not count them
            (reports then show "–", never a made-up 0).
    """

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int | None = None

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        # A count is known only when every part counted: a partial sum would understate it.
        requests = (
            None
            if self.requests is None or other.requests is None
            else self.requests + other.requests
        )
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            requests,
        )

    def to_dict(self) -> dict[str, int | None]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> Usage | None:
        """Inverse of `to_dict`; None stays None."""
        return None if data is None else from_json(cls, data)


def sum_usage(items: Iterable[Usage | None]) -> Usage | None:
    """Add usages, ignoring None; None when nothing reported any."""
    total: Usage | None = None
    for item in items:
        if item is not None:
            total = item if total is None else total + item
    return total


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentSpeech:
    """Something the agent said on its own initiative, not in answer to the user's words.

    A greeting when the session starts, an ``on_enter`` line after a handoff, a ``say()`` from
    a tool. Adapters that can tell such speech apart list it on the turn that caused it
    (`AgentTurn.agent_speech`); what the agent said before turn 1 goes to the run's
    `Greeting`. The turn's ``reply`` is everything the agent said in the turn, so it holds
    this speech too, in the order it was said; ``agent_speech`` says which parts the agent
    started on its own and why. Reports show each one on its own line, marked as
    agent-initiated.

    Args:
        text: What was said.
        cause: Why. LiveKit's words: ``"greeting"`` (said while the session started),
            ``"on_enter"`` (an agent entered by a handoff), ``"on_exit"``, ``"tool"``
            (``say``/``generate_reply`` inside a tool) or ``"other"``; other adapters may use
            their own.
        agent: Name of the agent that spoke, in multi-agent sessions.
        turn_index: Zero-based index of the turn that caused it (None for the greeting).
        started_at_s: Seconds from the start of the conversation to its first word, if known.
        latency_s: Seconds from what triggered it (session start, handoff, the end of the
            user's speech) to its first word, if known.
    """

    text: str
    cause: str
    agent: str | None = None
    turn_index: int | None = None
    started_at_s: float | None = None
    latency_s: float | None = None


@dataclass(frozen=True, slots=True)
class Handoff:
    """Control of the conversation passing from one agent to another within a turn.

    Args:
        from_agent: Name of the agent that handed off (None if unknown).
        to_agent: Name of the agent that took over.
    """

    from_agent: str | None
    to_agent: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BargeIn:
    """What happened when a turn spoke over the agent's reply (a turn with ``interrupt:``).

    Times are seconds. The interruption "starts" where the interrupting utterance's speech
    starts (its first voiced audio, not its leading silence); the agent "stops" when its audio
    output is paused or cleared, which is when a caller would hear it go quiet.

    Args:
        precondition: Why the barge-in could not be tested (the agent was not speaking when
            the interruption started, the interrupting speech is shorter than the session's
            minimum interruption duration, the session has no TTS), or None when it was.
        reply_position_s: How far into the interrupted reply's audio the interruption started.
        speech_s: Length of the interrupting utterance's first phrase of speech (the VAD's).
        min_interruption_s: The session's minimum interruption duration.
        stopped: True when the agent stopped and its reply ended interrupted.
        stop_latency_s: From the start of the interrupting speech to the agent's audio
            stopping for good (after its last resume, if any); None when it did not stop.
        resumed: True when the agent went quiet, then resumed the same reply (LiveKit's
            false-interruption handling, when no words were transcribed in time).
        quiet_after_s: From the start of the interrupting speech to the first time the
            agent's audio went quiet (the same as ``stop_latency_s`` unless it resumed).
        played_s: How much of the interrupted reply's audio played in all.
        interrupted_text: What the session kept of the interrupted reply (the part said).
    """

    precondition: str | None = None
    reply_position_s: float | None = None
    speech_s: float | None = None
    min_interruption_s: float | None = None
    stopped: bool = False
    stop_latency_s: float | None = None
    resumed: bool = False
    played_s: float | None = None
    interrupted_text: str | None = None
    quiet_after_s: float | None = None


@dataclass
class Greeting:
    """What the agent said and did on its own before the user's first turn.

    Adapters that observe it return it from ``Conversation.greeting()``; the runner keeps it
    on `RunResult.greeting`, where a transcript's ``greeting:`` checks and the reports read it.

    Args:
        speech: Each utterance, in order (cause ``"greeting"`` for most).
        tool_calls: Tools the agent called while greeting.
    """

    speech: list[AgentSpeech] = field(default_factory=list)
    tool_calls: list[ToolCall] = field(default_factory=list)

    @property
    def text(self) -> str:
        """Every utterance, space-joined ("" when the agent said nothing)."""
        return " ".join(s.text for s in self.speech if s.text)


class _AgentTurnFields:
    """``reply`` and ``tool_calls``, which each `AgentTurn` subclass declares in the position
    its constructor needs; a plain class, so naming them here adds no dataclass field."""

    reply: str
    tool_calls: list[ToolCall]


@dataclass(kw_only=True, repr=False)
class AgentTurn(_AgentTurnFields):
    """What the agent did in one turn: the record `AgentReply`, `TurnContext` and `TurnResult`
    share.

    Each of the three inherits these fields, so an adapter's reply reaches the evaluators and the
    reports without a hand-copied field list (`agent_turn_values`), and a field added here
    (a new measurement, a new kind of output) appears everywhere at once.

    Why a base class with keyword-only fields: the seed's constructors take ``reply`` and
    ``tool_calls`` positionally at different places (``AgentReply(reply, tool_calls)``,
    ``TurnContext(user, reply, tool_calls, history)``, ``TurnResult(index, user, reply, ...)``),
    so each subclass declares those two in its own order; everything else is keyword-only and
    goes after the subclass's positional fields. Composition with properties would have needed a
    hand-written ``__init__`` per class to keep those constructors.

    Args:
        heard: Voice adapters: what the agent's speech recognizer transcribed.
        latency_s: Voice adapters: seconds from the end of the user's speech to the first
            reply text.
        first_audio_latency_s: Voice adapters: seconds from the end of the user's speech to the
            first reply audio frame, when the session produces audio.
        usage: Token usage of the agent for this turn, when the adapter reports it.
        audio_out: The reply audio the adapter saved, if any.
        metadata: Anything else an adapter wants evaluators and reports to see.
        agent_speech: The parts of what the agent said in this turn that it started on its
            own (an ``on_enter`` line after a handoff, a ``say()`` from a tool), with why.
        heard_segments: Voice adapters: what the speech recognizer heard in each speech
            segment of the user's audio, in order (``heard`` is them joined).
        active_agent: Multi-agent adapters: the agent active at the end of the turn; None
            when the adapter does not report agents.
        handoffs: Multi-agent adapters: the handoffs of the turn, in order; None when the
            adapter does not report handoffs (as opposed to ``[]``: it saw none).
        tool_calls_unobserved: Why the adapter could not see the turn's tool calls (a room
            agent that does not publish them, say); None when it could. Tool checks then error
            with this reason instead of passing on an empty list.
        wer: Voice turns: the word error rate of ``heard`` against the words the user spoke
            (`pytest_agent_eval.speech.spoken_text` of the turn's ``user``), with the
            number-aware normalizer of ``--verify``; None for a text turn or when nothing was
            reported as heard. The runner fills it in when the adapter did not.
        audio_in: Voice adapters: the exact audio the turn streamed to the agent (after its
            audio conditions), when the adapter was asked to save it.
        barge_in: What happened when this turn spoke over the agent (``interrupt:``); None
            when the turn did not interrupt, or the adapter does not perform barge-in.
        model: Id of the model that answered (``"gpt-4o-mini"``, ``"openai:gpt-4o"``), when
            the adapter knows it: reports name it and price the turn's tokens by it.
    """

    heard: str | None = None
    latency_s: float | None = None
    first_audio_latency_s: float | None = None
    usage: Usage | None = None
    audio_out: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    agent_speech: list[AgentSpeech] = field(default_factory=list)
    heard_segments: list[str] = field(default_factory=list)
    active_agent: str | None = None
    handoffs: list[Handoff] | None = None
    tool_calls_unobserved: str | None = None
    wer: float | None = None
    audio_in: Path | None = None
    barge_in: BargeIn | None = None
    model: str | None = None

    def __post_init__(self) -> None:
        if type(self) is AgentTurn:
            raise TypeError(
                "AgentTurn is the part AgentReply, TurnContext and TurnResult share; "
                "build one of those"
            )
        if isinstance(self.reply, bytes | bytearray | memoryview):
            raise TypeError(
                f"{type(self).__name__} got bytes as its reply ({bytes(self.reply)[:40]!r}); "
                "pass text: decode it first, e.g. reply.decode('utf-8')"
            )
        self.reply = "" if self.reply is None else str(self.reply)
        self.tool_calls = [ToolCall.coerce(c) for c in (self.tool_calls or [])]
        if self.audio_out is not None and not isinstance(self.audio_out, Path):
            self.audio_out = Path(self.audio_out)
        if self.audio_in is not None and not isinstance(self.audio_in, Path):
            self.audio_in = Path(self.audio_in)

    def agent_turn_values(self) -> dict[str, Any]:
        """``reply``, ``tool_calls`` and every `AgentTurn` field, as keyword arguments for
        another record of the same turn (lists and dicts copied, so the records stay apart)."""
        values = {name: getattr(self, name) for name in _AGENT_TURN_FIELDS}
        return {k: v.copy() if isinstance(v, list | dict) else v for k, v in values.items()}

    def __repr__(self) -> str:
        # The constructor's order: the subclass's positional fields, then the shared ones.
        ordered = sorted(fields(self), key=lambda f: bool(f.kw_only))
        shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in ordered if f.repr)
        return f"{type(self).__name__}({shown})"


_AGENT_TURN_FIELDS = ("reply", "tool_calls", *(f.name for f in fields(AgentTurn)))


@dataclass(repr=False)
class AgentReply(AgentTurn):
    """What the agent said and did in one turn, as an adapter or agent callable returns it.

    Args:
        reply: The reply text.
        tool_calls: Tools called during the turn; plain names become ``ToolCall(name)``.
        heard: See `AgentTurn` (this and every field below).
        latency_s: End of the user's speech to the first reply text, in seconds.
        first_audio_latency_s: End of the user's speech to the first reply audio, in seconds.
        usage: Token usage of the agent for this turn.
        audio_out: Path of the reply audio the adapter saved, if any.
        metadata: Anything else an adapter wants evaluators and reports to see.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
    """

    reply: str
    tool_calls: list[ToolCall | str] = field(default_factory=list)  # type: ignore[assignment]

    @property
    def calls(self) -> list[ToolCall]:
        """The tool calls, typed as ToolCall (``__post_init__`` already coerced them)."""
        return self.tool_calls  # type: ignore[return-value]


@dataclass(repr=False)
class TurnContext(AgentTurn):
    """Context passed to every evaluator for a turn.

    Args:
        user: The user message for this turn.
        reply: The agent's reply.
        tool_calls: Tools called during the turn. Each entry is a ToolCall
            (str-compatible); ``.args`` holds captured arguments or None.
        history: Full conversation history in OpenAI message format, up to but not including
            the assistant reply for this turn.
        turn_index: Zero-based index of the turn in its transcript.
        run_index: Zero-based index of the run.
        transcript_id: Id of the transcript being run.
        audio: Resolved path of the turn's audio fixture, if any.
        heard: What the agent's speech recognizer heard (voice adapters); see `AgentTurn` for
            this and the fields below.
        latency_s: End of user speech to first reply text, in seconds (voice adapters).
        first_audio_latency_s: End of user speech to first reply audio, in seconds.
        usage: Tokens the agent spent in this turn.
        audio_out: Reply audio saved by the adapter, if any.
        metadata: Adapter-specific extras from `AgentReply.metadata`.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
    """

    user: str
    reply: str
    tool_calls: list[ToolCall]
    history: list[dict[str, Any]]
    turn_index: int = 0
    run_index: int = 0
    transcript_id: str = ""
    audio: Path | None = None


# --------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------


Verdict: TypeAlias = Literal["passed", "failed", "error"]
"""The outcome of a turn, a run or a transcript.

- ``passed``: every check passed.
- ``failed`` (FAIL): the agent did something wrong: a check said no, or the agent's own code
  raised or hung. Counted in pass rates; a passing gate may absorb it.
- ``error`` (ERROR): the agent could not be evaluated: starting the conversation failed (the
  session factory, the adapter, a worker that never joined), our adapter or our code raised
  an ``AgentEvalError`` in a turn (a worker that crashed, a fixture we refused), or a check
  could not decide (a judge that was down). Never counted in a pass rate, never absorbed by a
  gate; the test is a pytest error.
"""


def _verdict(
    passed: bool, errored: bool, agent_failed: bool, evaluations: Iterable[EvalResult]
) -> Verdict:
    """One rule for every level: a definite failure of the agent decides; else an error;
    else failed (a result built by hand with ``passed=False``)."""
    if passed:
        return "passed"
    evaluations = list(evaluations)
    if agent_failed or any(not e.passed and not e.errored for e in evaluations):
        return "failed"
    if errored or any(e.errored for e in evaluations):
        return "error"
    return "failed"


def _errored_check_reason(check: EvalResult) -> str:
    """``judge errored: 503 ...``: the check's name once (judges start their reasoning with
    it already)."""
    head = f"{check.name or 'a check'} errored"
    reasoning = check.reasoning or "no reason given"
    return reasoning if reasoning.startswith(head) else f"{head}: {reasoning}"


@dataclass
class EvalResult:
    """Result from a single evaluator on a single turn.

    Args:
        passed: The verdict.
        reasoning: Why; for failed deterministic checks, every failed check and what was seen.
        name: Which evaluator gave it (filled in by the runner when empty).
        errored: True when the evaluator could not decide (a judge that timed out, an
            evaluator that raised); always ``passed=False`` then. Distinct from a "no".
        usage: Tokens the evaluator spent (judges).
        model: Id of the model that gave the verdict (judges), when known: reports name it
            and price its tokens.
        key: The transcript key the check comes from, as a path
            (``turns[0].expect.reply_contains_all``), filled in by the runner for the checks a
            transcript declares; None for the user's own evaluators.
        location: Where that key is written (``weather.yaml:11``), for a transcript loaded
            from YAML; None otherwise.
    """

    passed: bool
    reasoning: str = ""
    name: str = ""
    errored: bool = False
    usage: Usage | None = None
    model: str | None = None
    key: str | None = None
    location: str | None = None

    @property
    def label(self) -> str:
        """How reports name the check: ``turns[0].expect.reply_contains_all (weather.yaml:11)``,
        its key alone without a location, else the evaluator's name."""
        if self.key and self.location:
            return f"{self.key} ({self.location})"
        return self.key or self.name or "check"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


@dataclass(repr=False)
class TurnResult(AgentTurn):
    """What happened in one turn of one run.

    The earlier package's keywords construct it too, and its names read:
    ``TurnResult(turn_index=0, passed=True, eval_results=[...])``, ``.turn_index``,
    ``.eval_results``. ``passed`` is computed; an explicit ``passed=False`` fails the turn (the
    reason goes in ``error``), and ``passed=True`` cannot make a failed turn pass (a
    `UserWarning` says why).

    Args:
        index: Zero-based turn index.
        user: The user text.
        reply: The agent's reply ("" when the turn errored before a reply).
        tool_calls: The tool calls with their arguments.
        evaluations: Every evaluator's verdict, in order.
        error: Short description of an exception in the agent or adapter, if any.
        duration_s: Wall time of the turn (agent plus evaluators).
        audio: The audio fixture streamed for this turn, if any.
        heard: What the agent's speech recognizer heard; see `AgentTurn` for this and the
            fields below.
        latency_s: End of user speech to first reply text.
        first_audio_latency_s: End of user speech to first reply audio.
        usage: Tokens the agent spent in this turn.
        audio_out: Reply audio saved by the adapter, if any.
        metadata: Adapter-specific extras from `AgentReply.metadata`.
        agent_speech: What the agent said on its own initiative in this turn.
        heard_segments: What the speech recognizer heard, per speech segment.
        active_agent: The agent active at the end of the turn (multi-agent adapters).
        handoffs: The turn's handoffs (None: the adapter does not report them).
        conditions: The audio conditions the turn's audio went through, described
            (``noise(color=pink, snr_db=10), telephone(...)``); None for none.
        errored: True when ``error`` kept the agent from being evaluated (our adapter, the
            session around the agent, a fixture our code refused: an ``AgentEvalError``), so
            the turn is an ERROR; False when the agent itself failed (its own exception, a
            timeout), a FAIL. See `Verdict`.
    """

    index: int
    user: str = ""
    reply: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    evaluations: list[EvalResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    audio: str | None = None
    conditions: str | None = None
    errored: bool = False

    @property
    def passed(self) -> bool:
        """No error and every evaluation passed."""
        return self.error is None and all(e.passed for e in self.evaluations)

    @property
    def verdict(self) -> Verdict:
        """``passed``; ``failed`` when the agent failed (its error, a check that said no);
        ``error`` when the turn could not evaluate the agent (an errored turn, or checks that
        only errored)."""
        return _verdict(
            self.passed, self.errored, self.error is not None and not self.errored, self.evaluations
        )

    @property
    def turn_index(self) -> int:
        """``index``, by the earlier package's name."""
        return self.index

    @turn_index.setter
    def turn_index(self, value: int) -> None:
        self.index = value

    @property
    def eval_results(self) -> list[EvalResult]:
        """``evaluations``, by the earlier package's name."""
        return self.evaluations

    @eval_results.setter
    def eval_results(self, value: list[EvalResult]) -> None:
        self.evaluations = value

    def _fail_by_caller(self, why: str) -> None:
        self.error = self.error or why

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens spent by this turn's judges."""
        return sum_usage(e.usage for e in self.evaluations)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


CallEnd: TypeAlias = Literal["caller", "max_turns", "agent", "error"]
"""Who or what ended a simulated conversation: the simulated caller (through its tool), the
``max_turns`` limit, the agent (it hung up), or an error (a turn or the caller failed)."""


@dataclass
class SimulatedCaller:
    """What the simulated caller of one run did, and how the conversation ended.

    A simulated run's turns are ordinary `TurnResult` s (the caller's words are each turn's
    ``user``, its synthesized speech the turn's ``audio``); this record says the rest, for the
    reports: who ended the call and why, how many turns were scripted and how many the caller
    wrote, and what the caller cost.

    Args:
        persona: Who the caller played.
        goal: What the caller wanted ("" when the persona says it).
        ended_by: See `CallEnd`.
        outcome: The caller's own word when it ended the call: ``goal_reached`` or
            ``gave_up``; None when something else ended it.
        reason: Why it ended, in words (the caller's reason, the limit, the error).
        scripted_turns: Turns written in the simulation file, run before the caller's own.
        simulated_turns: Turns the caller wrote.
        min_turns: The earliest turn after which the caller could end the call.
        max_turns: The most turns the conversation could have.
        model: Id of the caller's model.
        requests: Model requests the caller made in this run (0 when every turn was replayed
            from the caller cache).
        cached_turns: Caller turns replayed from the cache.
        usage: Tokens the caller spent (None when it made no request).
        not_judged: Why the criteria were not judged (the conversation broke off), or None.
    """

    persona: str = ""
    goal: str = ""
    ended_by: CallEnd = "max_turns"
    outcome: Literal["goal_reached", "gave_up"] | None = None
    reason: str = ""
    scripted_turns: int = 0
    simulated_turns: int = 0
    min_turns: int = 1
    max_turns: int = 1
    model: str | None = None
    requests: int = 0
    cached_turns: int = 0
    usage: Usage | None = None
    not_judged: str | None = None

    @property
    def turns(self) -> int:
        """Every user turn of the conversation, scripted and simulated."""
        return self.scripted_turns + self.simulated_turns


@dataclass
class RunResult:
    """One execution of a whole transcript.

    The earlier package's keywords construct it too, and its names read:
    ``RunResult(run_index=0, passed=True, turn_results=[...])``, ``.run_index``,
    ``.turn_results``; an explicit ``passed`` combines with the computed verdict as for
    `TurnResult` (a run without turns never passes).

    Args:
        index: Zero-based run index.
        turns: Results of the turns that ran (a run stops at the first turn that errors).
        error: An error outside any turn (starting or closing the conversation), if any.
        duration_s: Wall time of the run.
        greeting: What the agent said and did before turn 1, from adapters that observe it
            (None: the adapter does not).
        greeting_evaluations: The verdicts of the transcript's ``greeting:`` checks.
        errored: True when ``error`` kept the agent from being evaluated (starting the
            conversation, reading the greeting or closing it failed), so the run is an
            ERROR; see `verdict`.
        evaluations: Checks of the whole conversation, judged once after its last turn (a
            simulation's criteria, each with its verdict and reason).
        simulation: What the simulated caller did and how the conversation ended, for a run
            of a simulation; None for a transcript's run.
    """

    index: int
    turns: list[TurnResult] = field(default_factory=list)
    error: str | None = None
    duration_s: float = 0.0
    greeting: Greeting | None = None
    greeting_evaluations: list[EvalResult] = field(default_factory=list)
    errored: bool = False
    evaluations: list[EvalResult] = field(default_factory=list)
    simulation: SimulatedCaller | None = None

    @property
    def passed(self) -> bool:
        """True when the run had no error, every turn passed, and so did the greeting checks
        and the checks of the whole conversation."""
        return (
            self.error is None
            and bool(self.turns)
            and all(t.passed for t in self.turns)
            and all(e.passed for e in self.greeting_evaluations)
            and all(e.passed for e in self.evaluations)
        )

    @property
    def verdict(self) -> Verdict:
        """The run's outcome, one of `Verdict`.

        ``failed`` as soon as the agent demonstrably did something wrong in it (a turn's own
        error, a check that said no), even if something else errored too: that run is decided.
        Otherwise ``error`` when anything errored (the run's own ``errored`` error, an errored
        turn, a check that could not decide): such a run says nothing about the agent and is
        left out of the score.
        """
        turns_errored = any(t.errored for t in self.turns)
        agent_failed = any(t.error is not None and not t.errored for t in self.turns) or (
            self.error is not None and not self.errored
        )
        return _verdict(
            self.passed,
            self.errored or turns_errored,
            agent_failed,
            [
                *self.greeting_evaluations,
                *(e for t in self.turns for e in t.evaluations),
                *self.evaluations,
            ],
        )

    @property
    def error_reason(self) -> str | None:
        """Why the run is an ERROR (its own error, the errored turn's, or the first errored
        check's), or None when it is not one."""
        if self.verdict != "error":
            return None
        if self.errored and self.error:
            return self.error
        for turn in self.turns:
            if turn.errored and turn.error:
                return f"turn {turn.index + 1}: {turn.error}"
        return _errored_check_reason(self.errored_evaluations[0])

    @property
    def errored_evaluations(self) -> list[EvalResult]:
        """Every check of the run that errored, greeting first, in turn order, then the checks
        of the whole conversation."""
        return [
            e
            for e in (
                *self.greeting_evaluations,
                *(e for t in self.turns for e in t.evaluations),
                *self.evaluations,
            )
            if e.errored
        ]

    @property
    def run_index(self) -> int:
        """``index``, by the earlier package's name."""
        return self.index

    @run_index.setter
    def run_index(self, value: int) -> None:
        self.index = value

    @property
    def turn_results(self) -> list[TurnResult]:
        """``turns``, by the earlier package's name."""
        return self.turns

    @turn_results.setter
    def turn_results(self, value: list[TurnResult]) -> None:
        self.turns = value

    def _fail_by_caller(self, why: str) -> None:
        self.error = self.error or why

    @property
    def agent_usage(self) -> Usage | None:
        """Tokens the agent spent over the run."""
        return sum_usage(t.usage for t in self.turns)

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens the judges spent over the run (the turns' and the whole conversation's)."""
        return sum_usage(
            [*(t.judge_usage for t in self.turns), *(e.usage for e in self.evaluations)]
        )

    @property
    def caller_usage(self) -> Usage | None:
        """Tokens a simulated caller spent over the run (None for a transcript's run)."""
        return self.simulation.usage if self.simulation is not None else None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)


_CALLER_FAILED = "marked failed by the code that built this result (passed=False)"


def _accept_earlier_names(cls: type[Any], renames: Mapping[str, str]) -> None:
    """Let ``cls`` take the earlier package's keyword names and its explicit ``passed=``.

    Each ``renames`` key is an earlier keyword (``turn_index``) standing for one of our fields
    (``index``); giving both is a `TypeError`. The earlier results stored ``passed`` as given;
    ours compute it, so an explicit value is combined with the computed one by *and*, so a
    result never passes for the wrong reason:

    - ``passed=False`` makes the result fail even when everything in it passed; the reason is
      recorded in its ``error`` (so it survives serialization and shows in reports).
    - ``passed=True`` cannot overrule what failed (an evaluation, an error, a run without
      turns); the result stays failed and a `UserWarning` says why.
    """
    generated = cls.__init__

    @functools.wraps(generated)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        given_passed = kwargs.pop("passed", None)
        for earlier, ours in renames.items():
            if earlier in kwargs:
                if ours in kwargs:
                    raise TypeError(
                        f"{cls.__name__} got both {earlier}= and {ours}=; they are one field "
                        f"({earlier} is the earlier package's name for {ours})"
                    )
                kwargs[ours] = kwargs.pop(earlier)
        generated(self, *args, **kwargs)
        if given_passed is None:
            return
        if not isinstance(given_passed, bool):
            raise TypeError(f"{cls.__name__}(passed=...) takes True or False, got {given_passed!r}")
        if not given_passed and self.passed:
            self._fail_by_caller(_CALLER_FAILED)
        elif given_passed and not self.passed:
            warnings.warn(
                f"{cls.__name__}(passed=True) was given but the result is failed "
                f"({_why_failed(self)}); a result passes only when its contents pass",
                UserWarning,
                stacklevel=2,
            )

    cls.__init__ = __init__


def _why_failed(result: Any) -> str:
    if result.error:
        return f"error: {result.error}"
    if isinstance(result, RunResult):
        if not result.turns:
            return "a run without turns never passes"
        failed = [t.index + 1 for t in result.turns if not t.passed]
        return f"turn(s) {failed} failed"
    failed_checks = [e.name or "evaluation" for e in result.evaluations if not e.passed]
    return f"failed: {', '.join(failed_checks)}"


_accept_earlier_names(TurnResult, {"turn_index": "index", "eval_results": "evaluations"})
_accept_earlier_names(RunResult, {"run_index": "index", "turn_results": "turns"})


def percentile(values: Iterable[float], q: float) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by nearest rank, or None when empty.

    Nearest rank returns a value that was measured (never an interpolation between two), which
    is what a latency budget is checked against.
    """
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def passes_needed(threshold: float, runs: int) -> int:
    """Smallest number of passing runs with passes / runs >= threshold."""
    # The epsilon absorbs float noise such as 0.7 * 10 == 7.000000000000001.
    return max(0, math.ceil(threshold * runs - 1e-9))


SCORE_MAX_DECIMALS = 6
"""Most decimals `score_and_threshold_text` uses to show a score apart from its threshold."""


def score_and_threshold_text(score: float, threshold: float) -> tuple[str, str]:
    """``score`` and ``threshold`` with two decimals, or as many more as it takes to see them
    differ (``0.667`` and ``0.670`` for 2/3 against 0.67), so a message never reads
    ``score=0.67 < threshold=0.67``."""
    for decimals in range(2, SCORE_MAX_DECIMALS + 1):
        shown = (f"{score:.{decimals}f}", f"{threshold:.{decimals}f}")
        if (shown[0] != shown[1]) == (score != threshold):
            return shown
    return shown


def wilson_interval(successes: int, trials: int, z: float = _Z95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (95% by default).

    Chosen over the normal approximation because it stays inside [0, 1] and behaves at
    0/N and N/N, which is where small eval suites live.
    """
    if trials <= 0:
        return (0.0, 1.0)
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # At 0/N and N/N the interval touches 0 and 1 exactly; floating point leaves 5.55e-17.
    low = 0.0 if successes <= 0 else max(0.0, centre - half)
    high = 1.0 if successes >= trials else min(1.0, centre + half)
    return (low, high)


@dataclass
class TranscriptResult:
    """Aggregated result across all runs of a transcript.

    Args:
        passed: True if score >= threshold and no run is an ERROR.
        score: Fraction of the evaluated runs that passed (0.0-1.0); ERROR runs (`Verdict`)
            are left out.
        threshold: Required pass fraction.
        runs: Individual run results.
        transcript_id: Id of the transcript.
        planned_runs: Runs asked for; more than ``len(runs)`` when early stop saved some.
        tags: The transcript's tags.
        duration_s: Wall time of all runs.
        checks: Verdicts on the whole result (``latency_p95_ms_max``); the result passes only
            when every one passed too.
        variant: The audio variant the transcript ran as (``phone``), or None.
        base_id: The transcript's id before expansion (``booking`` for ``booking[phone]``),
            or None when it was not expanded.
    """

    passed: bool
    score: float
    threshold: float
    runs: list[RunResult]
    transcript_id: str = ""
    planned_runs: int | None = None
    tags: list[str] = field(default_factory=list)
    duration_s: float = 0.0
    checks: list[EvalResult] = field(default_factory=list)
    variant: str | None = None
    base_id: str | None = None

    @property
    def passed_run_count(self) -> int:
        """Number of runs that passed."""
        return sum(r.passed for r in self.runs)

    @property
    def saved_runs(self) -> int:
        """Runs not started because the verdict could no longer change (early stop)."""
        if self.planned_runs is None:
            return 0
        return max(0, self.planned_runs - len(self.runs))

    @property
    def errored_run_count(self) -> int:
        """Runs that could not evaluate the agent (``verdict == "error"``)."""
        return sum(r.verdict == "error" for r in self.runs)

    @property
    def evaluated_runs(self) -> list[RunResult]:
        """The runs that evaluated the agent (passed or failed), in order."""
        return [r for r in self.runs if r.verdict != "error"]

    @property
    def evaluated_run_count(self) -> int:
        """Runs that evaluated the agent (passed or failed): what the score is a fraction of."""
        return len(self.runs) - self.errored_run_count

    @property
    def interval(self) -> tuple[float, float]:
        """95% Wilson interval on the pass rate (over the evaluated runs)."""
        return wilson_interval(self.passed_run_count, self.evaluated_run_count)

    @property
    def turn_latencies_s(self) -> list[float]:
        """Every measured voice-turn latency (turns that streamed audio), across the runs that
        evaluated the agent: an ERROR run is left out of the latency as it is of the score."""
        return [
            t.latency_s
            for r in self.evaluated_runs
            for t in r.turns
            if t.latency_s is not None and t.audio is not None
        ]

    @property
    def p95_latency_s(self) -> float | None:
        """95th percentile of turn latency (nearest rank), or None when nothing was measured."""
        return percentile(self.turn_latencies_s, 95)

    @property
    def p50_latency_s(self) -> float | None:
        """Median turn latency (nearest rank), or None when nothing was measured."""
        return percentile(self.turn_latencies_s, 50)

    def turn_latency_percentiles(self) -> list[tuple[int, int, float, float]]:
        """Per voice turn over all runs: ``(turn_index, measured, p50_s, p95_s)``, in turn order,
        for the turns with at least one measured latency."""
        by_turn: dict[int, list[float]] = {}
        for run in self.evaluated_runs:
            for turn in run.turns:
                if turn.latency_s is not None and turn.audio is not None:
                    by_turn.setdefault(turn.index, []).append(turn.latency_s)
        out = []
        for index in sorted(by_turn):
            values = by_turn[index]
            p50, p95 = percentile(values, 50), percentile(values, 95)
            assert p50 is not None and p95 is not None
            out.append((index, len(values), p50, p95))
        return out

    @property
    def turn_wers(self) -> list[float]:
        """The word error rate of every voice turn that reported what it heard, across the
        runs that evaluated the agent."""
        return [t.wer for r in self.evaluated_runs for t in r.turns if t.wer is not None]

    @property
    def mean_wer(self) -> float | None:
        """The mean word error rate of the voice turns, or None when none reported one."""
        values = self.turn_wers
        return sum(values) / len(values) if values else None

    @property
    def agent_usage(self) -> Usage | None:
        """Tokens the agent spent over all runs."""
        return sum_usage(r.agent_usage for r in self.runs)

    @property
    def judge_usage(self) -> Usage | None:
        """Tokens the judges spent over all runs."""
        return sum_usage(r.judge_usage for r in self.runs)

    @property
    def caller_usage(self) -> Usage | None:
        """Tokens a simulated caller spent over all runs (None for a transcript)."""
        return sum_usage(r.caller_usage for r in self.runs)

    @property
    def verdict(self) -> Verdict:
        """``error`` when any run could not evaluate the agent or a check of the whole result
        could not decide (the eval is incomplete: its score would be about other runs than
        asked for); else ``passed`` or ``failed``."""
        if self.errored_run_count or any(c.errored for c in self.checks):
            return "error"
        return "passed" if self.passed else "failed"

    @property
    def errored(self) -> bool:
        """True when the verdict is ``error`` (`Verdict`): reports show ERROR, the test is a
        pytest error, gates neither count nor absorb it."""
        return self.verdict == "error"

    @property
    def error_reason(self) -> str | None:
        """Why the eval is an ERROR (how many runs could not evaluate the agent and the first
        one's reason), or None when it is not one."""
        if not self.errored:
            return None
        errored = [r for r in self.runs if r.verdict == "error"]
        if not errored:
            return _errored_check_reason(next(c for c in self.checks if c.errored))
        first = errored[0]
        return (
            f"{len(errored)} of {len(self.runs)} run(s) could not evaluate the agent (ERROR, "
            f"left out of the score): run {first.index + 1}: {first.error_reason}"
        )

    def threshold_message(self) -> str:
        """``LLM eval failed: score=0.67 < threshold=0.80 (2/3 runs passed)``: the earlier
        package's words, with as many decimals as it takes to see the score below the
        threshold; ``LLM eval ERROR: ...`` with the reason when the agent could not be
        evaluated."""
        if self.errored:
            return (
                f"LLM eval ERROR: {self.error_reason} ({self.passed_run_count}/"
                f"{self.evaluated_run_count} evaluated runs passed)"
            )
        failed = [c for c in self.checks if not c.passed]
        if failed and self.score + 1e-9 >= self.threshold:
            # Enough runs passed; a transcript-level check (latency_p95_ms_max...) did not.
            return (
                "LLM eval failed: "
                + "; ".join(f"{c.name}: {c.reasoning}" for c in failed)
                + f" (score={self.score:.2f}, {self.passed_run_count}/{len(self.runs)} "
                "runs passed)"
            )
        score, threshold = score_and_threshold_text(self.score, self.threshold)
        return (
            f"LLM eval failed: score={score} < threshold={threshold} "
            f"({self.passed_run_count}/{len(self.runs)} runs passed)"
        )

    def assert_threshold(self) -> None:
        """Raise AssertionError if score is below threshold."""
        __tracebackhide__ = True
        # Noted on the result (not a field, so never serialized): the plugin asserts a result
        # the test did not assert itself when the test ends.
        self.__dict__["_threshold_asserted"] = True
        if not self.passed:
            raise AssertionError(self.threshold_message())

    @property
    def threshold_asserted(self) -> bool:
        """True once `assert_threshold` was called on this result."""
        return bool(self.__dict__.get("_threshold_asserted", False))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-friendly dict (what travels inside pytest reports); derived values such as
        the interval are not stored, they are recomputed."""
        return to_json(self)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TranscriptResult:
        """Inverse of `to_dict`."""
        return from_json(cls, data)
