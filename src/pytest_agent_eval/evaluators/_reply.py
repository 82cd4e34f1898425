"""Deterministic checks on text: the reply (substrings, regexes) and, for voice, what was heard."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from .._text import patterns_as_written
from ..errors import AgentEvalError
from ..models import EvalResult, TurnContext
from ._base import DeterministicEvaluator, shorten

__all__ = ["ContainsEvaluator", "InvalidPatternError", "LatencyEvaluator"]


class InvalidPatternError(AgentEvalError, re.error, ValueError):
    """A regex that does not compile: one of our errors, a ``re.error`` (as our loader and
    runner catch it) and a ``ValueError`` (as the earlier package raised it)."""


def _compile(pattern: str, flags: int) -> re.Pattern[str]:
    try:
        return re.compile(pattern, flags)
    except re.error as exc:
        raise InvalidPatternError(exc.msg, pattern=pattern, pos=exc.pos) from exc


@dataclass
class ContainsEvaluator(DeterministicEvaluator):
    """Substring and regex checks, case-insensitive by default; every failed check is reported.

    Args:
        any_of: At least one of these substrings must appear.
        all_of: All of these substrings must appear.
        matches_any: At least one of these regexes must match (``re.search``).
        matches_all: All of these regexes must match.
        case_sensitive: If True, substrings and regexes must match case exactly.
        target: ``"reply"`` (default) or ``"heard"`` (what a voice agent's STT transcribed).
        name: Display name in results.

    Raises:
        InvalidPatternError: At construction, for a pattern that does not compile (both a
            ``re.error`` and a ``ValueError``).
    """

    any_of: Sequence[str] = field(default_factory=list)
    all_of: Sequence[str] = field(default_factory=list)
    matches_any: Sequence[str] = field(default_factory=list)
    matches_all: Sequence[str] = field(default_factory=list)
    case_sensitive: bool = False
    target: Literal["reply", "heard"] = "reply"
    name: str = ""

    def __post_init__(self) -> None:
        # Compile once; a bad pattern is the author's error and should surface at construction.
        flags = 0 if self.case_sensitive else re.IGNORECASE
        self._any = [_compile(p, flags) for p in self.matches_any]
        self._all = [_compile(p, flags) for p in self.matches_all]
        if not self.name:
            self.name = "reply" if self.target == "reply" else "heard"

    def _fold(self, text: str) -> str:
        return text if self.case_sensitive else text.lower()

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Run every configured check on the reply (or heard text) and report all failures."""
        text = ctx.reply if self.target == "reply" else ctx.heard
        if text is None:
            why = (
                f"turn {ctx.turn_index + 1} is a text turn (no audio:), so nothing is heard"
                if ctx.audio is None
                else "this adapter does not report speech recognition (heard_* checks need a "
                "voice adapter such as LiveKitAdapter)"
            )
            # Not observed, so not a "no": errored, naming why (it never passes either).
            return EvalResult(False, f"nothing was heard: {why}", name=self.name, errored=True)
        folded = self._fold(text)
        failures: list[str] = []
        label = self.target
        if self.any_of and not any(self._fold(s) in folded for s in self.any_of):
            failures.append(f"{label} contains none of {list(self.any_of)!r}")
        missing = [s for s in self.all_of if self._fold(s) not in folded]
        if missing:
            failures.append(f"{label} is missing {missing!r}")
        if self._any and not any(p.search(text) for p in self._any):
            failures.append(
                f"{label} matches none of the patterns {patterns_as_written(self.matches_any)}"
            )
        unmatched = [p.pattern for p in self._all if not p.search(text)]
        if unmatched:
            failures.append(f"{label} does not match {patterns_as_written(unmatched)}")
        if failures:
            seen = f"{label} was {shorten(text)!r}"
            return EvalResult(False, "; ".join(failures) + f" ({seen})", name=self.name)
        return EvalResult(True, f"{label} text checks passed", name=self.name)


@dataclass
class LatencyEvaluator(DeterministicEvaluator):
    """Voice turns: end of user speech to first reply text must stay within a budget.

    Args:
        max_latency_ms: The budget in milliseconds.
        name: Display name in results.
    """

    max_latency_ms: float
    name: str = "latency"

    def _check(self, ctx: TurnContext) -> EvalResult:
        """Compare the measured first-reply latency with the budget."""
        if ctx.latency_s is None:
            if not ctx.reply:  # observed: nothing came, which fails the budget
                return EvalResult(
                    False,
                    "no latency was measured: the agent produced no reply text",
                    name=self.name,
                )
            # Not observed by this adapter: errored, naming why (it never passes either).
            return EvalResult(
                False,
                "no latency was measured: max_latency_ms needs an adapter that measures it "
                "(LiveKitAdapter does)",
                name=self.name,
                errored=True,
            )
        measured_ms = ctx.latency_s * 1000
        if measured_ms > self.max_latency_ms:
            return EvalResult(
                False,
                f"first reply after {measured_ms:.0f} ms > max_latency_ms {self.max_latency_ms:g}",
                name=self.name,
            )
        return EvalResult(
            True,
            f"first reply after {measured_ms:.0f} ms <= {self.max_latency_ms:g}",
            name=self.name,
        )
