"""``--agent-eval-shard K/N`` in real pytest runs: which tests each shard runs, the same on every
machine and under xdist, balanced by durations when given, and what it says and writes."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from .conftest import run_pytest, write_suite

AGENT = """
import pytest
from pytest_agent_eval import AgentReply

@pytest.fixture
def llm_eval_agent():
    return lambda history: AgentReply("booked", [])
"""


def _flat_suite(root: Path, names: list[str], *, plain: bool = True) -> None:
    """One-turn transcripts of one run each (equal planned turns), and a plain test."""
    (root / "pyproject.toml").write_text("[tool.agent_eval]\n")
    evals = root / "tests" / "evals"
    evals.mkdir(parents=True)
    (root / "tests" / "conftest.py").write_text(textwrap.dedent(AGENT))
    for name in names:
        (evals / f"{name}.yaml").write_text(
            f"id: {name}\nturns:\n  - user: Book\n    expect:\n      reply_contains_any: [booked]\n"
        )
    if plain:
        (root / "tests" / "test_unit.py").write_text("def test_unit():\n    pass\n")


def _shard(root: Path, k: int, n: int, *args: str) -> dict:
    ran = run_pytest(root, f"--agent-eval-shard={k}/{n}", f"--agent-eval-results=s{k}.json", *args)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    return json.loads((root / f"s{k}.json").read_text())


def test_every_eval_runs_in_exactly_one_shard_and_plain_tests_in_each(suite: Path) -> None:
    names = [f"t{i:02d}" for i in range(10)]
    _flat_suite(suite, names)
    documents = [_shard(suite, k, 3) for k in (1, 2, 3)]

    shares = [d["shard"]["evals"] for d in documents]
    assert sorted(n for share in shares for n in share) == [
        f"tests/evals/{n}.yaml::{n}" for n in names
    ]
    # Balanced by count when every eval plans the same turns: 4, 3, 3.
    assert sorted(len(s) for s in shares) == [3, 3, 4]
    assert {d["shard"]["balanced_by"] for d in documents} == {"planned turns"}
    assert len({d["shard"]["plan"] for d in documents}) == 1
    # Each shard ran only its evals (the others deselected), and the plain test.
    for document, share in zip(documents, shares, strict=True):
        ran = [e["nodeid"] for e in document["evals"]]
        assert ran == share
        assert any(
            r["nodeid"] == "tests/test_unit.py::test_unit" for r in document["shard"]["reports"]
        )
        assert document["selection"] == [f"--agent-eval-shard {document['shard']['index']}/3"]


def test_the_same_shard_on_another_machine_and_under_xdist(suite: Path, tmp_path: Path) -> None:
    """A second checkout at another path, and ``-n 2``, plan the same shard."""
    names = [f"t{i:02d}" for i in range(7)]
    _flat_suite(suite, names)
    other = tmp_path / "elsewhere" / "checkout"
    other.mkdir(parents=True)
    _flat_suite(other, names)

    here = _shard(suite, 2, 3)["shard"]
    there = _shard(other, 2, 3, "-n", "2")["shard"]

    for key in ("plan", "evals", "loads", "planned", "collected"):
        assert here[key] == there[key], key
    assert here["rootdir"] != there["rootdir"]


def test_durations_balance_the_shards(suite: Path) -> None:
    """One eval known to take 10 s and five taking 1 s: by durations the slow one has a shard
    of its own; by planned turns (all equal) each shard gets three."""
    names = [f"t{i}" for i in range(6)]
    _flat_suite(suite, names, plain=False)
    durations = {
        "schema_version": 1,
        "evals": [
            {
                "nodeid": f"tests/evals/{n}.yaml::{n}",
                "verdict": "passed",
                "duration_s": 10.0 if n == "t3" else 1.0,
            }
            for n in names
        ],
    }
    (suite / "durations.json").write_text(json.dumps(durations))

    by_count = [_shard(suite, k, 2)["shard"] for k in (1, 2)]
    timed = [
        _shard(suite, k, 2, "--agent-eval-shard-durations=durations.json")["shard"] for k in (1, 2)
    ]

    assert sorted(len(s["evals"]) for s in by_count) == [3, 3]
    assert [s["evals"] for s in timed] == [
        ["tests/evals/t3.yaml::t3"],
        [f"tests/evals/{n}.yaml::{n}" for n in names if n != "t3"],
    ]
    assert timed[0]["loads"] == [10.0, 5.0]
    assert {s["balanced_by"] for s in timed} == {"durations"}
    assert timed[0]["plan"] != by_count[0]["plan"]


def test_a_merged_results_file_balances_the_next_run(suite: Path) -> None:
    """The results of a session (here a whole one) give the measured call times."""
    _flat_suite(suite, ["a", "b", "c"], plain=False)
    whole = run_pytest(suite, "--agent-eval-results=last.json")
    assert whole.returncode == 0
    assert all(e["duration_s"] > 0 for e in json.loads((suite / "last.json").read_text())["evals"])

    ran = run_pytest(suite, "--agent-eval-shard=1/2", "--agent-eval-shard-durations=last.json")
    assert "balanced by durations from " in ran.stdout
    assert "last.json (plan " in ran.stdout


def test_a_selection_is_split_not_the_whole_suite(suite: Path) -> None:
    """``-k`` selects first; the shards split what it left."""
    _flat_suite(suite, ["book_a", "book_b", "book_c", "other_a", "other_b"], plain=False)
    shares = [_shard(suite, k, 2, "-k", "book")["shard"] for k in (1, 2)]
    assert {s["planned"] for s in shares} == {3}
    assert sorted(n for s in shares for n in s["evals"]) == [
        f"tests/evals/book_{x}.yaml::book_{x}" for x in "abc"
    ]
    assert {tuple(s["selection"]) for s in shares} == {("-k book",)}


def test_a_shard_says_what_it_got_and_gates_wait_for_the_merge(suite: Path) -> None:
    write_suite(suite, errors=False)
    ran = run_pytest(suite, "--agent-eval-shard=1/2", "--agent-eval-shard-durations=none.json")
    out = ran.stdout
    assert (
        "agent eval shard 1/2: " in out and " eval test(s), balanced by planned turns (plan " in out
    )
    assert "durations file " in out and "none.json not found: balanced by planned turns" in out
    assert (
        "gates are report-only in a shard (--agent-eval-shard 1/2): they judge this shard's "
        "evals only; agent-eval merge decides them over every shard"
    ) in out
    assert "exit code overridden" not in out
    # Without a results file the shard can never be merged: it says so.
    assert "no results file was written, so agent-eval merge cannot use this shard" in out


def test_more_shards_than_evals_leaves_some_empty_and_green(suite: Path) -> None:
    _flat_suite(suite, ["only"], plain=False)
    empty = run_pytest(suite, "--agent-eval-shard=2/2", "--agent-eval-results=s2.json")
    assert empty.returncode == 0, empty.stdout[-2000:]
    assert "agent eval shard 2/2: 0 of 1 eval test(s)" in empty.stdout
    document = json.loads((suite / "s2.json").read_text())
    assert document["exit_status"] == 0 and document["shard"]["evals"] == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("--agent-eval-shard=0/4",), "--agent-eval-shard 0/4: K must be between 1 and N"),
        (("--agent-eval-shard=5/4",), "--agent-eval-shard 5/4: K must be between 1 and N"),
        (("--agent-eval-shard=2-4",), "--agent-eval-shard '2-4': write K/N, e.g."),
        (
            ("--agent-eval-shard-durations=d.json",),
            "--agent-eval-shard-durations balances shards: give --agent-eval-shard K/N too",
        ),
        (
            ("--agent-eval-shard=1/2", "--agent-eval-shard-durations=pyproject.toml"),
            "pyproject.toml: cannot be read as JSON",
        ),
    ],
)
def test_bad_shard_options_are_usage_errors(suite: Path, args: tuple[str, ...], words: str) -> None:
    _flat_suite(suite, ["a"], plain=False)
    ran = run_pytest(suite, *args)
    assert ran.returncode == 4, ran.stdout[-2000:]
    assert words in ran.stderr
    assert "Traceback" not in ran.stderr
