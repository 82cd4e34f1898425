"""``agent-eval compare BASE NEW``: two results files of real sessions side by side, as a
session's baseline section shows them, with an exit status CI can gate on."""

from __future__ import annotations

import json
from importlib import metadata

import pytest

from pytest_agent_eval.__main__ import main

from .conftest import Project

STEADY = (
    "id: {id}\nruns: 10\nturns:\n  - user: hi\n    expect:\n      reply_contains_any: [{want}]\n"
)


def _two_sessions(project: Project, monkeypatch: pytest.MonkeyPatch) -> None:
    project.agent("return AgentReply('booked' if os.environ['MODE'] == 'good' else 'nope', [])\n")
    conftest = project.path / "tests" / "conftest.py"
    conftest.write_text("import os\n" + conftest.read_text())
    project.transcript("regress", STEADY.format(id="regress", want="booked"))
    project.transcript("steady", STEADY.format(id="steady", want="booked, nope"))
    project.transcript("gone", STEADY.format(id="gone", want="booked"))
    monkeypatch.setenv("MODE", "good")
    project.run_live("--agent-eval-results", "base.json").assert_outcomes(passed=3)
    (project.path / "tests" / "evals" / "gone.yaml").unlink()
    project.transcript("fresh", STEADY.format(id="fresh", want="nope"))
    monkeypatch.setenv("MODE", "bad")
    project.run_live("--agent-eval-results", "new.json").assert_outcomes(passed=2, failed=1)


def test_two_results_files_compared_eval_by_eval(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sessions(project, monkeypatch)
    capsys.readouterr()  # the sessions' own output
    base, new, page = (str(project.path / name) for name in ("base.json", "new.json", "c.md"))

    assert main(["compare", base, new, "--markdown", page]) == 0
    out = capsys.readouterr().out.splitlines()
    headline = (
        "1 regressed, 0 improved, 1 unchanged within noise, 0 not comparable, 1 new, "
        "1 removed (McNemar's exact test on runs paired by number, p < 0.05)"
    )
    assert out[0] == f"{new} against {base}"
    assert headline in out
    [regress] = [line for line in out if line.startswith("regress ")]
    assert "1.00 [0.72–1.00] (10/10)" in regress and "0.00 [0.00–0.28] (0/10)" in regress
    assert "regressed" in regress
    [steady] = [line for line in out if line.startswith("steady ")]
    assert "unchanged within noise" in steady
    assert "new: fresh" in out and "removed: gone" in out
    text = (project.path / "c.md").read_text()
    assert text.startswith("# new.json against base.json\n")
    assert "| regress | 1.00 [0.72–1.00] (10/10) | 0.00 [0.00–0.28] (0/10) | regressed |" in text

    # For CI: a regression fails the step only when asked.
    assert main(["compare", base, new, "--fail-on-regression"]) == 1
    assert main(["compare", base, base, "--fail-on-regression"]) == 0
    same = capsys.readouterr().out
    assert "0 regressed, 0 improved, 3 unchanged within noise" in same


def test_the_frameworks_that_changed_are_named_first(
    project: Project, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _two_sessions(project, monkeypatch)
    capsys.readouterr()
    base_path, new_path = project.path / "base.json", project.path / "new.json"
    base, new = (json.loads(path.read_text()) for path in (base_path, new_path))
    installed = new["frameworks"]
    assert installed["pydantic-ai-slim"] == metadata.version("pydantic-ai-slim")
    # The base ran on an older pydantic-ai, and with a framework since uninstalled.
    base["frameworks"] = {**installed, "pydantic-ai-slim": "0.9.0", "crewai": "0.1.0"}
    base_path.write_text(json.dumps(base))
    page = project.path / "c.md"

    assert main(["compare", str(base_path), str(new_path), "--markdown", str(page)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1] == (
        f"frameworks changed: pydantic-ai-slim 0.9.0 -> {installed['pydantic-ai-slim']}, "
        "crewai 0.1.0 -> not installed"
    )
    assert "Frameworks changed: pydantic-ai-slim 0.9.0 -> " in page.read_text()

    # The same versions, or a file written before the field existed: no such line.
    del base["frameworks"]
    base_path.write_text(json.dumps(base))
    assert main(["compare", str(base_path), str(new_path)]) == 0
    assert "frameworks changed" not in capsys.readouterr().out
    assert main(["compare", str(new_path), str(new_path)]) == 0
    assert "frameworks changed" not in capsys.readouterr().out


def test_a_file_that_cannot_be_compared_is_named(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    (project.path / "old.json").write_text('{"schema_version": 99, "evals": []}')
    (project.path / "new.json").write_text('{"schema_version": 1, "evals": []}')
    old, new = str(project.path / "old.json"), str(project.path / "new.json")

    assert main(["compare", old, new]) == 2
    err = capsys.readouterr().err
    assert err.strip() == (
        f"agent-eval compare: base {old}: schema_version 99, this version reads 1; write a "
        "new baseline with --agent-eval-results"
    )
    assert main(["compare", new, str(project.path / "missing.json")]) == 2
    assert "agent-eval compare: new " in capsys.readouterr().err


def test_a_new_crash_is_a_regression_whatever_the_test_says(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    entry = {"key": "k", "label": "desk", "runs": 5, "agent_tokens": None, "p95_latency_s": None}
    base = {"schema_version": 1, "evals": [{**entry, "passed_runs": 5, "verdict": "passed"}]}
    new = {"schema_version": 1, "evals": [{**entry, "passed_runs": 4, "verdict": "crashed"}]}
    (project.path / "base.json").write_text(json.dumps(base))
    (project.path / "new.json").write_text(json.dumps(new))

    # 5/5 then 4/5 is well within noise for Fisher's test, but one run crashed.
    status = main(
        [
            "compare",
            str(project.path / "base.json"),
            str(project.path / "new.json"),
            "--fail-on-regression",
        ]
    )
    assert status == 1
    assert "1 regressed, 0 improved, 0 unchanged within noise" in capsys.readouterr().out
