"""``agent-eval capacity`` on the Pipecat example: a real pipeline (Silero VAD, the bot's own
processors) per session, its audio turns streamed in real time (voice and slow tiers)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "voice-pipecat"


def test_the_pipecat_bot_runs_k_real_pipelines_per_step(tmp_path: Path) -> None:
    shutil.copytree(
        EXAMPLE, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest_agent_eval", "capacity", "evals/booking.yaml",
            "--steps", "1,2", "--repeats", "1", "--p95-latency-ms", "10000",
            "--loop-lag-ms", "500", "--min-sessions-per-core", "1",
        ],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    data = json.loads((tmp_path / "agent-eval-capacity.json").read_text())
    assert data["transcripts"] == ["booking_remembered"]
    steps = data["steps"]
    assert [s["k"] for s in steps] == [1, 2]
    assert [s["turns"] for s in steps] == [3, 6]
    assert all(s["failures"] == [] for s in steps)
    assert data["knee"]["k"] == 2
    assert data["gate"]["passed"] is True
    assert (tmp_path / "agent-eval-capacity.html").is_file()


# A processor of the bot's own that computes 2 CPU seconds on each user transcription.
BUSY = """
import time as _time

from pipecat.frames.frames import TranscriptionFrame
from pipecat.processors.frame_processor import FrameProcessor


class BusyProcessor(FrameProcessor):
    async def process_frame(self, frame, direction):
        await super().process_frame(frame, direction)
        if isinstance(frame, TranscriptionFrame):
            end = _time.thread_time() + 2.0
            while _time.thread_time() < end:
                pass
        await self.push_frame(frame, direction)

"""


def test_the_pipecat_bot_runs_one_process_per_call(tmp_path: Path) -> None:
    shutil.copytree(
        EXAMPLE, tmp_path, dirs_exist_ok=True, ignore=shutil.ignore_patterns("__pycache__")
    )
    bot = tmp_path / "bot.py"
    text = bot.read_text()
    for old, new in (
        ("\nasync def run_bot(", BUSY + "\nasync def run_bot("),
        ("            stt,\n", "            stt,\n            BusyProcessor(),\n"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    bot.write_text(text)
    done = subprocess.run(
        [
            sys.executable, "-m", "pytest_agent_eval", "capacity", "evals/booking.yaml",
            "--process-per-session", "--cpu-by-component", "--steps", "1", "--repeats", "1",
            "--p95-latency-ms", "10000", "--loop-lag-ms", "500",
        ],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (step,) = json.loads((tmp_path / "agent-eval-capacity.json").read_text())["steps"]
    # The bot's process answered every turn; its CPU and memory are its own (psutil).
    assert step["turns"] == 3 and step["failures"] == [], step
    assert step["processes_peak"] == 1
    assert step["cores_per_process"] > 0 and step["rss_peak_mb"] > 100  # Silero, the pipeline
    # The one process's own peak is the step's; it started (Pipecat, Silero) before its call.
    assert 100 < step["rss_per_session_mb"] <= step["rss_peak_mb"]
    assert step["process_start_cpu_s"] > 0.5
    assert "each session's process: " in done.stdout
    # Metered in the bot's process: the busy processor is the agent's code, and the most CPU.
    components = step["cpu_by_component_s"]
    assert max(components, key=components.__getitem__) == "agent", components
    assert components["vad"] > 0
