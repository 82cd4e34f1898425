"""examples/ci/github-actions-shards.yml: a valid workflow whose commands are the ones run here.

Its ``run:`` steps are executed, job by job, in a LiveKit project made by ``init``, each shard
in its own copy of the project (its own machine), as on a first run (no durations, a fixture
cache miss); what GitHub's own actions would carry between jobs (artifacts, the durations
cache) is copied the way the workflow's settings say, and the test checks those settings
against the commands. Then the next run's shard balances by the merged durations, and a
failing eval fails the merge step, which is what fails the workflow.

Left out: the ``uses:`` steps (GitHub's actions; this checkout stands where the workflow checks
the package out) and the ``Install`` steps (this interpreter has the package with every extra). ``-n auto`` runs as written with one worker
(PYTEST_XDIST_AUTO_NUM_WORKERS=1), as the suite around it already uses the machine's cores.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from init_support import clean_env

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions-shards.yml"
CHECKOUT = ".pytest-agent-eval"
"""Where the workflow checks this package out (its "Get pytest-agent-eval" steps)."""
GITHUB_ACTIONS = {
    "actions/checkout",
    "actions/setup-python",
    "actions/cache",
    "actions/cache/restore",
    "actions/cache/save",
    "actions/upload-artifact",
    "actions/download-artifact",
}


def _workflow() -> dict[str, Any]:
    return yaml.safe_load(WORKFLOW.read_text())


def _steps(job: str) -> list[dict[str, Any]]:
    return _workflow()["jobs"][job]["steps"]  # type: ignore[no-any-return]


def _step(job: str, name: str) -> dict[str, Any]:
    (step,) = [s for s in _steps(job) if s.get("name") == name]
    return step


def _runnable(job: str) -> list[dict[str, Any]]:
    return [
        s
        for s in _steps(job)
        if "run" in s and not s["run"].strip().startswith("python -m pip install")
    ]


def _shards() -> list[int]:
    return _workflow()["jobs"]["evals"]["strategy"]["matrix"]["shard"]  # type: ignore[no-any-return]


def _option(command: str, option: str) -> str:
    (value,) = re.findall(rf"{option}=(\S+)", command)
    return value.strip('"')


def test_the_workflow_is_well_formed() -> None:
    document = _workflow()
    triggers = document.get("on", document.get(True))  # YAML 1.1 reads a bare `on` as True
    assert set(triggers) == {"push", "pull_request"}
    jobs = document["jobs"]
    assert list(jobs) == ["plan", "evals", "merge"]
    assert jobs["evals"]["needs"] == "plan" and jobs["merge"]["needs"] == "evals"
    # The merge runs when a shard job failed too (and says which shard is missing), but not
    # when the run was cancelled; a failing shard does not cancel the others.
    assert jobs["merge"]["if"] == "${{ !cancelled() }}"
    assert jobs["evals"]["strategy"]["fail-fast"] is False
    assert _shards() == list(range(1, len(_shards()) + 1))
    for job in jobs.values():
        assert job["runs-on"] == "ubuntu-latest"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), step
            if "uses" in step:
                action, _, version = step["uses"].partition("@")
                assert action in GITHUB_ACTIONS and re.fullmatch(r"v\d+", version), step
                continue
            syntax = subprocess.run(
                ["bash", "-n"], input=step["run"], capture_output=True, text=True, check=False
            )
            assert syntax.returncode == 0, f"{step['name']}: {syntax.stderr}"
            assert "${{" not in step["run"], "keep GitHub expressions out of run: (env: instead)"


def test_docs_show_the_workflow_verbatim() -> None:
    docs = (WORKFLOW.parents[2] / "docs" / "ci.md").read_text()
    marker = "<!-- snippet: file examples/ci/github-actions-shards.yml -->\n```yaml\n"
    assert docs.count(marker) == 1
    shown = docs.split(marker, 1)[1].split("\n```\n", 1)[0] + "\n"
    assert shown == WORKFLOW.read_text()


def test_artifacts_caches_and_commands_agree() -> None:
    n = len(_shards())
    run_shard = _step("evals", "Run this shard")
    command = run_shard["run"]
    assert run_shard["env"] == {"SHARD": "${{ matrix.shard }}"}
    assert command.startswith("python -m pytest --agent-eval-live -n auto ")
    assert _option(command, "--agent-eval-shard") == f"$SHARD/{n}"
    # Exit 1 (an eval failed) is the merge's to judge; anything else fails the job.
    assert command.endswith(" || [ $? -eq 1 ]")
    merge = _step("merge", "Merge the shards")["run"]
    assert merge.startswith("python -m pytest_agent_eval merge reports/shards/*.json ")
    assert _option(merge, "--expect-shards") == str(n)

    # The durations: the last merge's results, restored once (plan), handed to every shard,
    # written by the merge and saved under the key the plan restores.
    restored = _step("plan", "Restore the last merged results")
    saved = _step("merge", "Keep the durations for the next run")
    assert (
        restored["uses"] == "actions/cache/restore@v4" and saved["uses"] == "actions/cache/save@v4"
    )
    durations = restored["with"]["path"]
    assert saved["with"]["path"] == durations
    assert restored["with"]["key"] == saved["with"]["key"]
    assert restored["with"]["key"].startswith(restored["with"]["restore-keys"])
    assert _option(command, "--agent-eval-shard-durations") == durations
    assert _option(merge, "--agent-eval-results") == durations
    assert saved["if"] == f"always() && hashFiles('{durations}') != ''"
    handed = _step("plan", "Hand the durations to the shards")
    got = _step("evals", "Get the durations")
    assert handed["with"]["name"] == got["with"]["name"]
    assert handed["with"]["path"] == got["with"]["path"] == durations.rsplit("/", 1)[0] + "/"

    # Each shard's results file is uploaded under its own name, and all of them reach the
    # folder the merge reads.
    results = _option(command, "--agent-eval-results")
    upload = _step("evals", "Upload this shard's results")
    assert upload["if"] == "always()" and upload["with"]["if-no-files-found"] == "error"
    assert upload["with"]["path"] == results.replace("$SHARD", "${{ matrix.shard }}")
    shard_artifact = upload["with"]["name"]
    assert shard_artifact == "agent-eval-shard-${{ matrix.shard }}"
    download = _step("merge", "Get the shards' results")["with"]
    assert download["pattern"] == shard_artifact.replace("${{ matrix.shard }}", "*")
    assert download["merge-multiple"] is True
    assert merge.split()[4] == download["path"] + "*.json"

    # The merged HTML is the uploaded report, also when the merge failed.
    report = _step("merge", "Upload the merged HTML report")
    assert report["if"] == "always()"
    assert report["with"]["path"] == _option(merge, "--agent-eval-html")

    # The fixture cache is the single-job recipe's.
    cache = _step("evals", "Restore voice fixtures")
    assert cache["with"]["path"].split() == ["tests/evals/**/*.wav", "tests/evals/**/*.wav.hash"]
    synthesize = _step("evals", "Synthesize missing or stale fixtures")
    assert synthesize["if"] == f"steps.{cache['id']}.outputs.cache-hit != 'true'"


def _run(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # GitHub's shell for `run:` on Linux: bash --noprofile --norc -eo pipefail.
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )


def _run_job(job: str, cwd: Path, *, shard: int | None = None, **env: str) -> list[tuple[str, str]]:
    """Every runnable step of ``job``, in order, with the matrix's ``shard``; each must pass.
    Returns (name, stdout)."""
    ran = []
    for step in _runnable(job):
        step_env = {
            k: v.replace("${{ matrix.shard }}", str(shard))
            for k, v in (step.get("env") or {}).items()
        }
        result = _run(step["run"], cwd, clean_env(**env, **step_env))
        assert result.returncode == 0, (
            f"{job}: {step['name']}: {step['run']}\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
        )
        ran.append((step["name"], result.stdout))
    return ran


def _copy_folder(source: Path, target: Path) -> None:
    shutil.copytree(source, target, dirs_exist_ok=True)


def test_the_sharded_workflow_runs_and_fails_on_the_merged_verdict(
    livekit_project: Path, tmp_path: Path
) -> None:
    n = len(_shards())
    env = {"CI": "true", "PYTEST_XDIST_AUTO_NUM_WORKERS": "1"}

    def checkout(name: str) -> Path:
        project = Path(shutil.copytree(livekit_project, tmp_path / name))
        shutil.rmtree(project / "tests/evals/audio")  # a cache miss: nothing restored
        # Where the "Get pytest-agent-eval" step checks the package out (this checkout here).
        (project / CHECKOUT).symlink_to(ROOT, target_is_directory=True)
        return project

    # plan: a first run, nothing to restore.
    plan = checkout("plan")
    _run_job("plan", plan, **env)
    artifact = plan / "reports"
    assert [p.name for p in artifact.iterdir()] == ["plan.txt"]

    # evals: each shard on its own machine, with the plan's artifact.
    machines = {}
    for k in _shards():
        machine = machines[k] = checkout(f"shard-{k}")
        _copy_folder(artifact, machine / "reports")
        summary = machine / "step-summary.md"
        steps = _run_job("evals", machine, shard=k, **env, GITHUB_STEP_SUMMARY=str(summary))
        assert [name for name, _ in steps] == [
            "Check the checkout is pytest-agent-eval",
            "Synthesize missing or stale fixtures",
            "Check fixtures",
            "Run this shard",
        ]
        out = steps[-1][1]
        assert f"agent eval shard {k}/{n}: " in out and "balanced by planned turns" in out
        assert re.search(r"created: 1/1 worker", out), "the shard ran under xdist"
        assert (machine / f"reports/shard-{k}.json").is_file()

    # merge: the shards' files, downloaded into one folder.
    merger = checkout("merge")

    def merge(summary: Path) -> subprocess.CompletedProcess[str]:
        shards = merger / "reports" / "shards"
        shards.mkdir(parents=True, exist_ok=True)
        for k, machine in machines.items():
            shutil.copy(machine / f"reports/shard-{k}.json", shards)
        step = _step("merge", "Merge the shards")
        return _run(step["run"], merger, clean_env(**env, GITHUB_STEP_SUMMARY=str(summary)))

    merged = merge(tmp_path / "merge-summary.md")
    assert merged.returncode == 0, merged.stdout[-3000:] + merged.stderr[-2000:]
    assert f"agent-eval merge: {n} shard(s)" in merged.stdout
    assert "2/2 evals passed" in merged.stdout
    written = (tmp_path / "merge-summary.md").read_text()
    assert "**2 of 2 evals passed**" in written
    assert "| voice_opening_hours | 3 | 3 | 1.00 | 1.00 | ✅ PASS |" in written
    html = merger / _step("merge", "Upload the merged HTML report")["with"]["path"]
    assert "voice_opening_hours" in html.read_text() and "opening_hours" in html.read_text()
    durations = merger / _step("merge", "Keep the durations for the next run")["with"]["path"]
    assert durations.is_file()

    # The next run: the plan restores the merged results and the shards balance by them.
    next_plan = checkout("next-plan")
    (next_plan / "reports").mkdir()
    shutil.copy(durations, next_plan / "reports")
    _run_job("plan", next_plan, **env)
    next_machine = checkout("next-shard-1")
    _copy_folder(next_plan / "reports", next_machine / "reports")
    steps = _run_job("evals", next_machine, shard=1, **env)
    assert "balanced by durations from reports/merged-results.json" in steps[-1][1]

    # A failing eval: its shard job stays green (exit 1 is the merge's), the merge step fails.
    holder = next(
        k
        for k, m in machines.items()
        if "tests/evals/opening_hours.yaml::opening_hours"
        in json.loads((m / f"reports/shard-{k}.json").read_text())["shard"]["evals"]
    )
    broken = machines[holder] / "tests/evals/opening_hours.yaml"
    broken.write_text(broken.read_text().replace('["10:00", "16:00"]', '["never said"]'))
    steps = _run_job("evals", machines[holder], shard=holder, **env)
    assert "1 failed" in steps[-1][1]
    failed = merge(tmp_path / "failed-summary.md")
    assert failed.returncode == 1, failed.stdout[-3000:]
    assert "1/2 evals passed" in failed.stdout
    assert "❌ FAIL" in (tmp_path / "failed-summary.md").read_text()
    assert html.is_file()
