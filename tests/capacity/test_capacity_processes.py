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
    # Measured over the sessions' processes, not this one: at K=3 more than one at once (a
    # peak sampled every 0.2 s; each session lasts about 0.1 s after a start of seconds, so
    # on a loaded machine the three need not all overlap at one sample).
    assert steps[0]["processes_peak"] == 1 and 2 <= steps[1]["processes_peak"] <= 3
    assert all(s["cores_per_process"] > 0 for s in steps)
    # Each process holds its own interpreter: memory grows with K.
    assert steps[1]["rss_peak_mb"] > steps[0]["rss_peak_mb"]
    # Per session: each process's own peak RSS (an interpreter with this package imported), and
    # what it paid to start before its call (its imports: CPU seconds, not nothing).
    for step in steps:
        assert 15 < step["rss_per_session_mb"] < step["rss_peak_mb"] * 1.01
        assert step["process_start_s"] > 0 and step["process_start_cpu_s"] > 0
    assert psutil.Process().children(recursive=True) == []  # every session process reaped


def test_an_agent_printing_to_stdout_leaves_the_result_line_found() -> None:
    from pytest_agent_eval._capacity._children import RESULT_PREFIX, _result_of

    out = f'agent: hello\n{RESULT_PREFIX}{{"failures": []}}\nagent: bye at exit\n'.encode()
    assert _result_of(0, 0, out, b"") == {"failures": []}


def test_a_session_without_a_readable_result_line_is_that_sessions_failure() -> None:
    from pytest_agent_eval._capacity._children import RESULT_PREFIX, _result_of

    (none,) = _result_of(1, 0, b'{"failures": []}\n', b"")["failures"]
    assert none.startswith("session 2: no result line")
    (bad,) = _result_of(2, 0, f"{RESULT_PREFIX}{{cut short\n".encode(), b"")["failures"]
    assert bad.startswith("session 3: its result line could not be read (JSONDecodeError")
    (listed,) = _result_of(0, 0, f"{RESULT_PREFIX}[1]\n".encode(), b"")["failures"]
    assert "a list, not an object" in listed


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"  # a zombie runs nothing
    except FileNotFoundError:
        return True


def test_stopping_a_session_that_exited_kills_what_it_left_in_its_group() -> None:
    import asyncio
    import os
    import signal
    import sys

    import pytest

    from pytest_agent_eval._capacity._children import _stop

    if not sys.platform.startswith("linux"):
        pytest.skip("reads /proc")

    async def scenario() -> int:
        process = await asyncio.create_subprocess_exec(
            "sh", "-c", "sleep 300 >/dev/null 2>&1 & echo $!",
            stdout=asyncio.subprocess.PIPE, start_new_session=True,
        )  # fmt: skip
        assert process.stdout is not None
        grandchild = int((await process.stdout.readline()).decode())
        await process.wait()  # the session's process exited; its sleep did not
        try:
            assert not _gone(grandchild)
            await _stop(process)
            for _ in range(500):  # a bound, not a timing claim: SIGKILL is delivered at once
                if _gone(grandchild):
                    break
                await asyncio.sleep(0.01)
            return grandchild
        finally:
            if not _gone(grandchild):
                os.kill(grandchild, signal.SIGKILL)

    assert _gone(asyncio.run(scenario()))
