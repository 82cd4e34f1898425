"""What the agent said before turn 1, against a transcript's ``greeting:`` text checks.

The evaluator the expectation registry builds for these keys
(`pytest_agent_eval._expectations._greeting`), kept here with every other evaluator class: the
registry is the one source of keys, schema and docs, and imports this package, never the
reverse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .._text import shorten
from ..models import EvalResult, Greeting, GreetingExpect
from ._base import text_problems, unobserved

__all__ = ["GreetingEvaluator"]


NOT_OBSERVED = (
    "this adapter does not report what the agent says before turn 1 (its conversations have "
    "no greeting() method); run the transcript with an adapter that observes greetings "
    "(LiveKitAdapter does), or remove 'greeting:'"
)


@dataclass
class GreetingEvaluator:
    """Checks the run's `Greeting` against a transcript's ``greeting:``.

    Args:
        expect: The checks.
        name: Display name in results.
    """

    expect: GreetingExpect
    name: str = "greeting"

    def __post_init__(self) -> None:
        # A bad pattern is the author's error: surface it before any run, not in every run.
        for pattern in (*self.expect.matches_any, *self.expect.matches_all):
            re.compile(pattern, re.IGNORECASE)

    async def evaluate(self, greeting: Greeting | None) -> EvalResult:
        """Pass when the greeting's text passes every check; errored when it was not observed."""
        return self._check(greeting)

    def _check(self, greeting: Greeting | None) -> EvalResult:
        if greeting is None:
            return unobserved(self.name, NOT_OBSERVED)
        expect = self.expect
        text = greeting.text
        problems = text_problems(
            text,
            "greeting",
            contains_any=expect.contains_any,
            contains_all=expect.contains_all,
            contains_none=expect.contains_none,
            matches_any=expect.matches_any,
            matches_all=expect.matches_all,
        )
        if problems:
            seen = (
                f"greeting was {shorten(text, 200)!r}"
                if text
                else "the agent said nothing before turn 1"
            )
            return EvalResult(False, "; ".join(problems) + f" ({seen})", name=self.name)
        return EvalResult(True, "greeting text checks passed", name=self.name)
