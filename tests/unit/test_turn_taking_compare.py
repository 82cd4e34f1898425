"""``agent-eval compare`` on turn-taking metrics and failure causes, from hand-written results
files: which way each metric is worse, when two 95% intervals separate, what fails CI, and a
``turn_taking`` record that is not one this package writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_agent_eval.__main__ import main
from pytest_agent_eval._report._causes import cause_change_rows
from pytest_agent_eval._report._turn_taking import MetricChange
from pytest_agent_eval.models._turn_taking import Metric


def _metric(name: str, value: float | None, interval: tuple[float, float] | None) -> Metric:
    unit = "ms" if "_ms_" in name else "ratio"
    return Metric(name=name, value=value, count=10, interval=interval, unit=unit)


@pytest.mark.parametrize(
    ("name", "base", "new", "verdict"),
    [
        # A takeover rate, a latency, the overlap: higher is worse.
        ("pause_takeover_rate", (0.0, 0.0, 0.28), (0.8, 0.49, 0.94), "regressed"),
        ("pause_takeover_rate", (0.8, 0.49, 0.94), (0.0, 0.0, 0.28), "improved"),
        ("end_of_turn_latency_ms_p50", (550, 510, 560), (2550, 2510, 2560), "regressed"),
        # The yield and recovery rates: lower is worse.
        ("barge_in_yield_rate", (1.0, 0.72, 1.0), (0.2, 0.06, 0.51), "regressed"),
        ("false_interruption_recovery_rate", (0.0, 0.0, 0.28), (0.8, 0.49, 0.94), "improved"),
        # Overlapping intervals, and touching ones, are within noise whatever the values.
        ("unanswered_rate", (0.0, 0.0, 0.28), (0.2, 0.06, 0.51), "within noise"),
        ("end_of_turn_latency_ms_p95", (600, 500, 600), (700, 600, 700), "within noise"),
        ("overlap_ratio", (0.1, None, None), (0.9, None, None), "no interval"),
        # A zero-width interval (one value, or all equal) says nothing about the noise.
        ("end_of_turn_latency_ms_p50", (550, 550, 550), (551, 551, 551), "too few samples"),
        ("end_of_turn_latency_ms_p95", (600, 500, 600), (None, None, None), "not comparable"),
    ],
)
def test_a_metric_changes_only_when_its_intervals_separate_on_its_worse_or_better_side(
    name: str,
    base: tuple[float | None, float | None, float | None],
    new: tuple[float | None, float | None, float | None],
    verdict: str,
) -> None:
    def metric(v: tuple[float | None, float | None, float | None]) -> Metric:
        value, low, high = v
        return _metric(name, value, None if low is None or high is None else (low, high))

    change = MetricChange("turns[pause]", name, metric(base), metric(new))
    assert change.verdict == verdict


def _entry(metrics: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    return {
        "key": "evals/turns.yaml::turns[short_answer]",
        "label": "turns[short_answer]",
        "runs": 1,
        "passed_runs": 1,
        "verdict": "passed",
        "turn_taking": {"category": "short_answer", "metrics": metrics},
        **extra,
    }


def _write(path: Path, *entries: dict[str, Any]) -> str:
    path.write_text(json.dumps({"schema_version": 1, "evals": list(entries)}))
    return str(path)


def _latency(value: float, low: float, high: float) -> dict[str, Any]:
    return {
        "name": "end_of_turn_latency_ms_p50",
        "value": value,
        "count": 6,
        "hits": None,
        "interval": [low, high],
        "unit": "ms",
    }


UNANSWERED = {
    "name": "unanswered_rate",
    "value": 0.0,
    "count": 6,
    "hits": 0,
    "interval": [0.0, 0.39],
    "unit": "ratio",
}


def test_a_separated_regression_fails_ci_and_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = _write(tmp_path / "base.json", _entry([_latency(550, 510, 560), UNANSWERED]))
    new = _write(tmp_path / "new.json", _entry([_latency(2550, 2510, 2560), UNANSWERED]))
    page = tmp_path / "c.md"

    assert main(["compare", base, new, "--markdown", str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert (
        "turn-taking: 1 regressed, 0 improved, 1 within noise, 0 too few samples, 0 no interval, "
        "0 not comparable "
        "(a change when the 95% intervals separate)"
    ) in out
    [latency] = [line for line in out if "end_of_turn_latency_ms_p50" in line]
    assert latency.split("  ")[0] == "turns[short_answer]"
    for cell in ("550 ms", "2550 ms", "+2000 ms", "510 ms–560 ms", "2510 ms–2560 ms"):
        assert cell in latency
    assert latency.split()[-2:] == ["separate", "regressed"]
    [unanswered] = [line for line in out if "unanswered_rate" in line]
    assert unanswered.split()[-3:] == ["overlap", "within", "noise"]
    assert (
        "| turns[short_answer] | end_of_turn_latency_ms_p50 | 550 ms | 2550 ms | +2000 ms | "
        "510 ms–560 ms | 2510 ms–2560 ms | separate | regressed |"
    ) in page.read_text()

    # The evals themselves passed both times: only the metric fails the step, by name.
    assert main(["compare", base, new, "--fail-on-regression"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == (
        "agent-eval compare: turn-taking regressed: turns[short_answer] "
        "end_of_turn_latency_ms_p50: 550 ms (510 ms–560 ms) -> 2550 ms (2510 ms–2560 ms), "
        "higher is worse"
    )
    # The other way round it improved: nothing fails.
    assert main(["compare", new, base, "--fail-on-regression"]) == 0
    assert "turn-taking: 0 regressed, 1 improved" in capsys.readouterr().out


def test_a_turn_taking_record_this_package_did_not_write_is_refused_naming_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path / "good.json", _entry([UNANSWERED]))
    bad = _write(tmp_path / "bad.json", _entry([{**UNANSWERED, "count": "three"}]))

    assert main(["compare", good, bad]) == 2
    assert capsys.readouterr().err.strip() == (
        f"agent-eval compare: new {bad}: eval evals/turns.yaml::turns[short_answer]: "
        "turn_taking.metrics[0].count: expected an integer, got str 'three'; not a results file "
        "this version wrote: write it again with --agent-eval-results"
    )
    nameless = _write(tmp_path / "nameless.json", _entry([{"value": 1}]))
    assert main(["compare", nameless, good]) == 2
    assert "base " + nameless + ": " in capsys.readouterr().err


def test_fewer_than_five_samples_are_too_few_to_call_a_change() -> None:
    def latency(value: float, count: int) -> Metric:
        name = "end_of_turn_latency_ms_p50"
        return Metric(name=name, value=value, count=count, interval=(value, value + 5), unit="ms")

    name = "end_of_turn_latency_ms_p50"
    assert MetricChange("t", name, latency(550, 4), latency(2550, 10)).verdict == "too few samples"
    assert MetricChange("t", name, latency(550, 5), latency(2550, 5)).verdict == "regressed"


def test_the_failure_causes_side_by_side_cause_by_cause() -> None:
    def entry(name: str, *causes: str) -> dict[str, Any]:
        captures = [{"attribution": {"cause": c}} for c in causes]
        return {"transcript_id": name, "captures": captures}

    base = {"evals": [entry("booking", "hearing", "hearing"), entry("menu", "tool")]}
    new = {"evals": [entry("booking", "agent_logic"), entry("menu", "tool")]}
    assert cause_change_rows(base, new) == [
        ["tool", "1", "1", "0"],
        ["agent_logic", "0", "1", "+1"],
        ["hearing", "2", "0", "-2"],
        ["total", "3", "2", "-1"],
    ]
    assert cause_change_rows({"evals": []}, {"evals": [entry("menu")]}) == []
