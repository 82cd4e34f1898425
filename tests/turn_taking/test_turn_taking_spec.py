"""A ``turn_taking:`` YAML file: read into a spec, its mistakes named with file, line, field and
the fix, and collected as one pytest item per category (no agent runs here)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_agent_eval._turn_gate._judge import judge_budgets
from pytest_agent_eval._turn_gate._spec import (
    METRIC_CATEGORIES,
    is_turn_taking_file,
    load_turn_taking_file,
)
from pytest_agent_eval._turn_taking._metrics import Observation
from pytest_agent_eval._turn_taking._pack import PACK_VOICES
from pytest_agent_eval._turn_taking._stimulus import Category, Expected
from pytest_agent_eval.errors import TranscriptError
from pytest_agent_eval.models._turn_taking import Metric

GOOD = """\
id: turns
tags: [gate:turns]
turn_taking:
  categories: [pause, barge_in]
  voices: 1
  seeds: 2
  budgets:
    pause_takeover_rate_max: 0.1
    barge_in_yield_latency_ms_p95_max: 600
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "turns.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_good_file_reads_into_its_categories_seeds_voices_and_budgets(tmp_path: Path) -> None:
    spec = load_turn_taking_file(_write(tmp_path, GOOD))
    assert spec.id == "turns" and spec.tags == ("gate:turns",)
    assert spec.categories == (Category.PAUSE, Category.BARGE_IN)
    assert spec.seeds == (0, 1) and spec.voices == 1
    assert [(b.metric, b.bound, b.limit) for b in spec.budgets] == [
        ("pause_takeover_rate", "max", 0.1),
        ("barge_in_yield_latency_ms_p95", "max", 600.0),
    ]
    assert spec.budgets[0].location == "turns.yaml:8"
    pauses = spec.stimuli(Category.PAUSE)
    # Two packs (seeds 0 and 1), only the stimuli the first voice speaks.
    assert {seed for seed, _ in pauses} == {0, 1}
    assert {s.voice for _, s in pauses} == {PACK_VOICES[0]}
    assert all(s.category is Category.PAUSE for _, s in pauses)
    assert [b.key for b in spec.budgets_for(Category.PAUSE)] == ["pause_takeover_rate_max"]
    assert [b.key for b in spec.budgets_for(Category.BARGE_IN)] == [
        "barge_in_yield_latency_ms_p95_max"
    ]


def test_lines_and_levels_are_read_in_order_without_repeats(tmp_path: Path) -> None:
    text = GOOD.replace("  seeds: 2\n", "  seeds: 2\n  lines: [clean, phone, clean]\n")
    text = text.replace("  voices: 1\n", "  voices: 1\n  levels_db: [0, -12.5, 0]\n")
    spec = load_turn_taking_file(_write(tmp_path, text))
    assert spec.lines == ("clean", "phone") and spec.levels_db == (0.0, -12.5)
    plain = load_turn_taking_file(_write(tmp_path, GOOD))
    assert plain.lines == ("clean",) and plain.levels_db == (0.0,)


def test_the_defaults_are_the_whole_pack(tmp_path: Path) -> None:
    text = "turn_taking:\n  budgets: {overlap_ratio_max: 0.5}\n"  # checked in every category
    spec = load_turn_taking_file(_write(tmp_path, text))
    assert spec.categories == tuple(Category) and spec.voices == 3 and spec.seeds == (0,)
    assert sum(len(spec.stimuli(c)) for c in Category) == 65
    assert spec.id == "turns"  # the file's name


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            GOOD.replace("  voices: 1\n", "  voice: 1\n"),
            r"turns\.yaml:5, turn_taking\.voice: unknown key 'voice'; did you mean 'voices'\?",
        ),
        (
            GOOD.replace("pause_takeover_rate_max", "pause_takeover_rate_maxx"),
            r"turns\.yaml:8, turn_taking\.budgets\.pause_takeover_rate_maxx: unknown key .*"
            r"did you mean 'pause_takeover_rate_max'\?",
        ),
        (
            GOOD.replace("[pause, barge_in]", "[pause, barge]"),
            r"turns\.yaml:4, turn_taking\.categories\[1\]: no category 'barge'; did you mean "
            r"'barge_in'\?",
        ),
        (
            GOOD.replace("0.1", "10"),
            r"turns\.yaml:8, .*pause_takeover_rate is a ratio: write 0 to 1, not 10",
        ),
        (
            GOOD.replace("[pause, barge_in]", "[pause]"),
            r"turns\.yaml:9, .*barge_in_yield_latency_ms_p95 is measured on barge_in stimuli "
            r"and categories has none of them; add one to categories or drop the budget",
        ),
        (
            GOOD.replace("  seeds: 2\n", "  seeds: 0\n"),
            r"turns\.yaml:6, turn_taking\.seeds: write a whole number from 1 to 20, not 0",
        ),
        ("turn_taking: {}\nturns: []\n", r"turns\.yaml:2, turns: unknown key 'turns'"),
        (  # a tempo change moves every mark the stimuli carry
            GOOD.replace("  seeds: 2\n", "  seeds: 2\n  lines: [clean, fast]\n"),
            r"turns\.yaml:7, turn_taking\.lines\[1\]: 'fast' changes the caller's timing .*"
            r"the lines are clean, quiet, noisy, cafe, phone, mobile, far_field",
        ),
        (
            GOOD.replace("  seeds: 2\n", "  seeds: 2\n  lines: [phnoe]\n"),
            r"turns\.yaml:7, turn_taking\.lines\[0\]: no line 'phnoe'; did you mean 'phone'\?",
        ),
        (
            GOOD.replace("  seeds: 2\n", "  seeds: 2\n  lines: phone\n"),
            r"turns\.yaml:7, turn_taking\.lines: write a list of some of clean, .*: lines: "
            r"\[clean\]",
        ),
        (
            GOOD.replace("  seeds: 2\n", "  seeds: 2\n  levels_db: [0, -60]\n"),
            r"turns\.yaml:7, turn_taking\.levels_db\[1\]: write a level in dB from -40 to 20 "
            r"\(0 is the pack's own\), not -60",
        ),
        (  # barge_in feeds no budget written: its item would pass with nothing checked
            GOOD.replace("    barge_in_yield_latency_ms_p95_max: 600\n", ""),
            r"turns\.yaml:4, turn_taking\.categories\[1\]: no budget checks category "
            r"'barge_in' of categories, so its item would pass with nothing checked; barge_in "
            r"stimuli feed barge_in_yield_rate, .*overlap_ratio: add a budget for one under "
            r"budgets \(e\.g\. barge_in_yield_rate_min: 0\.9\) or drop 'barge_in'",
        ),
        (  # no budgets at all: every category, all seven by default, is refused
            "turn_taking:\n  voices: 1\n",
            r"turns\.yaml:1, turn_taking\.categories: no budget checks category 'pause' of "
            r"categories \(left out: all seven\).*pause_takeover_rate_max: 0\.1",
        ),
    ],
)
def test_a_mistake_names_file_line_field_and_fix(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(TranscriptError, match=message):
        load_turn_taking_file(_write(tmp_path, text))


def test_only_a_top_level_turn_taking_key_makes_a_turn_taking_file(tmp_path: Path) -> None:
    assert is_turn_taking_file(_write(tmp_path, GOOD))
    nested = tmp_path / "t.yaml"
    nested.write_text("id: x\nturns:\n  - user: turn_taking: no\n", encoding="utf-8")
    assert not is_turn_taking_file(nested)


def test_every_metric_is_fed_by_the_categories_whose_stimuli_it_counts() -> None:
    assert METRIC_CATEGORIES["barge_in_yield_rate"] == {Category.BARGE_IN}
    assert Category.SHORT_ANSWER in METRIC_CATEGORIES["end_of_turn_latency_ms_p95"]
    assert Category.BACKCHANNEL in METRIC_CATEGORIES["false_interruption_rate"]
    assert Category.BACKCHANNEL not in METRIC_CATEGORIES["unanswered_rate"]


def _budgets(tmp_path: Path) -> list:  # type: ignore[type-arg]
    return list(load_turn_taking_file(_write(tmp_path, GOOD)).budgets)


def test_a_budget_the_run_could_not_measure_is_an_error_saying_why(tmp_path: Path) -> None:
    # The agent yielded to no barge-in: there is no yield latency to take a percentile of.
    ignored = Observation(
        stimulus_id="barge_in-01",
        category=Category.BARGE_IN,
        expect=Expected.YIELD,
        caller_end_s=1.0,
        interrupt_start_s=0.2,
    )
    from pytest_agent_eval._turn_taking._metrics import compute_metrics

    metrics = compute_metrics([ignored])
    (verdict,) = judge_budgets(_budgets(tmp_path), metrics, Category.BARGE_IN, [ignored])
    assert verdict.verdict == "error"
    assert "yielded to none of the 1 barge-ins" in verdict.reason
    check = verdict.check()
    assert check.errored and not check.passed
    assert check.key == "turn_taking.budgets.barge_in_yield_latency_ms_p95_max"


def test_a_budget_passes_at_its_limit_and_fails_over_it(tmp_path: Path) -> None:
    (budget, _) = _budgets(tmp_path)

    def rate(hits: int, count: int) -> dict[str, Metric]:
        return {"pause_takeover_rate": Metric(name="x", value=hits / count, count=count, hits=hits)}

    (held,) = judge_budgets([budget], rate(1, 10), Category.PAUSE, [])
    (broken,) = judge_budgets([budget], rate(2, 10), Category.PAUSE, [])
    assert held.verdict == "passed" and broken.verdict == "failed"
    assert broken.reason == "pause_takeover_rate = 0.2 (2 of 10), budget <= 0.1: over budget"


def test_the_file_collects_one_item_per_category(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(GOOD, encoding="utf-8")
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["evals/turns.yaml::turns[pause]", "evals/turns.yaml::turns[barge_in]"]
    )
    assert result.ret == 0


def test_a_broken_file_is_a_collection_error_with_its_message(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(
        GOOD.replace("seeds", "seedz"), encoding="utf-8"
    )
    result = pytester.runpytest_subprocess("--collect-only", "-q", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(
        ["*turns.yaml:6, turn_taking.seedz: unknown key 'seedz'; did you mean 'seeds'*"]
    )
    assert "Traceback" not in result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED


def test_a_text_agent_is_an_error_saying_what_to_run_instead(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(
        "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        "    async def agent(history):\n        return 'hello'\n    return agent\n"
    )
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(GOOD, encoding="utf-8")
    result = pytester.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "-k", "pause"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*run 1: turn-taking conformance plays audio through the agent's own VAD*"
            "Return a LiveKitAdapter or a PipecatAdapter from llm_eval_agent for this file*"
        ]
    )
