"""``agent-eval merge`` refuses what is not one whole suite: exit status 2, one line saying why
and what to do, and no report written (an old report must not pass for a merged one).

Two shards of the suite run once for the module (in their own processes); each case starts
from them, runs what makes it (a shard run otherwise) or, for what a run cannot produce (a file
from another version), edits a copy.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from .conftest import run_merge, run_pytest, write_suite


@pytest.fixture(scope="module")
def shards(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A suite with ``shard-1.json`` and ``shard-2.json`` (of 2) and ``whole.json`` (no shard)."""
    root = tmp_path_factory.mktemp("refusals") / "project"
    root.mkdir()
    write_suite(root, errors=False)
    for k in (1, 2):
        ran = run_pytest(root, f"--agent-eval-shard={k}/2", f"--agent-eval-results=shard-{k}.json")
        assert ran.returncode in (0, 1), ran.stdout[-3000:]
    whole = run_pytest(root, "--agent-eval-results=whole.json")
    assert whole.returncode == 0, whole.stdout[-3000:]
    return root


@pytest.fixture
def project(shards: Path, tmp_path: Path) -> Path:
    """A copy of the module's suite and shard files, for one case to change."""
    return Path(shutil.copytree(shards, tmp_path / "project"))


def _refused(root: Path, *args: str) -> str:
    """Run the merge; assert it refused without writing a report, and return its message."""
    merge = run_merge(root, *args, "--agent-eval-html=merged.html", "--agent-eval-results=m.json")
    assert merge.returncode == 2, merge.stdout[-3000:] + merge.stderr
    assert not (root / "merged.html").exists() and not (root / "m.json").exists()
    assert "Traceback" not in merge.stderr
    return merge.stderr


def _edit(path: Path, change: Any) -> None:
    document = json.loads(path.read_text())
    change(document)
    path.write_text(json.dumps(document))


def test_the_two_shards_merge(project: Path) -> None:
    """The baseline the cases break: the same files, whole, merge."""
    merge = run_merge(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert merge.returncode == 0, merge.stdout[-3000:] + merge.stderr
    assert "agent-eval merge: 2 shard(s)" in merge.stdout


def test_a_missing_shard(project: Path) -> None:
    message = _refused(project, "shard-1.json", "--expect-shards=2")
    assert "agent-eval merge: refused: shard(s) 2/2 missing (given: 1)" in message
    assert "Run it again rather than merge a part of the suite" in message


def test_a_shard_file_that_is_not_there(project: Path) -> None:
    message = _refused(project, "shard-1.json", "shard-9.json", "--expect-shards=2")
    assert "shard-9.json: cannot be read (No such file or directory)" in message


@pytest.mark.parametrize("how", ["same file twice", "a rerun's copy"])
def test_a_shard_given_twice(project: Path, how: str) -> None:
    second = "shard-1.json"
    if how == "a rerun's copy":
        shutil.copy(project / "shard-1.json", project / "shard-1-rerun.json")
        second = "shard-1-rerun.json"
    message = _refused(project, "shard-1.json", second, "shard-2.json", "--expect-shards=2")
    assert f"shard 1/2 given twice: shard-1.json and {second}" in message


def test_one_eval_in_two_shards(project: Path) -> None:
    """Shard 2 planned with a durations file that shard 1 did not have (a cache that missed
    on one runner): the two plans overlap, and the merge names an eval both ran."""
    (project / "durations.json").write_text(
        json.dumps(
            {
                "schema_version": 1,
                "evals": [
                    {"nodeid": f"tests/evals/book_ok_{i}.yaml::book_ok_{i}", "duration_s": 10.0 * i}
                    for i in range(1, 7)
                ],
            }
        )
    )
    ran = run_pytest(
        project,
        "--agent-eval-shard=2/2",
        "--agent-eval-shard-durations=durations.json",
        "--agent-eval-results=shard-2.json",
    )
    assert ran.returncode in (0, 1), ran.stdout[-3000:]
    first = set(json.loads((project / "shard-1.json").read_text())["shard"]["evals"])
    second = set(json.loads((project / "shard-2.json").read_text())["shard"]["evals"])
    assert first & second, "the two plans must overlap for this case"

    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "ran in two shards: shard 1/2 (shard-1.json) and shard 2/2 (shard-2.json); " in message
    assert "eval test(s) balanced by planned turns (plan " in message
    assert "eval test(s) balanced by durations from " in message
    assert "with the same options and the same durations file" in message


def test_one_eval_in_two_shards_of_one_plan(project: Path) -> None:
    """Files of one plan that still overlap (one edited or put together by hand)."""
    second = json.loads((project / "shard-2.json").read_text())
    taken = second["shard"]["evals"][0]
    first = project / "shard-1.json"
    _edit(
        first,
        lambda d: d["shard"]["reports"].extend(
            r for r in second["shard"]["reports"] if r.get("nodeid") == taken
        ),
    )
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert f"eval {taken} ran in two shards: shard 1/2 (shard-1.json) and shard 2/2" in message
    assert "each eval must run in exactly one shard" in message


def test_another_schema_version(project: Path) -> None:
    _edit(project / "shard-2.json", lambda d: d.update(schema_version=0))
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "shard-2.json: results schema_version 0, this agent-eval merges 1" in message


def test_another_package_version(project: Path) -> None:
    _edit(project / "shard-1.json", lambda d: d.update(package_version="0.3.9"))
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "shard-1.json: written by pytest-agent-eval 0.3.9, this is " in message
    assert "install the same version in the shard jobs and the merge job" in message


def test_an_interrupted_shard(project: Path) -> None:
    """The shard holding the failing eval stopped at it (``-x``): it did not run every test."""
    holder = next(
        k
        for k in (1, 2)
        if "tests/evals/book_bad.yaml::book_bad"
        in json.loads((project / f"shard-{k}.json").read_text())["shard"]["evals"]
    )
    stopped = run_pytest(
        project, f"--agent-eval-shard={holder}/2", f"--agent-eval-results=shard-{holder}.json", "-x"
    )
    assert stopped.returncode == 1
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert (
        f"shard {holder}/2 (shard-{holder}.json) was interrupted (stopped early: stopping after 1 failures"
        in message
    )
    assert "run the shard again" in message


def test_a_shard_whose_evals_never_reported(project: Path) -> None:
    """A file that lost some of its reports (cut, or edited) is not a whole shard."""

    def drop_first_eval(document: dict[str, Any]) -> None:
        gone = document["shard"]["evals"][0]
        document["shard"]["reports"] = [
            r for r in document["shard"]["reports"] if r.get("nodeid") != gone
        ]

    _edit(project / "shard-1.json", drop_first_eval)
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "shard 1/2 (shard-1.json) was interrupted: 1 of its eval(s) never reported" in message


def test_an_empty_merge(project: Path) -> None:
    """Shards that were not live skipped every eval: nothing was evaluated, so nothing passes
    (not "all 0 shards passed")."""
    for k in (1, 2):
        ran = run_pytest(
            project, f"--agent-eval-shard={k}/2", f"--agent-eval-results=shard-{k}.json", live=False
        )
        assert ran.returncode == 0, ran.stdout[-2000:]
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "nothing to merge: no eval ran in any shard" in message
    assert "(--agent-eval-live)" in message


def test_results_of_a_session_that_was_no_shard(project: Path) -> None:
    message = _refused(project, "whole.json", "--expect-shards=1")
    assert "whole.json: not a shard's results (written without --agent-eval-shard K/N)" in message


def test_files_of_another_number_of_shards(project: Path) -> None:
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=3")
    assert "shard 1/2 (shard-1.json): it is one of 2 shards, but --expect-shards is 3" in message


def test_shards_of_different_plans(project: Path) -> None:
    ran = run_pytest(
        project, "--agent-eval-shard=2/2", "--agent-eval-results=shard-2.json", "-k", "book"
    )
    assert ran.returncode in (0, 1)
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "the shards did not split the same suite: shard 1/2 (shard-1.json) planned " in message
    assert "Run every shard on the same commit with the same options" in message


def test_shards_that_selected_different_plain_tests(project: Path) -> None:
    ran = run_pytest(
        project,
        "--agent-eval-shard=2/2",
        "--agent-eval-results=shard-2.json",
        "--deselect=tests/test_plain.py::test_plain_outside",
    )
    assert ran.returncode in (0, 1)
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "the shards selected different tests: shard 1/2 (shard-1.json) ran every " in message
    assert "ran 1 deselected" in message


def test_a_merge_under_other_groups_than_the_shards(project: Path) -> None:
    """The gates are this folder's: a merge run where pyproject.toml says otherwise than it
    did for the shards (another checkout) would judge them by other rules."""
    pyproject = project / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace("threshold = 0.6", "threshold = 0.9"))
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert (
        "refused: the groups in [tool.agent_eval.groups] here differ from the ones the" in message
    )


def test_the_merge_needs_the_number_of_shards(project: Path) -> None:
    merge = run_merge(project, "shard-1.json", "shard-2.json")
    assert merge.returncode == 2
    assert "the following arguments are required: --expect-shards" in merge.stderr


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda d: d["shard"]["reports"].append("a line of text"), "is not a pytest report"),
        (lambda d: d["shard"]["reports"][0].pop("location"), "report 1 has no 'location'"),
        (lambda d: d["shard"].update(evals="all of them"), "no 'evals' list"),
        (lambda d: d["shard"].update(count="two"), "'count' is not a number"),
    ],
    ids=["not a report", "a report without location", "evals not a list", "count not a number"],
)
def test_a_shard_file_changed_into_another_shape(project: Path, change: Any, words: str) -> None:
    _edit(project / "shard-2.json", change)
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert "shard-2.json: its shard section is not as a shard writes it (" in message
    assert words in message


@pytest.mark.parametrize(
    ("content", "words"),
    [("{", "shard-2.json: not JSON ("), ('{"evals": {}}', "shard-2.json: not a results file")],
)
def test_a_shard_file_that_is_no_results_file(project: Path, content: str, words: str) -> None:
    (project / "shard-2.json").write_text(content)
    message = _refused(project, "shard-1.json", "shard-2.json", "--expect-shards=2")
    assert words in message
