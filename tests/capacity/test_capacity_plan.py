"""The capacity plan: steps, budgets and the [tool.agent_eval.capacity] table, with the errors
bad input gets."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._capacity._plan import (
    CapacityPlan,
    parse_plan_table,
    parse_steps,
    ramp_steps,
)
from pytest_agent_eval._config import parse_settings
from pytest_agent_eval.errors import ConfigError


def test_the_ramp_doubles_up_to_its_bound_which_is_always_the_last_step() -> None:
    assert ramp_steps(1) == (1,)
    assert ramp_steps(16) == (1, 2, 4, 8, 16)
    assert ramp_steps(12) == (1, 2, 4, 8, 12)


@pytest.mark.parametrize("bound", [0, -3, 5000])
def test_a_ramp_bound_out_of_range_is_refused(bound: int) -> None:
    with pytest.raises(ConfigError, match="max_sessions must be between 1 and 1024"):
        ramp_steps(bound)


def test_steps_are_read_sorted_and_distinct_from_text_or_a_list() -> None:
    assert parse_steps("4, 1,2,2", "--steps") == (1, 2, 4)
    assert parse_steps([8, 3], "steps") == (3, 8)


@pytest.mark.parametrize("text", ["1,two", "0,1", "", "1.5", "-2"])
def test_bad_steps_name_where_they_came_from(text: str) -> None:
    with pytest.raises(ConfigError, match=r"^--steps: "):
        parse_steps(text, "--steps")


def test_the_table_gives_plan_values_with_paths_under_the_rootdir(tmp_path: Path) -> None:
    values = parse_plan_table(
        {
            "max_sessions": 8,
            "repeats": 2,
            "p95_latency_ms": 1500,
            "loop_lag_ms": 50.5,
            "min_sessions_per_core": 4,
            "results_path": "out/capacity.json",
            "speed": "realtime",
            "cpu_by_component": True,
        },
        rootdir=tmp_path,
        source="[tool.agent_eval.capacity]",
    )
    plan = CapacityPlan(rootdir=tmp_path, **values)
    assert plan.steps == (1, 2, 4, 8)
    assert plan.repeats == 2
    assert plan.p95_latency_ms == 1500.0
    assert plan.min_sessions_per_core == 4.0
    assert plan.json_path == tmp_path / "out" / "capacity.json"
    assert plan.speed == 1.0
    assert plan.cpu_by_component is True
    assert CapacityPlan(rootdir=tmp_path).cpu_by_component is False  # its CPU lowers the knee


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"max_session": 4}, "unknown key 'max_session'"),
        ({"repeats": True}, "'repeats' must be a whole number"),
        ({"loop_lag_ms": "fast"}, "'loop_lag_ms' must be a number"),
        ({"steps": "1,2"}, "'steps' must be a list"),
        ({"steps": [1, 2], "max_sessions": 4}, "either 'steps' or 'max_sessions'"),
        ({"agent": ""}, "'agent' must be a non-empty string"),
        ({"cpu_by_component": "yes"}, "'cpu_by_component' must be true or false"),
    ],
)
def test_a_bad_table_is_refused_with_the_key(
    tmp_path: Path, table: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_plan_table(
            table, rootdir=tmp_path, source="pyproject.toml [tool.agent_eval.capacity]"
        )


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"repeats": 0}, "repeats must be >= 1"),
        ({"p95_latency_ms": 0.0}, "p95_latency_ms must be > 0"),
        ({"speed": 0.0}, "speed must be above 0"),
        ({"steps": (2, 1)}, "ascending and distinct"),
        ({"min_sessions_per_core": -1.0}, "min_sessions_per_core must be >= 0"),
        *(  # a share of the worker's CPU: above 0, at most 1
            (
                {"worker": Path("worker.py"), "agent_name": "a", "load_threshold": bad},
                r"load_threshold must be > 0 and <= 1 \(the worker's load_threshold",
            )
            for bad in (float("inf"), 5.0, 0.0)
        ),
        (  # the faults would be installed here, never in the worker's job processes
            {"worker": Path("worker.py"), "agent_name": "a", "fault_rate": 0.05},
            r"--fault-rate injects faults .* --worker runs the agent in the worker's own job",
        ),
    ],
)
def test_a_plan_with_impossible_values_is_refused(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        CapacityPlan(rootdir=tmp_path, **changes)  # type: ignore[arg-type]


def test_the_eval_settings_accept_the_capacity_table_without_a_warning(tmp_path: Path) -> None:
    settings, warnings = parse_settings(
        {"runs": 2, "capacity": {"max_sessions": 4}}, rootdir=tmp_path
    )
    assert warnings == []
    assert settings.runs == 2
