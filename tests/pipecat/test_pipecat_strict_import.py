"""Pipecat under ``-W error`` (warnings as errors, a common CI setting): Pipecat's own
deprecation warnings at import (its audio helpers import the deprecated ``audioop``; its TTS
module subclasses classes it deprecated) are no error of the user's, whoever imports Pipecat
first; the example's bot imports it before the adapter does. Through pytest itself, in a child
process, with pytest's ``-W error`` and with ``PYTHONWARNINGS=error`` (``python -W error``)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval.synthesize import ensure_fixtures
from strict_session import STRICT, assert_clean_exit

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-pipecat"


@pytest.fixture(scope="module")
def example_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example with the fixtures of its booking transcript synthesized."""
    target = tmp_path_factory.mktemp("strict") / "voice-pipecat"
    shutil.copytree(EXAMPLE_DIR, target, ignore=shutil.ignore_patterns("audio", "__pycache__"))
    transcript = load_transcript_file(target / "evals" / "booking.yaml")
    ensure_fixtures([transcript], jobs=1).raise_for_failures()
    return target


@pytest.fixture
def project(pytester: pytest.Pytester, example_copy: Path) -> pytest.Pytester:
    shutil.copytree(example_copy, pytester.path, dirs_exist_ok=True)
    return pytester


ARGS = ("--agent-eval-live", "--agent-eval-runs", "1", "evals/booking.yaml")


def test_a_pipecat_transcript_passes_under_pytest_s_w_error(project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess(*STRICT, *ARGS)
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)


def test_a_pipecat_transcript_passes_under_python_w_error(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONWARNINGS", "error")
    result = project.runpytest_subprocess("-p", "no:cacheprovider", *ARGS)
    assert_clean_exit(result)
    result.assert_outcomes(passed=1)
