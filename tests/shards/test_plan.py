"""The shard planner on its own: a partition, the same whatever order the tests come in,
balanced by weight; the option's form; what a durations file gives."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from pytest_agent_eval._config import parse_shard
from pytest_agent_eval._shard import read_durations, split_by_weight
from pytest_agent_eval.errors import ConfigError


def test_every_test_goes_to_exactly_one_share_whatever_the_order() -> None:
    rng = random.Random(7)
    weights = [(f"t{i:04d}", rng.lognormvariate(0, 1)) for i in range(500)]
    shares, loads = split_by_weight(weights, 4)
    assert sorted(n for share in shares for n in share) == sorted(n for n, _ in weights)
    shuffled = weights[:]
    rng.shuffle(shuffled)
    assert split_by_weight(shuffled, 4) == (shares, loads)
    # Longest first keeps the heaviest share close to the mean.
    assert max(loads) / (sum(loads) / 4) < 1.01


def test_heaviest_first_each_to_the_lightest_share() -> None:
    shares, loads = split_by_weight([("a", 1), ("b", 5), ("c", 3), ("d", 3), ("e", 2)], 2)
    # b (5) to share 1; c (3) to share 2; d (3) to share 2 (3 < 5); e (2) to share 1 (5 < 6);
    # a (1) to share 2 (6 < 7).
    assert shares == [["b", "e"], ["c", "d", "a"]]
    assert loads == [7, 7]


def test_equal_weights_split_by_count_in_node_id_order() -> None:
    shares, _ = split_by_weight([(f"t{i}", 1.0) for i in range(7)], 3)
    assert shares == [["t0", "t3", "t6"], ["t1", "t4"], ["t2", "t5"]]


def test_more_shares_than_tests_leaves_some_empty() -> None:
    shares, loads = split_by_weight([("a", 2.0)], 3)
    assert shares == [["a"], [], []] and loads == [2.0, 0.0, 0.0]


@pytest.mark.parametrize(("text", "expected"), [("2/4", (2, 4)), (" 1/1 ", (1, 1)), (None, None)])
def test_the_shard_option(text: str | None, expected: tuple[int, int] | None) -> None:
    assert parse_shard(text) == expected


@pytest.mark.parametrize("text", ["0/4", "5/4", "1/0", "2-4", "a/b", "2/", "/4", "-1/4"])
def test_bad_shard_options_say_the_form(text: str) -> None:
    with pytest.raises(ConfigError, match=r"--agent-eval-shard .*(K must be between|write K/N)"):
        parse_shard(text)


def test_durations_from_a_results_file(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "evals": [
                    {"nodeid": "a.yaml::a", "verdict": "passed", "duration_s": 1.5},
                    # A Python test running two evals: both carry the test's time.
                    {"nodeid": "t.py::test_two", "verdict": "failed", "duration_s": 2.0},
                    {"nodeid": "t.py::test_two", "verdict": "passed", "duration_s": 2.0},
                    {"nodeid": "s.yaml::s", "verdict": "skipped", "duration_s": 0.0},
                    {"nodeid": "e.yaml::e", "verdict": "error", "duration_s": None},
                ],
            }
        )
    )
    durations, note = read_durations(path)
    assert durations == {"a.yaml::a": 1.5, "t.py::test_two": 2.0}
    assert note is None


def test_a_durations_file_that_is_not_there_yet(tmp_path: Path) -> None:
    durations, note = read_durations(tmp_path / "first-run.json")
    assert durations == {}
    assert (
        note == f"durations file {tmp_path / 'first-run.json'} not found: balanced by planned turns"
    )


def test_a_results_file_without_durations(tmp_path: Path) -> None:
    path = tmp_path / "old.json"
    path.write_text(
        json.dumps({"schema_version": 1, "evals": [{"nodeid": "a", "verdict": "passed"}]})
    )
    assert read_durations(path) == (
        {},
        f"durations file {path} holds no durations of evals that ran: balanced by planned turns",
    )


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("not json", "cannot be read as JSON"),
        ('{"tests": []}', "not a results file (no 'evals' list)"),
    ],
)
def test_a_durations_file_that_is_no_results_file(tmp_path: Path, content: str, words: str) -> None:
    path = tmp_path / "d.json"
    path.write_text(content)
    pattern = rf"--agent-eval-shard-durations {re.escape(str(path))}: .*{re.escape(words)}"
    with pytest.raises(pytest.UsageError, match=pattern):
        read_durations(path)
