"""A small voice suite, synthesized once per session with the offline default and copied into
each test's folder, so tests start from real fixtures without paying for synthesis again."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agent_eval.synthesize._cli import main

BOOKING = """\
id: booking
turns:
  - user: "Book me a table for 2 tomorrow at 10am."
    audio: booking_t1.wav
  - user: "Can you email me the confirmation?"
    audio: booking_t2.wav
  - user: "Make it four people."
    audio: audio/booking_t3.wav
  - user: "Thanks, that is all."
    audio: booking_t4.wav
  - user: "No audio for this text turn."
"""

PYPROJECT = """\
[tool.agent_eval]
yaml_dirs = ["evals"]
"""


def file_ids(folder: Path) -> dict[str, tuple[int, int]]:
    """name -> (inode, mtime_ns) of every file under ``folder``: what a rewrite would change."""
    return {
        str(p.relative_to(folder)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def as_recording(source: Path, target: Path) -> None:
    """Write ``source``'s audio to ``target`` as a plain WAV from another tool would: the same
    samples, without the provenance the synthesizer writes into its WAVs."""
    import soundfile

    data, rate = soundfile.read(str(source), dtype="int16")
    soundfile.write(str(target), data, rate, subtype="PCM_16")


@pytest.fixture(scope="session")
def synthesized_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A project (pyproject + evals/booking.yaml) whose four fixtures are made, read-only."""
    root = tmp_path_factory.mktemp("suite")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "evals").mkdir()
    (root / "evals" / "booking.yaml").write_text(BOOKING)
    assert main([str(root / "evals")]) == 0
    return root


@pytest.fixture
def project(
    synthesized_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[], Path]:
    """A fresh copy of the synthesized suite, as the working folder."""

    def make() -> Path:
        root = tmp_path / "project"
        shutil.copytree(synthesized_suite, root)
        monkeypatch.chdir(root)
        return root

    return make
