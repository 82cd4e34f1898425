"""The far end of an outbound call on real in-process LiveKit sessions and real Pipecat
pipelines, through pytest itself (pytester subprocesses), with the evals of
examples/phone-outbound-livekit: the same outbound agent, written for each framework from its
docs (the example's LiveKit agent, and its Pipecat twin), leaves its message after a voicemail's beep, presses its way
through an IVR (LiveKit's ``send_dtmf_events`` -> ``publish_dtmf``; Pipecat's
``OutputDTMFUrgentFrame``) and talks to the person who answers, with the same verdicts on
both; the planted bugs (talking over the greeting, pressing the wrong key) fail on both, with
the same reasons."""

from __future__ import annotations

import importlib.util
import shutil
import wave
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FAST = ("--agent-eval-live", "-p", "no:cacheprovider")

CONFTESTS = {
    "livekit": """
import pytest

from pytest_agent_eval.adapters.livekit import LiveKitAdapter


@pytest.fixture
def llm_eval_agent():
    from outbound_agent import make_session

    return LiveKitAdapter(make_session, timeout_s=20.0)
""",
    "pipecat": """
import pytest

from pytest_agent_eval.adapters.pipecat import PipecatAdapter


@pytest.fixture
def llm_eval_agent():
    from outbound_bot import run_bot

    return PipecatAdapter(run_bot=run_bot, timeout_s=20.0)
""",
}
EXAMPLE = HERE.parents[1] / "examples" / "phone-outbound-livekit"
AGENTS = {
    "livekit": EXAMPLE / "outbound_agent.py",
    "pipecat": HERE / "outbound_bot.py",
}
NEEDS = {"livekit": "livekit.agents", "pipecat": "pipecat"}

PYPROJECT = """
[tool.agent_eval]
yaml_dirs = ["evals"]
runs = 1
threshold = 1.0
"""


@pytest.fixture(params=["livekit", "pipecat"])
def project(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> pytest.Pytester:
    framework = request.param
    # Looked up, not imported: the agents run in pytester's subprocesses, and importing both
    # frameworks into this one process is what the subprocesses are there to avoid.
    if importlib.util.find_spec(NEEDS[framework]) is None:
        pytest.skip(f"needs the {framework} extra")
    shutil.copy(AGENTS[framework], pytester.path / AGENTS[framework].name)
    shutil.copy(EXAMPLE / "beep_detector.py", pytester.path / "beep_detector.py")
    pytester.makeconftest(CONFTESTS[framework])
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    shutil.copytree(EXAMPLE / "evals", pytester.path / "evals")
    return pytester


@pytest.fixture(params=["livekit", "pipecat"])
def heard(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> pytest.Pytester:
    """The project with the voicemail heard as audio (evals_heard: its greeting's fixture,
    made by the offline TTS) as its only eval."""
    framework = request.param
    if importlib.util.find_spec(NEEDS[framework]) is None:
        pytest.skip(f"needs the {framework} extra")
    shutil.copy(AGENTS[framework], pytester.path / AGENTS[framework].name)
    shutil.copy(EXAMPLE / "beep_detector.py", pytester.path / "beep_detector.py")
    pytester.makeconftest(CONFTESTS[framework])
    (pytester.path / "pyproject.toml").write_text(PYPROJECT)
    shutil.copytree(EXAMPLE / "evals_heard", pytester.path / "evals")
    return pytester


def test_the_agent_waits_for_the_beep_reaches_the_desk_and_talks_to_the_patient(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=3)


def test_talking_over_the_greeting_fails_the_voicemail(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMINDER_BUG", "1")
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the agent talked over the voicemail's greeting, before the beep*",
            "*cause: agent_logic — the call given as text fails the same check: *",
            "*1 failed run: 1 agent_logic*",
            "FAILED evals/voicemail.yaml::reminder_voicemail*",
        ]
    )


def test_pressing_the_first_key_heard_fails_the_ivr(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("IVR_BUG", "1")
    result = project.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the call reached 'billing', not 'appointments' (path: main -> billing)*",
            "*cause: agent_logic — the call given as text fails the same check: *billing*",
            "*1 failed run: 1 agent_logic*",
        ]
    )


@pytest.mark.voice
def test_heard_as_audio_the_agent_hears_the_beep_in_its_audio_and_leaves_its_message(
    heard: pytest.Pytester,
) -> None:
    result = heard.runpytest_subprocess(*FAST)
    result.assert_outcomes(passed=1)


@pytest.mark.voice
def test_heard_as_audio_talking_over_the_greeting_fails_with_the_text_far_ends_reason(
    heard: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REMINDER_BUG", "1")
    result = heard.runpytest_subprocess(*FAST)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*the agent talked over the voicemail's greeting, before the beep: *Tuesday at 3*",
            # the call given as text (its far end too) runs to its end and fails the same way
            "*cause: agent_logic — the call given as text fails the same check: *",
            "*1 failed run: 1 agent_logic*",
            "FAILED evals/voicemail_heard.yaml::reminder_voicemail_heard*",
        ]
    )


HEARD = "evals/voicemail_heard.yaml"
GREETING = "evals/audio/far_end/reminder_voicemail_heard/greeting.wav"


@pytest.mark.voice
def test_a_stale_far_end_fixture_is_refused_before_the_agent_runs(
    heard: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The greeting's text changed, its fixture did not: the agent would hear the old words (or,
    # with a fixture-text STT, none), and the planted bug would pass. The preflight refuses it.
    monkeypatch.setenv("REMINDER_BUG", "1")
    yaml = heard.path / HEARD
    yaml.write_text(yaml.read_text().replace("reached Sam", "reached Alex"))
    result = heard.runpytest_subprocess(*FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*{HEARD}:5: transcript 'reminder_voicemail_heard', far_end.greeting: audio "
            f"fixture {GREETING} is stale (*). Fix: python -m pytest_agent_eval.synthesize_audio "
            f"{HEARD}*",
        ]
    )
    assert "agent_logic" not in result.stdout.str()


@pytest.mark.voice
def test_a_missing_far_end_fixture_is_refused_or_skipped_as_stale_audio_says(
    heard: pytest.Pytester,
) -> None:
    (heard.path / GREETING).unlink()
    result = heard.runpytest_subprocess(*FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            f"*{HEARD}:5: transcript 'reminder_voicemail_heard', far_end.greeting: audio "
            f"fixture {GREETING} is missing (*). Fix: python -m "
            f"pytest_agent_eval.synthesize_audio {HEARD}*",
        ]
    )
    skipped = heard.runpytest_subprocess(*FAST, "--agent-eval-stale-audio=skip")
    skipped.assert_outcomes(skipped=1)


@pytest.mark.voice
def test_a_far_end_line_nothing_proves_is_an_error_with_a_fixture_text_stt(
    heard: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The greeting as a recording (its samples, no sidecar, no provenance): fresh to the
    # preflight, but nothing proves its words, so an STT that hears by provenance would hear
    # silence and the planted bug would pass.
    monkeypatch.setenv("REMINDER_BUG", "1")
    wav = heard.path / GREETING
    with wave.open(str(wav), "rb") as made:
        params, frames = made.getparams(), made.readframes(made.getnframes())
    with wave.open(str(wav), "wb") as recorded:
        recorded.setparams(params)
        recorded.writeframes(frames)
    (heard.path / f"{GREETING}.hash").unlink()
    result = heard.runpytest_subprocess(*FAST)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*transcript 'reminder_voicemail_heard', far_end.greeting: the agent hears by the "
         "fixtures' provenance, and *recording*"]
    )  # fmt: skip
