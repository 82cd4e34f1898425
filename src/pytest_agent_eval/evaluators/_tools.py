"""Deterministic checks on the tool calls of a turn: which, in what order, with what arguments."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from .._text import short_repr
from ..models import EvalResult, ToolCall, TurnContext
from ._base import DeterministicEvaluator, shorten, unobserved

__all__ = [
    "ToolCallArgsEvaluator",
    "ToolCallEvaluator",
    "args_differences",
    "describe_calls",
    "is_subsequence",
    "made_calls",
    "refusals",
]


def describe_calls(calls: Sequence[ToolCall]) -> str:
    """``book(party=2), notify()``, or ``no tool calls``: what reasons show as "seen"; a call
    the framework refused reads ``book(...) [refused]``."""
    if not calls:
        return "no tool calls"
    parts = []
    for call in calls:
        args = getattr(call, "args", None)
        rendered = "" if not args else json.dumps(args, sort_keys=True, default=str)
        part = f"{call}({shorten(rendered, 120)})" if rendered else f"{call}()"
        parts.append(part + (" [refused]" if getattr(call, "refused", False) else ""))
    return ", ".join(parts)


def made_calls(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The calls that were made: those the framework refused (not offered at that moment,
    unknown) ran nothing, so no check counts them as the agent calling the tool."""
    return [c for c in calls if not getattr(c, "refused", False)]


def refusals(calls: Sequence[ToolCall], names: Sequence[str]) -> str:
    """`` (the framework refused the call to book: 'not currently available')`` for each of
    ``names`` that was only refused, or "": what a "not called" reason adds so it does not
    read as if the model never tried."""
    made = {str(c) for c in made_calls(calls)}
    notes = []
    for name in dict.fromkeys(names):
        refused = [c for c in calls if getattr(c, "refused", False) and str(c) == name]
        if refused and name not in made:
            why = refused[0].error or "no reason given"
            notes.append(f"the framework refused the call to {name} ({shorten(why, 160)!r})")
    return f"; {'; '.join(notes)}" if notes else ""


def is_subsequence(wanted: Sequence[str], seen: Sequence[str]) -> bool:
    """True when ``wanted`` appears in ``seen`` in order, gaps allowed."""
    position = iter(seen)
    return all(any(name == s for s in position) for name in wanted)


@dataclass(init=False)
class ToolCallEvaluator(DeterministicEvaluator):
    """Which tools were (not) called in the turn, optionally in order.

    Args:
        include: Tool names that must be called (``must_include`` is the same, by its
            earlier name).
        exclude: Tool names that must not be called (``must_exclude`` likewise).
        ordered: If True, ``include`` must appear in this order (a subsequence of the calls).
        name: Display name in results.

    Raises:
        TypeError: When a list is given under both of its names.
    """

    include: Sequence[str] = field(default_factory=list)
    exclude: Sequence[str] = field(default_factory=list)
    ordered: bool = False
    name: str = "tool_calls"

    def __init__(
        self,
        include: Sequence[str] | None = None,
        exclude: Sequence[str] | None = None,
        ordered: bool = False,
        name: str = "tool_calls",
        *,
        must_include: Sequence[str] | None = None,
        must_exclude: Sequence[str] | None = None,
    ) -> None:
        self.include = list(_either("include", include, "must_include", must_include))
        self.exclude = list(_either("exclude", exclude, "must_exclude", must_exclude))
        self.ordered = ordered
        self.name = name

    @property
    def must_include(self) -> Sequence[str]:
        """``include``, under the name the earlier package used."""
        return self.include

    @property
    def must_exclude(self) -> Sequence[str]:
        """``exclude``, under the name the earlier package used."""
        return self.exclude

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Check included, excluded and ordered tool names against the turn's calls."""
        if ctx.tool_calls_unobserved:
            return unobserved(self.name, ctx.tool_calls_unobserved)
        names = [str(c) for c in made_calls(ctx.tool_calls)]
        failures: list[str] = []
        missing = [n for n in self.include if n not in names]
        if missing:
            failures.append(
                f"expected tool calls not made: {missing!r}{refusals(ctx.tool_calls, missing)}"
            )
        forbidden = [n for n in self.exclude if n in names]
        if forbidden:
            failures.append(f"forbidden tool calls made: {forbidden!r}")
        # The agent chose a forbidden tool even when the framework then refused to run it:
        # the decision is what the key checks, so an attempt fails it too.
        attempted = [
            n
            for n in self.exclude
            if n not in names
            and any(getattr(c, "refused", False) and str(c) == n for c in ctx.tool_calls)
        ]
        if attempted:
            failures.append(
                f"forbidden tool calls attempted: {attempted!r}{refusals(ctx.tool_calls, attempted)}"
            )
        if self.ordered and not missing and not is_subsequence(list(self.include), names):
            failures.append(f"tool calls not in the order {list(self.include)!r}")
        if failures:
            return EvalResult(
                False, "; ".join(failures) + f" (saw {describe_calls(ctx.tool_calls)})", self.name
            )
        return EvalResult(True, f"tool calls ok ({describe_calls(ctx.tool_calls)})", self.name)


def _either(
    name: str, value: Sequence[str] | None, alias: str, alias_value: Sequence[str] | None
) -> Sequence[str]:
    if value is not None and alias_value is not None:
        raise TypeError(f"ToolCallEvaluator got both {name}= and {alias}=; they are one list")
    chosen = value if value is not None else alias_value
    if isinstance(chosen, str):
        raise TypeError(f"ToolCallEvaluator {name}= takes a list of tool names, not one string")
    return chosen or []


def _args_match(expected: Mapping[str, Any], actual: Mapping[str, Any], mode: str) -> bool:
    if mode == "exact":
        return dict(actual) == dict(expected)
    return all(k in actual and _value_match(v, actual[k]) for k, v in expected.items())


def _value_match(expected: Any, actual: Any) -> bool:
    # Nested mappings match as subsets too, so `args: {guest: {name: Ana}}` ignores extra keys.
    if isinstance(expected, Mapping) and isinstance(actual, Mapping):
        return all(k in actual and _value_match(v, actual[k]) for k, v in expected.items())
    return bool(expected == actual)


_MAX_DIFFERENCES = 6
"""Differences listed per call; a call that differs in more says how many others."""
_VALUE_CHARS = 60
"""Each expected or seen value in a difference is cut past this (its path never is)."""


def _shown(value: Any) -> str:
    return short_repr(value, _VALUE_CHARS)


def args_differences(
    expected: Mapping[str, Any], actual: Mapping[str, Any], mode: str, path: str = ""
) -> list[str]:
    """Each way ``actual`` fails to match ``expected``, one phrase per key path, nested keys
    and list items included: ``city: expected 'Paris', got 'paris'``,
    ``guest.name: missing (expected 'Ana')``, ``note: not expected (got 'x')`` in exact mode.
    Empty when they match."""
    out: list[str] = []
    for key, want in expected.items():
        at = f"{path}.{key}" if path else str(key)
        if key not in actual:
            out.append(f"{at}: missing (expected {_shown(want)})")
            continue
        out += _value_differences(want, actual[key], mode, at)
    if mode == "exact":
        out += [
            f"{path}.{key}: not expected (got {_shown(value)})"
            if path
            else f"{key}: not expected (got {_shown(value)})"
            for key, value in actual.items()
            if key not in expected
        ]
    return out


def _value_differences(want: Any, got: Any, mode: str, at: str) -> list[str]:
    if isinstance(want, Mapping) and isinstance(got, Mapping):
        return args_differences(want, got, mode, at)
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got) and want != got:
        return [
            d
            for i, (w, g) in enumerate(zip(want, got, strict=True))
            for d in _value_differences(w, g, "exact", f"{at}[{i}]")
        ]
    if want == got:
        return []
    return [f"{at}: expected {_shown(want)}, got {_shown(got)}"]


def _call_differences(expected: Mapping[str, Any], actual: Mapping[str, Any], mode: str) -> str:
    found = args_differences(expected, actual, mode)
    shown = "; ".join(found[:_MAX_DIFFERENCES])
    more = len(found) - _MAX_DIFFERENCES
    return shown + (f"; and {more} more" if more > 0 else "")


@dataclass
class ToolCallArgsEvaluator(DeterministicEvaluator):
    """The arguments of a tool call; passes when any call to ``tool`` matches.

    Args:
        tool: The tool name.
        args: Expected arguments.
        mode: ``"subset"`` (expected items must appear; nested mappings too) or ``"exact"``.
        name: Display name in results.
    """

    tool: str
    args: Mapping[str, Any]
    mode: Literal["subset", "exact"] = "subset"
    name: str = ""

    def __post_init__(self) -> None:
        if self.mode not in ("subset", "exact"):
            raise ValueError(f"mode must be 'subset' or 'exact', got {self.mode!r}")
        if not self.name:
            self.name = f"tool_calls_args[{self.tool}]"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Pass when any call to ``tool`` has matching arguments."""
        if ctx.tool_calls_unobserved:
            return unobserved(self.name, ctx.tool_calls_unobserved)
        calls = [c for c in made_calls(ctx.tool_calls) if str(c) == self.tool]
        want = json.dumps(dict(self.args), sort_keys=True, default=str)
        if not calls:
            refused = refusals(ctx.tool_calls, [self.tool])
            return EvalResult(
                False,
                f"{self.tool} was not called, so its arguments ({self.mode} of {want}) could not "
                f"match{refused} (saw {describe_calls(ctx.tool_calls)})",
                self.name,
            )
        captured = [c for c in calls if c.args is not None]
        if not captured:
            return EvalResult(
                False,
                f"{self.tool} was called but its arguments were not captured; return "
                "ToolCall(name, args) from the agent or use an adapter that records them",
                self.name,
            )
        if any(_args_match(self.args, c.args or {}, self.mode) for c in captured):
            return EvalResult(True, f"{self.tool} called with {self.mode} of {want}", self.name)
        # Per key: what was expected and what each call had, before what was seen (which may
        # be cut), so a mismatch deep in nested arguments is never cut off.
        if len(captured) == 1:
            differences = _call_differences(self.args, captured[0].args or {}, self.mode)
        else:
            differences = "; ".join(
                f"call {number}: {_call_differences(self.args, call.args or {}, self.mode)}"
                for number, call in enumerate(captured[:3], start=1)
            ) + (f"; and {len(captured) - 3} more call(s)" if len(captured) > 3 else "")
        return EvalResult(
            False,
            f"no call to {self.tool} has matching arguments ({self.mode}): {differences} "
            f"(saw {describe_calls(calls)})",
            self.name,
        )
