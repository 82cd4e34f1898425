"""The example projects in examples/ run, offline, through the real plugin."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def use_example(pytester: pytest.Pytester, name: str) -> Path:
    shutil.copytree(
        EXAMPLES / name,
        pytester.path,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".agent_eval_cache"),
    )
    return pytester.path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new))


@pytest.mark.parametrize(("name", "evals"), [("pydantic-ai", 1), ("openai", 2)])
def test_example_passes(pytester: pytest.Pytester, name: str, evals: int) -> None:
    use_example(pytester, name)
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=evals)
    result.stdout.fnmatch_lines([f"{evals}/{evals} evals passed"])


@pytest.mark.parametrize("name", ["pydantic-ai", "openai"])
def test_example_catches_a_wrong_tool_argument(pytester: pytest.Pytester, name: str) -> None:
    root = use_example(pytester, name)
    edit(root / "tests/evals/booking.yaml", "reference: BK-1001", "reference: BK-1002")
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=0 if name == "pydantic-ai" else 1)
    result.stdout.fnmatch_lines(["*LLM eval failed: score=0.00 < threshold=1.00*"])
    result.stdout.fnmatch_lines(["*BK-1002*"])


def test_pydantic_ai_example_judge_says_no(pytester: pytest.Pytester) -> None:
    root = use_example(pytester, "pydantic-ai")
    edit(root / "tests/offline_models.py", 'f"Booked! A table', 'f"Noted: a table')
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*no confirmed reference*"])


def test_openai_example_judge_runs_on_the_local_server(pytester: pytest.Pytester) -> None:
    root = use_example(pytester, "openai")
    edit(root / "tests/local_llm.py", "passed = bool(", "passed = not bool(")
    result = pytester.runpytest_subprocess("--agent-eval-live", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*no reference*"])
