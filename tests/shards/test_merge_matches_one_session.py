"""Three shards merged give exactly the verdict, gates and reports of one unsharded session.

Each shard runs in its own process, as on its own CI machine; the merge reads only their
results files. Compared with the one session, clock times and durations aside: the exit
status, the terminal's agent eval, group and baseline sections and pytest's short summary,
the markdown and HTML reports, the job summary, the results file and JUnit.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from .conftest import (
    REPORTS,
    junit_normalized,
    normalized,
    results_normalized,
    run_merge,
    run_pytest,
    section,
    short_summary,
    write_suite,
)

SHARDS = 3


@pytest.mark.parametrize(
    ("errors", "xdist"),
    [(False, ()), (True, ()), (True, ("-n", "2"))],
    ids=["absorbed-serial", "errors-serial", "errors-xdist"],
)
def test_merged_shards_give_the_one_sessions_verdict_and_reports(
    suite: Path, errors: bool, xdist: tuple[str, ...]
) -> None:
    write_suite(suite, errors=errors)
    whole = suite / "whole"
    merged = suite / "merged"
    for folder in (whole, merged):
        folder.mkdir()

    one = run_pytest(
        suite,
        *(f"{option.split('=')[0]}=whole/{option.split('=')[1]}" for option in REPORTS),
        "--junitxml=whole/junit.xml",
        "--agent-eval-baseline=base.json",
        summary=whole / "step.md",
    )
    shards = [
        run_pytest(
            suite,
            f"--agent-eval-shard={k}/{SHARDS}",
            f"--agent-eval-results=shard-{k}.json",
            *xdist,
        )
        for k in range(1, SHARDS + 1)
    ]
    merge = run_merge(
        suite,
        *(f"shard-{k}.json" for k in range(1, SHARDS + 1)),
        f"--expect-shards={SHARDS}",
        *(f"{option.split('=')[0]}=merged/{option.split('=')[1]}" for option in REPORTS),
        "--junitxml=merged/junit.xml",
        "--agent-eval-baseline=base.json",
        summary=merged / "step.md",
    )

    # Every shard ran a share of the evals (no eval twice, none left out) and every plain test.
    documents = [json.loads((suite / f"shard-{k}.json").read_text()) for k in range(1, 4)]
    shares = [d["shard"]["evals"] for d in documents]
    every_eval = [n for share in shares for n in share]
    assert len(every_eval) == len(set(every_eval)) == documents[0]["shard"]["planned"]
    assert all(shares), "each shard got evals"
    plain = "tests/test_plain.py::test_plain_outside"
    assert all(plain in d["shard"]["collected"] for d in documents)
    assert all(any(r["nodeid"] == plain for r in d["shard"]["reports"]) for d in documents)
    for shard in shards:
        assert "gates are report-only in a shard" in shard.stdout, shard.stdout[-3000:]

    # The verdict: an absorbed failure exits 0; an ERROR and a failed enforced group exit 1.
    assert merge.returncode == one.returncode == (1 if errors else 0), merge.stdout[-4000:]
    if errors:
        groups = section(merge.stdout, "group summary")
        assert "errored (verdict not reached, not counted): no_reply, test_judged" in groups
        assert "strict: 1/2 passed (50%) >= 100% required -- FAILED" in groups
        assert "2 errors" in merge.stdout.splitlines()[-1]
    else:
        assert "exit code overridden to 0" in section(merge.stdout, "group summary")

    # The terminal, section by section.
    for title in ("agent eval summary", "group summary", "agent eval baseline"):
        assert section(merge.stdout, title), f"{title} missing:\n{merge.stdout[-4000:]}"
        assert section(merge.stdout, title) == section(one.stdout, title), title
    assert short_summary(merge.stdout) == short_summary(one.stdout)
    assert "regressed" in section(merge.stdout, "agent eval baseline")

    # Every report file.
    for name in ("r.md", "r.html", "step.md"):
        assert normalized((merged / name).read_text()) == normalized((whole / name).read_text()), (
            name
        )
    assert results_normalized(merged / "r.json") == results_normalized(whole / "r.json")
    assert junit_normalized(merged / "junit.xml") == junit_normalized(whole / "junit.xml")

    # What the merged results file adds: where it came from, and durations for the next plan.
    merged_results = json.loads((merged / "r.json").read_text())
    assert [m["shard"] for m in merged_results["merged_from"]] == ["1/3", "2/3", "3/3"]
    assert merged_results["shard"] is None
    ran = [e for e in merged_results["evals"] if e["verdict"] != "skipped"]
    assert all(isinstance(e["duration_s"], float) for e in ran if e["runs"])


def test_a_merge_in_another_checkout_reads_the_shards_paths_as_its_own(
    suite: Path, tmp_path: Path
) -> None:
    """The merge job's checkout may sit elsewhere than the shard jobs' (another runner): paths
    under a shard's rootdir are read as the same paths under the merge's."""
    write_suite(suite, errors=False)
    for k in (1, 2):
        ran = run_pytest(suite, f"--agent-eval-shard={k}/2", f"--agent-eval-results=shard-{k}.json")
        assert ran.returncode in (0, 1), ran.stdout[-2000:]
    elsewhere = tmp_path / "merge-runner" / "checkout"
    elsewhere.parent.mkdir()
    shutil.copytree(suite, elsewhere)

    here = run_merge(
        suite, "shard-1.json", "shard-2.json", "--expect-shards=2", "--agent-eval-report=m.md"
    )
    there = run_merge(
        elsewhere, "shard-1.json", "shard-2.json", "--expect-shards=2", "--agent-eval-report=m.md"
    )

    assert here.returncode == there.returncode == 0, there.stdout[-3000:]
    report = (elsewhere / "m.md").read_text()
    assert str(suite) not in report
    assert "- File: tests/evals/book_bad.yaml" in report
    assert normalized(report) == normalized((suite / "m.md").read_text())


def test_a_plain_test_of_every_shard_counts_once_with_its_worst_outcome(suite: Path) -> None:
    """A plain test runs in every shard; where it failed in one (a flaky test, a machine of
    its own), the merged session has it once, failed."""
    write_suite(suite, errors=False)
    (suite / "tests" / "test_flaky.py").write_text(
        "def test_flaky(request):\n"
        "    assert request.config.getoption('agent_eval_shard') != '2/3'\n"
    )
    for k in (1, 2, 3):
        run_pytest(suite, f"--agent-eval-shard={k}/3", f"--agent-eval-results=shard-{k}.json")

    merge = run_merge(
        suite, "shard-1.json", "shard-2.json", "shard-3.json", "--expect-shards=3", "-rA"
    )

    assert merge.returncode == 1, merge.stdout[-3000:]
    assert "4 plain test(s) ran in several shards: each counts once, with its worst outcome" in (
        merge.stdout
    )
    summary = short_summary(merge.stdout)
    failed = "FAILED tests/test_flaky.py::test_flaky - AssertionError: assert '2/3' != '2/3'"
    assert summary.count(failed) == 1
    assert [line for line in summary if "test_plain_outside" in line] == [
        "PASSED tests/test_plain.py::test_plain_outside"
    ]
    # Its failure is in no group: not absorbed, the verdict is FAIL.
    assert "1 other failure(s) are not: tests/test_flaky.py::test_flaky" in section(
        merge.stdout, "group summary"
    )
