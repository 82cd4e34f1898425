"""The example projects in examples/ run, offline, through the real plugin."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ExampleProjects

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize(("name", "evals"), [("pydantic-ai", 1), ("openai", 2)])
def test_example_passes(
    pytester: pytest.Pytester, examples: ExampleProjects, name: str, evals: int
) -> None:
    examples.copy(name)
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=evals)
    result.stdout.fnmatch_lines([f"{evals}/{evals} evals passed"])


@pytest.mark.parametrize("name", ["pydantic-ai", "openai"])
def test_example_catches_a_wrong_tool_argument(
    pytester: pytest.Pytester, examples: ExampleProjects, name: str
) -> None:
    root = examples.copy(name)
    examples.edit(root / "tests/evals/booking.yaml", "reference: BK-1001", "reference: BK-1002")
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=0 if name == "pydantic-ai" else 1)
    result.stdout.fnmatch_lines(["*LLM eval failed: score=0.00 < threshold=1.00*"])
    result.stdout.fnmatch_lines(["*BK-1002*"])


def test_pydantic_ai_example_judge_says_no(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    root = examples.copy("pydantic-ai")
    examples.edit(root / "tests/offline_models.py", 'f"Booked! A table', 'f"Noted: a table')
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no confirmed reference*"])


def test_openai_example_judge_runs_on_the_local_server(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    root = examples.copy("openai")
    examples.edit(root / "tests/local_llm.py", "passed = bool(", "passed = not bool(")
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*no reference*"])
