"""``agent-eval capacity --worker``: a real LiveKit worker (``python FILE start``, its job
processes and its ``load_threshold``) behind a real livekit-server on loopback, K callers in K
rooms; calls the worker refuses, and calls it takes past its load_threshold, are counted with
the step where they began, and nothing is left running after the command, finished or
interrupted (room tier)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from child_pytest import hears_ctrl_c
from ci_builds import wait_for_build
from pytest_agent_eval._capacity._worker import server_binary
from pytest_agent_eval.errors import ConfigError

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

WORKER = Path(__file__).with_name("capacity_worker.py")

TRANSCRIPT = """\
id: hello
turns:
  - user: "hello"
  - user: "a table for two"
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    wait_for_build("server")
    try:
        server_binary()
    except ConfigError as exc:
        if os.environ.get("AGENT_EVAL_REQUIRE_ROOM_TESTS") == "1":
            raise
        pytest.skip(str(exc))
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "hello.yaml").write_text(TRANSCRIPT)
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    shutil.copy(WORKER, tmp_path / "worker.py")  # a path only this test's processes have
    return tmp_path


def _command(project: Path, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "pytest_agent_eval", "capacity", "--worker", "worker.py",
        "--agent-name", "capacity-agent", "--json", "out.json", "--html", "out.html",
        "--repeats", "1", "--p95-latency-ms", "30000", "--loop-lag-ms", "2000", *args,
    ]  # fmt: skip


def _env(project: Path) -> dict[str, str]:
    # The command's own files (the server's config) go under the project: findable below.
    return {**os.environ, "TMPDIR": str(project)}


def _left_running(project: Path) -> list[str]:
    """Processes whose command line names this test's folder (its worker, its server)."""
    left = []
    for process in psutil.process_iter(["cmdline"]):
        line = " ".join(process.info["cmdline"] or [])
        if str(project) in line or (str(project / "worker.py") in line):
            left.append(line)
    return left


def test_a_worker_refusing_calls_past_its_load_threshold(project: Path) -> None:
    done = subprocess.run(
        _command(project, "--steps", "1,3", "--all-steps"),
        cwd=project, env=_env(project), capture_output=True, text=True, check=False,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((project / "out.json").read_text())
    assert data["agent"].startswith("worker ")
    one, three = data["steps"]
    # One call: the worker's job process answered both turns, measured in its process tree.
    assert one["turns"] == 2 and one["refused"] == [] and one["failures"] == []
    assert one["processes_peak"] >= 2  # the worker and at least one job process
    assert one["cores_used"] > 0
    # Three at once: the worker takes two (its load reaches load_threshold), refuses the rest.
    assert three["refused"], three
    assert all("no worker took the dispatch" in line for line in three["refused"])
    assert data["began_at_k"]["refused"] == 3
    # Its load is honest: what it took, it took under its threshold.
    assert one["past_threshold"] == [] and three["past_threshold"] == []
    assert data["began_at_k"]["past_threshold"] is None
    assert data["knee"]["k"] == 1
    assert _left_running(project) == []


def test_a_worker_whose_load_fnc_lies_takes_calls_past_its_threshold_and_fails_the_gate(
    project: Path,
) -> None:
    # load_fnc says 0.0 whatever runs; two calls' processes carry more than 1% of the machine.
    done = subprocess.run(
        _command(project, "--steps", "2", "--refine", "0", "--load-threshold", "0.01"),
        cwd=project, env={**_env(project), "CAPACITY_WORKER_LOAD": "zero"},
        capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "past its load_threshold, beginning at K=2" in done.stderr, done.stderr
    assert "K=2: taken past load_threshold: room " in done.stdout, done.stdout
    data = json.loads((project / "out.json").read_text())
    (two,) = data["steps"]
    assert two["refused"] == [] and two["past_threshold"], two
    assert f"{len(two['past_threshold'])} call(s) taken past load_threshold" in two["over_budget"]
    assert data["began_at_k"]["past_threshold"] == 2
    assert data["gate"]["passed"] is False
    assert data["gate"]["taken_past_load_threshold_at_k"] == 2
    assert data["worker_load_threshold"] == {"value": 0.01, "from": "--load-threshold"}
    assert "<th>taken past load_threshold</th>" in (project / "out.html").read_text()
    assert _left_running(project) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl_c", "sigterm"])
def test_ctrl_c_or_sigterm_stops_the_worker_its_jobs_and_the_server(
    project: Path, signum: signal.Signals
) -> None:
    """Ctrl-C, or SIGTERM as a cancelled CI job sends it: the command stops what it started
    (before, SIGTERM ended it on the spot and left the worker and its job processes running)."""
    process = subprocess.Popen(
        _command(project, "--steps", "1,2"),
        cwd=project, env=_env(project), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=hears_ctrl_c,
    )  # fmt: skip
    assert process.stderr is not None
    seen: list[str] = []
    try:
        for line in process.stderr:
            seen.append(line)
            if line.startswith("capacity: K=1 repeat 1/1 ..."):
                # A call is under way: the worker has a job process busy with it.
                process.send_signal(signum)
                break
        _, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, "".join(seen) + err[-3000:]
    assert json.loads((project / "out.json").read_text())["complete"] is False
    assert _left_running(project) == []


@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["--agent-name", "a"], {"LIVEKIT_SERVER_BIN": "/nonexistent/server"}, "not an executable"),
        ([], {}, "worker mode needs both --worker FILE and --agent-name NAME"),
        (["--agent-name", "a", "--agent", "m:f"], {}, "either --worker"),
        (["--agent-name", "a", "--load-threshold", "0"], {}, "load_threshold must be > 0"),
    ],
)
def test_bad_worker_input_exits_2_before_anything_starts(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    from pytest_agent_eval.__main__ import main

    for name, value in env.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "hello.yaml").write_text(TRANSCRIPT)
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    shutil.copy(WORKER, tmp_path / "worker.py")
    code = main(
        ["capacity", "--rootdir", str(tmp_path), "--worker", str(tmp_path / "worker.py"), *args]
    )
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "agent-eval-capacity.json").exists()
