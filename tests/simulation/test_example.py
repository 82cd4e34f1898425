"""examples/simulations runs as its README says, and its checks bite."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ExampleProjects


def test_the_example_runs_live(pytester: pytest.Pytester, examples: ExampleProjects) -> None:
    examples.copy("simulations")
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/refund.yaml::broken_blender_refund PASSED*",
            "tests/evals/scenarios.yaml::Cancel_an_order PASSED*",
        ]
    )


def test_the_example_is_skipped_when_not_live(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    examples.copy("simulations")
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(skipped=2)


def test_an_agent_that_forgets_the_reference_fails_that_criterion(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    root = examples.copy("simulations")
    examples.edit(
        root / "tests" / "conftest.py",
        'f"I have refunded order {number}, reference RF-{number}."',
        'f"I have refunded order {number}."',
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*criteria[[]1[]] (refund.yaml:7) fail: Nothing in the conversation shows it.*"]
    )
    # The caller still hung up (its goal, a refund, was reached): the judge found the gap.
    assert "ended: by the caller after turn 2 (goal reached)" in result.stdout.str()
