"""Failure attribution on real Pipecat pipelines (issue 35): the seeded fault corpus
(`fault_corpus`) on the example bot's own ``run_bot`` (Silero VAD, smart-turn), each case's
cause read back from the results file and the terminal, and the verdicts the same with
attribution on and off."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fault_corpus import (
    check_attribution_off,
    check_shared_causes,
    run_corpus,
    synthesize_corpus,
    turn_attribution_off,
    write_corpus,
)

EXAMPLE_BOT = Path(__file__).resolve().parents[2] / "examples" / "voice-pipecat" / "bot.py"

CRASH_VERDICT = "crashed"
"""A model that breaks in the user's rule callback (``_broken``, called by our
ScriptedLLMService) is the bot crashing, as on LiveKit: a CRASHED run, which attribution leaves
alone."""
OUTCOMES = dict(passed=1, failed=5)

FAULT_AGENTS = '''
"""The example's restaurant bot, with one fault seeded per case (its module globals swapped
for the test, as a conftest would)."""

import bot
from bot import RULES, booking_args

from pytest_agent_eval.adapters.pipecat import FixtureTextSTTService, PipecatAdapter, Rule


class MisreadingSTTService(FixtureTextSTTService):
    """The fixture's own words, but "fifteen" misread as "fifty", every time."""

    async def _transcribe(self, audio, span):
        return (await super()._transcribe(audio, span)).replace("fifteen", "fifty")


def _teens_as_tens(ctx):
    args = booking_args(ctx)
    if (ctx.group("party") or "").lower() == "fifteen":
        args["party_size"] = 50  # the model's mistake: the transcript is right
    return args


WRONG_ARGUMENT = [
    Rule(RULES[0].pattern, tool="book_table", args=_teens_as_tens, reply=RULES[0].reply),
    *RULES[1:],
]


def _broken(ctx):
    raise RuntimeError("the model broke")


BROKEN = [Rule(RULES[0].pattern, tool="book_table", args=_broken), *RULES[1:]]


async def check_menu(params, diet: str) -> None:
    """Find dishes for a diet (the menu service is down: it raises).

    Args:
        diet: The diet.
    """
    raise RuntimeError(f"no information about {diet} dishes")


KOSHER = [
    Rule(r"(?P<diet>kosher)", tool="check_menu", args={"diet": "{diet}"},
         reply=lambda ctx: "Sorry, I could not check the menu." if ctx.tool_error
         else f"We have {ctx.tool_result['dishes']}."),
    *RULES,
]


def adapter(case, monkeypatch):
    if case == "hearing":
        monkeypatch.setattr(bot, "FixtureTextSTTService", MisreadingSTTService)
    elif case == "logic":
        monkeypatch.setattr(bot, "RULES", WRONG_ARGUMENT)
    elif case == "crash":
        monkeypatch.setattr(bot, "RULES", BROKEN)
    elif case == "tool":
        monkeypatch.setattr(bot, "check_menu", check_menu)
        monkeypatch.setattr(bot, "RULES", KOSHER)
    return PipecatAdapter(run_bot=bot.run_bot, timeout_s=20.0)
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # In the fixture, not at import: collecting the suite must load no model (Silero).
    pytest.importorskip("pipecat", reason="needs the pipecat extra")
    root = tmp_path_factory.mktemp("pipecat_corpus")
    shutil.copy(EXAMPLE_BOT, root / "bot.py")
    write_corpus(root, FAULT_AGENTS)
    synthesize_corpus(root)
    return root


@pytest.fixture
def project(pytester: pytest.Pytester, corpus: Path) -> pytest.Pytester:
    shutil.copytree(corpus, pytester.path, dirs_exist_ok=True)
    return pytester


def test_each_seeded_fault_is_attributed_to_its_cause(project: pytest.Pytester) -> None:
    result, found = run_corpus(project, "--agent-eval-attribute", "--junitxml=junit.xml")
    result.assert_outcomes(**OUTCOMES)

    verdict, hearing = found["hearing_booking"]
    assert verdict == "failed" and hearing["cause"] == "hearing"
    misheard = [e for e in hearing["evidence"] if e["counterfactual"] == "heard_words"]
    assert [(e["heard"], e["intended"], e["turn"]) for e in misheard] == [("fifty", "fifteen", 0)]
    # Rerun as audio with the bot's STT service replaced by the fixture's words (its VAD and
    # smart-turn its own), and passed: no text rerun needed.
    assert [e["counterfactual"] for e in hearing["evidence"]] == ["heard_words", "fixture_hearing"]
    swap = hearing["evidence"][1]
    assert swap["verdict"] == "passed" and swap["turn"] == 0
    assert "with the fixture's words as its STT, turn 1 passes" in swap["detail"]

    verdict, logic = found["logic_booking"]
    assert verdict == "failed" and logic["cause"] == "agent_logic"
    # Heard right; the bot already hears with the stand-in, so there is no STT to replace: the
    # evidence says so, and the text rerun decides.
    assert [(e["counterfactual"], e["verdict"]) for e in logic["evidence"]] == [
        ("heard_words", "none"),
        ("fixture_hearing", "error"),
        ("text_rerun", "failed"),
    ]
    assert "already hears with FixtureTextSTTService" in logic["evidence"][1]["error"]

    check_shared_causes(result, found, project.path / "junit.xml", CRASH_VERDICT)


def test_attribution_off_changes_no_verdict_and_writes_none(project: pytest.Pytester) -> None:
    turn_attribution_off(project)
    result, found = run_corpus(project)
    result.assert_outcomes(**OUTCOMES)
    check_attribution_off(result, found, CRASH_VERDICT)
