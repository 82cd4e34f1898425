"""examples/ci/github-actions.yml: a valid workflow whose commands are the ones this test runs.

Its ``run:`` steps are executed here, in order, in a LiveKit project made by ``init``, as on a
cache miss. Left out, and why:

- ``uses:`` steps (checkout, setup-python, the fixture cache, the artifact upload) are GitHub's
  own actions; the test checks their settings against the commands instead (cache key and
  paths, the uploaded file is the report the eval step writes).

The ``Install`` step runs in a fresh virtualenv, which every later step then uses, with this
checkout where the "Get pytest-agent-eval" step (a ``uses:`` step) puts the package: the package
index has the earlier 0.3.0, which would break the workflow at its synthesize step (no
``--prune``).

The ``if:`` of the synthesize step is taken as true: the test starts with no fixtures, as a
cache miss does. ``-n auto`` runs as written; PYTEST_XDIST_AUTO_NUM_WORKERS=1 keeps it to one
worker because the suite around it already uses the machine's cores.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml
from init_support import clean_env

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "examples" / "ci" / "github-actions.yml"
CHECKOUT = ".pytest-agent-eval"
"""Where the workflow checks this package out (its "Get pytest-agent-eval" step)."""
GITHUB_ACTIONS = {
    "actions/checkout",
    "actions/setup-python",
    "actions/cache",
    "actions/upload-artifact",
}


def _steps() -> list[dict[str, Any]]:
    document = yaml.safe_load(WORKFLOW.read_text())
    (job,) = document["jobs"].values()
    return job["steps"]


def _step(name: str) -> dict[str, Any]:
    (step,) = [s for s in _steps() if s.get("name") == name]
    return step


def _is_install(step: dict[str, Any]) -> bool:
    return "run" in step and step["run"].strip().startswith("python -m pip install")


def _install_requirement() -> str:
    """The one requirement the install step installs."""
    (install,) = [s for s in _steps() if _is_install(s)]
    args = shlex.split(install["run"])
    assert args[:4] == ["python", "-m", "pip", "install"], args
    (requirement,) = args[4:]
    return requirement


def test_the_install_step_installs_the_checked_out_package() -> None:
    # By name the index gives the earlier 0.3.0, whose synthesizer lacks --prune and --check;
    # so does that package's repository. The workflow checks this package out and installs it
    # from there (tests/docs/test_ci_installs.py holds every recipe to that).
    requirement = _install_requirement()
    match = re.fullmatch(rf"\./{re.escape(CHECKOUT)}\[([\w,]+)\]", requirement)
    assert match, f"install the checked-out package: {requirement}"
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = set(match.group(1).split(","))
    assert {"livekit", "xdist"} <= extras <= set(project["optional-dependencies"])
    get = _step("Get pytest-agent-eval")
    assert get["uses"] == "actions/checkout@v4" and get["with"]["path"] == CHECKOUT
    assert get["with"]["repository"] == "${{ vars.AGENT_EVAL_REPOSITORY }}"
    names = [s.get("name") for s in _steps()]
    assert names.index("Get pytest-agent-eval") < names.index("Install")
    # And it says why, so nobody "simplifies" it back to the bare name.
    assert "not on the package index" in WORKFLOW.read_text()


def test_the_workflow_is_well_formed() -> None:
    document = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the bare key `on` as True; GitHub reads it as "on".
    triggers = document.get("on", document.get(True))
    assert set(triggers) == {"push", "pull_request"}
    assert list(document["jobs"]) == ["evals"]
    assert document["jobs"]["evals"]["runs-on"] == "ubuntu-latest"
    steps = _steps()
    for step in steps:
        assert ("uses" in step) != ("run" in step), step
        if "uses" in step:
            action, _, version = step["uses"].partition("@")
            assert action in GITHUB_ACTIONS and re.fullmatch(r"v\d+", version), step
        else:
            syntax = subprocess.run(
                ["bash", "-n"], input=step["run"], capture_output=True, text=True, check=False
            )
            assert syntax.returncode == 0, f"{step['name']}: {syntax.stderr}"
            assert "${{" not in step["run"], "keep GitHub expressions out of run: (env: instead)"


def test_docs_show_the_workflow_verbatim() -> None:
    docs = (WORKFLOW.parents[2] / "docs" / "ci.md").read_text()
    marker = "<!-- snippet: file examples/ci/github-actions.yml -->\n```yaml\n"
    assert docs.count(marker) == 1
    shown = docs.split(marker, 1)[1].split("\n```\n", 1)[0] + "\n"
    assert shown == WORKFLOW.read_text()


def test_the_cache_and_artifact_match_the_commands() -> None:
    cache = _step("Restore voice fixtures")
    assert cache["uses"] == "actions/cache@v4"
    assert cache["with"]["path"].split() == ["tests/evals/**/*.wav", "tests/evals/**/*.wav.hash"]
    key = cache["with"]["key"]
    assert "hashFiles('tests/evals/**/*.yaml', 'tests/evals/**/*.yml', 'pyproject.toml')" in key
    assert key.startswith(cache["with"]["restore-keys"])
    synthesize = _step("Synthesize missing or stale fixtures")
    assert synthesize["if"] == f"steps.{cache['id']}.outputs.cache-hit != 'true'"
    assert synthesize["run"] == "python -m pytest_agent_eval.synthesize_audio --prune"
    assert _step("Check fixtures")["run"] == "python -m pytest_agent_eval.synthesize_audio --check"
    evals = _step("Run evals")["run"].split()
    assert evals[:4] == ["python", "-m", "pytest", "--agent-eval-live"]
    assert "-n" in evals and evals[evals.index("-n") + 1] == "auto"
    (html,) = [
        a.removeprefix("--agent-eval-html=") for a in evals if a.startswith("--agent-eval-html=")
    ]
    upload = _step("Upload the HTML report")
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == html


def test_the_workflow_commands_pass_in_a_scaffolded_livekit_project(
    livekit_project: Path, tmp_path: Path
) -> None:
    project = shutil.copytree(livekit_project, tmp_path / "project")
    shutil.rmtree(project / "tests/evals/audio")  # a cache miss: nothing restored
    summary = tmp_path / "step-summary.md"
    # A fresh virtualenv, as on a fresh runner: `python` in every step is its interpreter.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", venv], check=True, timeout=300)
    env = clean_env(
        GITHUB_STEP_SUMMARY=str(summary),
        CI="true",
        PYTEST_XDIST_AUTO_NUM_WORKERS="1",
        PIP_DISABLE_PIP_VERSION_CHECK="1",
    )
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
    env["VIRTUAL_ENV"] = str(venv)
    env.pop("PYTHONPATH", None)  # a fresh runner has none: the installed package must serve

    def run(command: str) -> subprocess.CompletedProcess[str]:
        # GitHub's shell for `run:` on Linux: bash --noprofile --norc -eo pipefail.
        return subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )

    # Without the repository variable, GitHub's checkout gives the project itself: the check
    # step stops the job there, saying what to set.
    guard = _step("Check the checkout is pytest-agent-eval")["run"]
    (project / CHECKOUT).mkdir()
    shutil.copy(project / "pyproject.toml", project / CHECKOUT)
    wrong = run(guard)
    assert wrong.returncode == 1
    assert "set the repository variable AGENT_EVAL_REPOSITORY" in wrong.stdout
    shutil.rmtree(project / CHECKOUT)
    # This checkout stands where the "Get pytest-agent-eval" step puts the package.
    (project / CHECKOUT).symlink_to(ROOT, target_is_directory=True)
    # The install step as written.
    installed = run(_step("Install")["run"])
    assert installed.returncode == 0, installed.stderr[-3000:]
    version = run("python -c 'import pytest_agent_eval as p; print(p.__version__, p.__file__)'")
    import pytest_agent_eval

    assert version.stdout.split()[0] == pytest_agent_eval.__version__
    assert version.stdout.split()[1].startswith(str(venv)), version.stdout

    # The check step bites: before synthesis the fixture is missing and it says how to fix it.
    early = run(_step("Check fixtures")["run"])
    assert early.returncode == 1
    assert "missing   tests/evals/audio/voice_opening_hours_t1.wav" in early.stdout

    ran = []
    for step in _steps():
        if "uses" in step or _is_install(step):
            continue  # GitHub's actions; the install step ran above
        result = run(step["run"])
        assert result.returncode == 0, (
            f"{step['name']}: {step['run']}\n{result.stdout[-3000:]}\n{result.stderr[-2000:]}"
        )
        ran.append((step["name"], result.stdout))

    assert [name for name, _ in ran] == [
        "Check the checkout is pytest-agent-eval",
        "Synthesize missing or stale fixtures",
        "Check fixtures",
        "Run evals",
    ]
    assert "synthesized   tests/evals/audio/voice_opening_hours_t1.wav" in ran[1][1]
    assert "all 1 fixture(s) up to date" in ran[2][1]
    assert "2/2 evals passed" in ran[3][1]
    assert re.search(r"created: 1/1 worker", ran[3][1]), "the evals ran under xdist"
    report = project / _step("Upload the HTML report")["with"]["path"]
    assert "voice_opening_hours" in report.read_text()
    written = summary.read_text()
    assert "**2 of 2 evals passed**" in written
    assert "| voice_opening_hours | 3 | 3 | 1.00 | 1.00 | ✅ PASS |" in written
