"""The baseline comparison's significance test against published values of Fisher's exact test."""

from __future__ import annotations

import math

import pytest

from pytest_agent_eval._report._baseline import fisher_exact_p


@pytest.mark.parametrize(
    ("table", "expected"),
    [
        # The lady tasting tea: 3 of 4 cups right, two-sided.
        (((3, 1), (1, 3)), 0.485714),
        # The textbook example (studying / not, men / women), two-sided.
        (((1, 9), (11, 3)), 0.002759),
        # All runs passed then, none now: 2 / C(20, 10).
        (((10, 0), (0, 10)), 2 / math.comb(20, 10)),
        # Nothing changed.
        (((5, 5), (5, 5)), 1.0),
    ],
)
def test_two_sided_p_values(table: tuple[tuple[int, int], ...], expected: float) -> None:
    (a_pass, a_fail), (b_pass, b_fail) = table
    assert fisher_exact_p(a_pass, a_fail, b_pass, b_fail) == pytest.approx(expected, rel=1e-3)


def test_the_test_is_symmetric_in_then_and_now() -> None:
    assert fisher_exact_p(9, 1, 4, 6) == pytest.approx(fisher_exact_p(4, 6, 9, 1))


def test_no_runs_is_no_evidence() -> None:
    assert fisher_exact_p(0, 0, 0, 0) == 1.0
