"""examples/turn-taking-livekit as its README runs it: the shipped configuration passes the
gate, the deliberately bad one (LiveKit's default endpointing delay) fails its pause item, and
``agent-eval compare`` on the two results files exits 1 naming what regressed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ExampleProjects

pytest.importorskip("livekit.agents", reason="needs the livekit extra")


def _run(pytester: pytest.Pytester, results: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", f"--agent-eval-results={results}"
    )


def _verdicts(project: Path, results: str) -> dict[str, str]:
    document = json.loads((project / results).read_text(encoding="utf-8"))
    return {entry["turn_taking"]["category"]: entry["verdict"] for entry in document["evals"]}


def test_the_shipped_configuration_passes_and_the_eager_one_fails_its_pauses(
    examples: ExampleProjects, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = examples.copy("turn-taking-livekit")

    shipped = _run(pytester, "shipped.json")
    shipped.assert_outcomes(passed=2)
    assert _verdicts(project, "shipped.json") == {"pause": "passed", "barge_in": "passed"}

    monkeypatch.setenv("ENDPOINTING_MIN_DELAY", "0.5")
    eager = _run(pytester, "eager.json")
    eager.assert_outcomes(passed=1, failed=1)
    eager.stdout.fnmatch_lines(["*pause_takeover_rate = *budget <= 0: over budget*"])
    assert _verdicts(project, "eager.json") == {"pause": "failed", "barge_in": "passed"}

    compared = subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval", "compare", "shipped.json", "eager.json",
         "--fail-on-regression"],
        cwd=project, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert compared.returncode == 1, compared.stdout + compared.stderr
    assert "pause_takeover_rate" in compared.stdout + compared.stderr
