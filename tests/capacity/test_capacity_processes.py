"""``agent-eval capacity --process-per-session``: each conversation in a process of its own,
its CPU and memory measured with psutil over the step's processes."""

from __future__ import annotations

import json
from pathlib import Path

import psutil

from pytest_agent_eval.__main__ import main

AGENT = """\
import asyncio
import os


async def waiting(history):
    await asyncio.sleep(0.05)
    return f"ok from {os.getpid()}"
"""


def test_each_session_runs_in_its_own_process(tmp_path: Path) -> None:
    module = f"process_agent_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(AGENT)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "chat.yaml").write_text(
        'id: chat\nturns:\n  - user: "hello"\n  - user: "thanks"\n'
    )
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    code = main(
        [
            "capacity", "--rootdir", str(tmp_path), "--json", str(tmp_path / "out.json"),
            "--html", str(tmp_path / "out.html"), "--agent", f"{module}:waiting",
            "--process-per-session", "--steps", "1,3", "--repeats", "1",
            "--loop-lag-ms", "5000", "--p95-latency-ms", "60000",
        ]
    )  # fmt: skip
    assert code == 0
    data = json.loads((tmp_path / "out.json").read_text())
    assert data["mode"] == "process per session"
    steps = data["steps"]
    assert [s["turns"] for s in steps] == [2, 6]
    assert all(s["failures"] == [] for s in steps)
    # Measured over the sessions' processes, not this one: three at once at K=3.
    assert [s["processes_peak"] for s in steps] == [1, 3]
    assert all(s["cores_per_process"] > 0 for s in steps)
    # Each process holds its own interpreter: memory grows with K.
    assert steps[1]["rss_peak_mb"] > steps[0]["rss_peak_mb"]
    assert psutil.Process().children(recursive=True) == []  # every session process reaped
