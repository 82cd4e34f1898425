"""The paired significance test of a comparison (runs paired by number), against values worked
by hand from the binomial distribution, and how a comparison picks it over Fisher's."""

from __future__ import annotations

import pytest

from pytest_agent_eval._report._baseline import compare_results_files, mcnemar_exact_p


@pytest.mark.parametrize(
    ("lost", "gained", "p"),
    [
        (0, 0, 1.0),  # nothing flipped: no evidence of a change
        (10, 0, 2 / 1024),  # every run lost: 2 * 0.5**10
        (0, 10, 2 / 1024),  # and the mirror image
        (3, 0, 0.25),  # three runs can never be significant
        (5, 1, 2 * 7 / 64),  # 2 * (C(6,0) + C(6,1)) / 2**6
        (6, 1, 2 * 8 / 128),
        (4, 4, 1.0),  # as many gained as lost: the tail is past one half, capped at 1
    ],
)
def test_mcnemar_exact_p(lost: int, gained: int, p: float) -> None:
    assert mcnemar_exact_p(lost, gained) == pytest.approx(p)


def _entry(key: str, verdicts: list[str]) -> dict[str, object]:
    return {
        "key": key,
        "label": key,
        "verdict": "passed" if verdicts.count("passed") == len(verdicts) else "failed",
        "runs": len(verdicts),
        "passed_runs": verdicts.count("passed"),
        "captures": [{"run": i + 1, "verdict": v} for i, v in enumerate(verdicts)],
    }


def test_runs_paired_by_number_are_weighed_by_the_runs_that_flipped() -> None:
    """Ten runs then and now, each number with the same inputs: the seven that passed then and
    fail now decide (p = 2 / 2**7), the three that passed both times say nothing."""
    then = ["passed"] * 10
    now = ["failed"] * 7 + ["passed"] * 3
    comparison = compare_results_files(
        {"evals": [_entry("e", then)]}, {"evals": [_entry("e", now)]}, "base.json"
    )
    [change] = comparison.changes
    assert change.test == "mcnemar" and change.change == "regressed"
    assert change.p_value == pytest.approx(2 / 128)
    assert "McNemar's exact test on runs paired by number, p < 0.05" in comparison.headline
    # One run lost and one gained: a change of nothing, whatever the counts.
    swapped = compare_results_files(
        {"evals": [_entry("e", ["failed"] + ["passed"] * 9)]},
        {"evals": [_entry("e", ["passed"] * 9 + ["failed"])]},
        "base.json",
    )
    assert swapped.changes[0].p_value == 1.0 and swapped.changes[0].change == "unchanged"


def test_runs_that_do_not_pair_fall_back_to_fishers_test() -> None:
    """Ten runs then, five now (or a file without captures): nothing to pair, so the two sides
    are compared as samples."""
    then, now = _entry("e", ["passed"] * 10), _entry("e", ["failed"] * 5)
    comparison = compare_results_files({"evals": [then]}, {"evals": [now]}, "base.json")
    [change] = comparison.changes
    assert change.test == "fisher" and change.change == "regressed"
    assert "(Fisher's exact test, p < 0.05)" in comparison.headline
    bare = {k: v for k, v in then.items() if k != "captures"}
    both = compare_results_files(
        {"evals": [bare, _entry("f", ["passed"] * 4)]},
        {"evals": [_entry("e", ["passed"] * 10), _entry("f", ["passed"] * 4)]},
        "base.json",
    )
    assert [c.test for c in both.changes] == ["fisher", "mcnemar"]
    assert "Fisher's exact test where the runs differ" in both.headline
