"""The suite's tiers hold: collecting the fast loop loads no model, and a voice test is never in it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Printed after collecting every test outside the voice folders, in one process.
_COLLECT = """
import sys, pytest
code = pytest.main(["--collect-only", "-q", "-p", "no:cacheprovider", "tests",
                    "--ignore=tests/livekit", "--ignore=tests/room", "--ignore=tests/pipecat",
                    "--ignore=tests/realtime",
                    "--ignore=tests/simulation/test_voice.py",
                    "--ignore=tests/simulation/test_pipecat.py"])
heavy = ("faster_whisper", "ctranslate2", "onnxruntime", "livekit.plugins.silero", "torch")
print("LOADED:" + ",".join(m for m in heavy if m in sys.modules))
sys.exit(int(code))
"""


@pytest.mark.slow
def test_collecting_outside_the_voice_folders_loads_no_model() -> None:
    done = subprocess.run(
        [sys.executable, "-c", _COLLECT], cwd=ROOT, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    loaded = done.stdout.rpartition("LOADED:")[2].strip()
    assert loaded == "", f"collection loaded {loaded}: move the load into a fixture"


@pytest.mark.slow
def test_the_fast_loop_selects_no_voice_room_or_browser_test() -> None:
    fast = "not voice and not room and not browser and not slow"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-m", fast, "tests/livekit", "tests/room", "tests/pipecat",
         "tests/audio_fixtures/test_whisper.py", "tests/report/test_html_report.py",
         "tests/docs/test_snippets.py"],
        cwd=ROOT, capture_output=True, text=True, check=False,
    )  # fmt: skip
    selected = [line for line in done.stdout.splitlines() if "::" in line]
    voice_or_browser = [line for line in selected if "test_snippets.py" not in line]
    assert voice_or_browser == [], voice_or_browser
    # Within one file, a page that streams audio into LiveKit is out and a text page is in.
    assert "tests/docs/test_snippets.py::test_page_snippets_run[docs/transcripts.md]" in selected
    assert not any("[docs/livekit.md]" in line and "page_snippets_run" in line for line in selected)
