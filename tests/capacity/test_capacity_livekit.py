"""``agent-eval capacity`` on the LiveKit example: a real AgentSession per session, its audio
turns streamed in real time, as a user runs the command (a subprocess in a copy of the
project). A busy loop in a tool fails the gate; Ctrl-C exits 130 with a partial report."""

from __future__ import annotations

import json
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from child_pytest import hears_ctrl_c

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"

# A CPU regression in the agent's own code: each tool call computes for 1.5 CPU seconds,
# holding the event loop at least that long.
BUSY = """
import time as _time


def _busy() -> None:
    end = _time.thread_time() + 1.5
    while _time.thread_time() < end:
        pass

"""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the LiveKit example with its voice fixtures synthesized (offline TTS)."""
    where = tmp_path_factory.mktemp("livekit-capacity")
    shutil.copytree(
        EXAMPLE, where, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest_agent_eval.synthesize_audio", "evals"],
        cwd=where,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return where


def _command(project: Path, out: str, *args: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest_agent_eval",
        "capacity",
        "--json",
        str(project / f"{out}.json"),
        "--html",
        str(project / f"{out}.html"),
        *args,
    ]


def _run(project: Path, out: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _command(project, out, *args),
        cwd=project,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def test_the_example_agent_runs_k_real_sessions_per_step(project: Path) -> None:
    done = _run(
        project,
        "example",
        "--steps",
        "1,2",
        "--repeats",
        "1",
        "--p95-latency-ms",
        "10000",
        "--loop-lag-ms",
        "500",
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((project / "example.json").read_text())
    assert data["agent"].startswith("llm_eval_agent (")
    assert sorted(data["transcripts"]) == ["booking_remembered", "greeting_any_rate"]
    steps = data["steps"]
    assert [s["k"] for s in steps] == [1, 2]
    # Four turns a session (three booking turns, one greeting): every one answered.
    assert [s["turns"] for s in steps] == [4, 8]
    assert all(s["failures"] == [] for s in steps)
    assert all(s["p95_latency_ms"] > 0 and s["cpu_s_per_audio_s"] > 0 for s in steps)
    assert data["knee"]["k"] == 2
    assert "sessions per core" in done.stdout
    # CPU by component is metered only when asked (the meter's own CPU would lower the knee).
    assert all(s["cpu_by_component_s"] == {} for s in steps)
    assert "CPU by component" not in done.stdout
    page = (project / "example.html").read_text()
    assert "CPU by component: not metered" in page and "data-component" not in page


def test_a_busy_loop_in_a_tool_fails_the_gate(project: Path, tmp_path: Path) -> None:
    busy = tmp_path / "busy"
    shutil.copytree(project, busy)
    agent = busy / "booking_agent.py"
    text = agent.read_text()
    text = text.replace("\nVAD = ", BUSY + "\nVAD = ", 1)
    for line in ("        reference = f", "        dishes = MENU.get"):
        assert line in text
        text = text.replace(line, "        _busy()\n" + line, 1)
    agent.write_text(text)
    done = _run(
        busy, "busy", "--steps", "1,2", "--repeats", "1", "--p95-latency-ms", "10000",
        "--loop-lag-ms", "500", "--min-sessions-per-core", "1", "--cpu-by-component",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout[-3000:] + done.stderr[-3000:]
    assert "capacity gate failed" in done.stderr
    data = json.loads((busy / "busy.json").read_text())
    assert data["knee"]["k"] == 0
    assert [s["k"] for s in data["steps"]] == [1]
    assert any("loop lag" in why for why in data["steps"][0]["over_budget"])
    # The busy tools are the agent's own code, and where the step's CPU went.
    components = data["steps"][0]["cpu_by_component_s"]
    assert max(components, key=components.__getitem__) == "agent", components
    assert components["vad"] > 0  # Silero, in every session
    assert "K=1: CPU by component: agent " in done.stdout
    # The page draws the same split: one bar for K=1, a segment per component sized by its
    # share, the agent's the widest.
    page = (busy / "busy.html").read_text()
    shares = {
        name: float(share)
        for name, share in re.findall(r'data-component="(\w+)" data-share="([\d.]+)"', page)
    }
    assert set(shares) == set(components), (shares, components)
    assert sum(shares.values()) == pytest.approx(1.0, abs=0.001)
    total = sum(components.values())
    for name, seconds in components.items():
        assert shares[name] == pytest.approx(seconds / total, abs=0.001)
    assert max(shares, key=shares.__getitem__) == "agent"
    assert "<th>CPU s per audio s</th>" in page


def test_ctrl_c_exits_130_with_a_partial_report(project: Path) -> None:
    process = subprocess.Popen(
        _command(
            project, "stopped", "--steps", "1,2,4", "--repeats", "1", "--p95-latency-ms", "10000"
        ),
        cwd=project,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=hears_ctrl_c,
    )
    assert process.stderr is not None
    seen: list[str] = []
    try:
        for line in process.stderr:
            seen.append(line)
            if line.startswith("capacity: K=2 repeat 1/1 ..."):
                process.send_signal(signal.SIGINT)
                break
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130, "".join(seen) + err[-3000:]
    data = json.loads((project / "stopped.json").read_text())
    assert data["complete"] is False
    assert [s["k"] for s in data["steps"]] == [1]
    assert "interrupted" in err
    assert "results:" in out
