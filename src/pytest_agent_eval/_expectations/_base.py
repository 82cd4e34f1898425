"""What an expectation declares: its YAML keys, their schema and description, and its evaluators.

One `Expectation` per module of this package. Everything else about ``expect:`` is derived from
these declarations or checked against them by a test: the ``expect`` part of the JSON Schema,
the table in docs/transcripts.md, the loader's extra checks, the evaluators a turn gets, and the
fields of `Expect` (which stays a hand-written public dataclass, for editors and the seed).
A few keys sit at the top of a transcript instead (``greeting:``): they fill the `Transcript`
field of the same name, and their checks look at the whole run rather than one turn.

Also here: the text checks several expectations share (`text_problems`), and the verdict of a
check that could not observe what it asserts (`unobserved`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ..evaluators._base import CheckSource, text_problems, unobserved, with_source
from ..evaluators._judge_settings import JudgeSettings
from ..models import Expect, Transcript, Turn

__all__ = [
    "Check",
    "ExpectKey",
    "Expectation",
    "Problem",
    "keyed",
    "no_call_checks",
    "no_evaluators",
    "no_greeting_checks",
    "no_result_checks",
    "no_turn_checks",
    "string_list",
    "text_problems",
    "unobserved",
]

Problem: TypeAlias = tuple[tuple[str | int, ...], str]
"""A problem in a YAML value: the path inside the value (``(0,)`` for its first item) and what
is wrong, with the fix."""

Check: TypeAlias = Callable[[Any], Iterable[Problem]]
"""A check of a YAML value that the JSON Schema cannot express (a regex that compiles)."""


def no_evaluators(expect: Expect, judge_settings: JudgeSettings | None = None) -> list[Any]:
    """The default `Expectation.checks` / `Expectation.judges`: nothing."""
    return []


def no_greeting_checks(transcript: Transcript) -> list[Any]:
    """The default `Expectation.greeting_checks`: nothing."""
    return []


def no_turn_checks(turn: Turn) -> list[Any]:
    """The default `Expectation.turn_checks`: nothing."""
    return []


def no_result_checks(transcript: Transcript) -> list[Any]:
    """The default `Expectation.result_checks`: nothing."""
    return []


def no_call_checks(transcript: Transcript) -> list[Any]:
    """The default `Expectation.call_checks`: nothing."""
    return []


def keyed(
    evaluator: Any, key: str, *, scope: Literal["expect", "turn", "transcript"] = "expect"
) -> Any:
    """``evaluator``, as the check of ``key``, so its verdicts name the key and, for YAML, its
    line: an ``expect:`` key (``reply_contains_all``; ``tool_calls_args[1]`` for one entry of
    a list), a key of the turn itself (``scope="turn"``: ``interrupt``), or a top-level key of
    the transcript (``scope="transcript"``: ``greeting``)."""
    where = f"expect.{key}" if scope == "expect" else key
    return with_source(evaluator, CheckSource(where, in_turn=scope != "transcript"))


def string_list() -> dict[str, Any]:
    """The schema of a list of strings, the shape of most ``expect`` keys."""
    return {"type": "array", "items": {"type": "string"}}


@dataclass(frozen=True, slots=True, kw_only=True)
class ExpectKey:
    """One key under a turn's ``expect:``, and the `Expect` field of the same name it fills (or,
    listed in `Expectation.transcript_keys`, a top-level transcript key and its `Transcript`
    field).

    The YAML value is turned into the field's value by the typed serializer, following the type
    hint of the `Expect` field (a list of strings, a `JudgeConfig`, ...).
    """

    name: str
    """The YAML key, which is also the `Expect` field name."""
    schema: Mapping[str, Any]
    """JSON Schema (draft 2020-12) of the value, without ``description``."""
    description: str
    """One or two sentences saying when the check passes. It becomes the schema's description
    (editors show it on hover) and the key's row in the docs table."""
    example: Any
    """A valid value, exercised by the tests: it must validate, load and build an evaluator."""
    check: Check | None = None
    """A check the schema cannot express (a regex that compiles), run on every transcript
    (`pytest_agent_eval._problems`): the loader adds file and line, the runner the turn."""
    yaml_fix: str = ""
    """How to fix what ``check`` finds in a YAML file; the loader adds it to the message."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Expectation:
    """A family of ``expect`` keys checked together, and how to build their evaluators.

    Evaluators come in two phases: ``checks`` (deterministic, cheap) for every expectation in
    registry order, then ``judges`` (LLM calls: slow and paid) in registry order, then the
    user's own ``Expect.evaluators``. Both return an empty list when the turn sets none of the
    keys; a key that is set must produce an evaluator, or it would pass without being checked.
    """

    name: str
    """A short name for the family (the module name)."""
    keys: tuple[ExpectKey, ...]
    """The YAML keys, in the order the schema and the docs list them."""
    checks: Callable[[Expect], list[Any]] = no_evaluators
    """The deterministic evaluators for a turn's `Expect`."""
    judges: Callable[[Expect, JudgeSettings | None], list[Any]] = no_evaluators
    """The LLM-judge evaluators for a turn's `Expect`, with the session's judge settings."""
    defs: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    """Schema definitions the keys refer to as ``#/$defs/NAME``."""
    transcript_keys: tuple[ExpectKey, ...] = ()
    """Keys at the top level of a transcript, next to ``turns:``; each fills the `Transcript`
    field of the same name (added after every existing field, defaulting to None)."""
    greeting_checks: Callable[[Transcript], list[Any]] = no_greeting_checks
    """Checks of what the agent said before turn 1, for a transcript's top-level keys. Each has
    ``evaluate(greeting: Greeting | None) -> EvalResult``; None means the adapter could not
    observe a greeting, which must never pass."""
    turn_keys: tuple[ExpectKey, ...] = ()
    """Keys of a turn itself, next to ``user:`` and ``expect:`` (``interrupt``), for what is
    both an input and a check; each fills the `Turn` field of the same name."""
    turn_checks: Callable[[Turn], list[Any]] = no_turn_checks
    """Evaluators of a turn from its turn-level keys; they run with the turn's deterministic
    checks (``evaluate(ctx: TurnContext)``)."""
    result_checks: Callable[[Transcript], list[Any]] = no_result_checks
    """Checks of the whole result of all runs (``latency_p95_ms_max``), from top-level keys.
    Each has ``evaluate(result: TranscriptResult) -> EvalResult``; the transcript passes only
    when every one passes."""
    call_checks: Callable[[Transcript], list[Any]] = no_call_checks
    """Checks of one whole call, once it is over (``call_expect``), from top-level keys. Each
    has ``evaluate(run: RunResult) -> EvalResult``; their verdicts are the run's
    ``evaluations``, beside a simulation's criteria."""
