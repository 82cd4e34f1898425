"""The expectations a turn's ``expect:`` can hold, each defined once, in one module of this package.

`EXPECTATIONS` lists them in the order their evaluators run. From it come the ``expect`` part of
the transcript JSON Schema (`expect_schema`), the loader's extra checks (`expect_keys`), the
evaluators of a turn (`build_evaluators`) and the docs table (`pytest_agent_eval._schema`).

Adding an expectation (see ``reply_contains_none.py``, the smallest complete one):

1. write a module here declaring ``EXPECTATION``: its keys (name, schema fragment, description,
   example, optional extra check) and how it builds its evaluators (``checks`` and/or
   ``judges``); a new evaluator class goes in ``evaluators/_<name>.py`` (every evaluator
   class lives in `pytest_agent_eval.evaluators`, which never imports this package);
2. list it in `EXPECTATIONS` at the place its evaluators should run;
3. add one field per key to `Expect` in models/_inputs.py, after every existing field (it is
   positional), with an empty default;
4. run ``python -m pytest_agent_eval._schema`` to regenerate the shipped schema and the docs
   table;
5. add a test of its evaluator.

A key at the top level of a transcript (``greeting:``) goes in the module's
``transcript_keys`` instead, with a `Transcript` field appended after every existing one
(default None) and ``greeting_checks`` building its checks from the transcript.

The registry tests (tests/unit/test_expectations.py) check the rest: schema and docs current,
`Expect` fields matching the keys, every key validating, loading and building an evaluator.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..evaluators._base import source_of, with_source
from ..evaluators._judge_settings import JudgeSettings
from ..models import Expect, Transcript, Turn
from . import (
    _agents,
    _barge_in,
    _call_expect,
    _far_end,
    _greeting,
    _heard,
    _heard_wer,
    _judge,
    _keypad,
    _latency,
    _latency_percentiles,
    _reply_contains_none,
    _reply_text,
    _tool_args,
    _tool_calls,
    _tool_outcome,
)
from ._base import Expectation, ExpectKey

__all__ = [
    "EXPECTATIONS",
    "ExpectKey",
    "Expectation",
    "build_call_checks",
    "build_evaluators",
    "build_greeting_checks",
    "build_result_checks",
    "build_turn_checks",
    "expect_defs",
    "expect_keys",
    "expect_schema",
    "transcript_key_schemas",
    "transcript_keys",
    "turn_key_schemas",
    "turn_keys",
]

EXPECTATIONS: tuple[Expectation, ...] = (
    _reply_text.EXPECTATION,
    _reply_contains_none.EXPECTATION,
    _tool_calls.EXPECTATION,
    _judge.EXPECTATION,
    _tool_args.EXPECTATION,
    _tool_outcome.EXPECTATION,
    _agents.EXPECTATION,
    _heard.EXPECTATION,
    _heard_wer.EXPECTATION,
    _latency.EXPECTATION,
    _barge_in.EXPECTATION,
    _keypad.EXPECTATION,
    _far_end.EXPECTATION,
    _greeting.EXPECTATION,
    _latency_percentiles.EXPECTATION,
    _call_expect.EXPECTATION,
)
"""Every expectation, in evaluator order: the reply, then tools, then voice; judges after every
deterministic check (see `Expectation`)."""


def expect_keys() -> tuple[ExpectKey, ...]:
    """Every ``expect:`` key, in registry order."""
    return tuple(key for expectation in EXPECTATIONS for key in expectation.keys)


def transcript_keys() -> tuple[ExpectKey, ...]:
    """Every top-level transcript key an expectation declares (``greeting``), in registry order."""
    return tuple(key for expectation in EXPECTATIONS for key in expectation.transcript_keys)


def turn_keys() -> tuple[ExpectKey, ...]:
    """Every turn-level key an expectation declares (``interrupt``), in registry order."""
    return tuple(key for expectation in EXPECTATIONS for key in expectation.turn_keys)


def turn_key_schemas() -> dict[str, Any]:
    """The schema of each turn-level key, for a turn's ``properties``."""
    return {key.name: {**key.schema, "description": key.description} for key in turn_keys()}


def transcript_key_schemas() -> dict[str, Any]:
    """The schema of each top-level transcript key, for the transcript's ``properties``."""
    return {key.name: {**key.schema, "description": key.description} for key in transcript_keys()}


def expect_schema() -> dict[str, Any]:
    """The JSON Schema of a turn's ``expect:`` mapping (``#/$defs/expect``)."""
    return {
        "type": "object",
        "additionalProperties": False,
        "description": "Expectations for the agent's reply in this turn. All optional.",
        "properties": {
            key.name: {**key.schema, "description": key.description} for key in expect_keys()
        },
    }


def expect_defs() -> dict[str, Any]:
    """The schema definitions the expectations refer to (``#/$defs/...``).

    Raises:
        ValueError: When two expectations define the same name differently.
    """
    defs: dict[str, Any] = {}
    for expectation in EXPECTATIONS:
        for name, schema in expectation.defs.items():
            if name in defs and defs[name] != schema:
                raise ValueError(
                    f"expectation {expectation.name!r} redefines schema definition {name!r}"
                )
            defs[name] = schema
    return defs


def build_evaluators(
    expect: Expect, judge_settings: JudgeSettings | None = None, *, turn: Turn | None = None
) -> list[Any]:
    """The evaluators a turn's `Expect` asks for, in a stable order.

    Every expectation's deterministic checks first (reply, tools, voice; with ``turn``, its
    turn-level checks such as ``interrupt`` too), then every judge (the slow, paid ones), then
    the user's own ``expect.evaluators``. A judge among those that was
    built without ``settings`` (``JudgeEvaluator("rubric")``) runs with ``judge_settings``, so
    it uses the configured model, retries and timeout as a YAML judge does (and as the earlier
    package's judges did); the user's object itself is left as it was.
    """
    checks = [ev for expectation in EXPECTATIONS for ev in expectation.checks(expect)]
    if turn is not None:
        checks += build_turn_checks(turn)
    judges = [
        ev for expectation in EXPECTATIONS for ev in expectation.judges(expect, judge_settings)
    ]
    if turn is not None:
        # Each check's verdict names the line its key is written on (YAML transcripts).
        for check in (*checks, *judges):
            _locate(check, turn.locations)
    own = [_with_settings(ev, judge_settings) for ev in expect.evaluators]
    return [*checks, *judges, *own]


def _locate(check: Any, locations: dict[str, str]) -> Any:
    source = source_of(check)
    if source is not None and locations:
        with_source(check, source.at(locations))
    return check


def _with_settings(evaluator: Any, settings: JudgeSettings | None) -> Any:
    # Duck-typed (a judge has `settings` and `judge_settings`) so the judges module, and the
    # verdict machinery behind it, is not imported for turns without a judge.
    if (
        settings is None
        or not dataclasses.is_dataclass(evaluator)
        or isinstance(evaluator, type)
        or not hasattr(evaluator, "judge_settings")
        or getattr(evaluator, "settings", False) is not None
    ):
        return evaluator
    return dataclasses.replace(evaluator, settings=settings)


def build_turn_checks(turn: Turn) -> list[Any]:
    """The evaluators a turn's turn-level keys ask for (``interrupt``); they run with the
    deterministic checks of its ``expect``."""
    return [check for expectation in EXPECTATIONS for check in expectation.turn_checks(turn)]


def build_result_checks(transcript: Transcript) -> list[Any]:
    """The checks of the whole result that ``transcript`` asks for (``latency_p95_ms_max``).

    Each has ``evaluate(result: TranscriptResult) -> EvalResult``.
    """
    return [
        _locate(check, transcript.locations)
        for expectation in EXPECTATIONS
        for check in expectation.result_checks(transcript)
    ]


def build_greeting_checks(transcript: Transcript) -> list[Any]:
    """The checks of what the agent said before turn 1 that ``transcript`` asks for.

    Each has ``evaluate(greeting: Greeting | None) -> EvalResult``; the runner gives it the
    run's `Greeting`, or None when the adapter cannot observe one.
    """
    return [
        _locate(check, transcript.locations)
        for expectation in EXPECTATIONS
        for check in expectation.greeting_checks(transcript)
    ]


def build_call_checks(transcript: Transcript) -> list[Any]:
    """The checks of one whole call that ``transcript`` asks for (``call_expect``), run once
    the conversation is over.

    Each has ``evaluate(run: RunResult) -> EvalResult``.
    """
    return [
        _locate(check, transcript.locations)
        for expectation in EXPECTATIONS
        for check in expectation.call_checks(transcript)
    ]
