"""Audio conditions as data (catalog, presets, YAML), expansion into variants, per-turn seeds,
and the voice checks that read what a voice turn recorded (WER, barge-in, p95 latency)."""

from __future__ import annotations

import asyncio
import textwrap
from pathlib import Path

import pytest

from pytest_agent_eval._conditions import (
    BUILTIN_PRESETS,
    ConditionProblem,
    condition_seed,
    parse_conditions,
    turn_conditions,
)
from pytest_agent_eval._config import parse_settings
from pytest_agent_eval._expansion import derive, expand, id_suffix
from pytest_agent_eval._expectations._barge_in import InterruptEvaluator
from pytest_agent_eval._expectations._heard_wer import HeardWerEvaluator
from pytest_agent_eval._expectations._latency_percentiles import LatencyP95Check
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.errors import ConfigError, TranscriptError
from pytest_agent_eval.models import (
    AudioCondition,
    BargeIn,
    RunResult,
    Transcript,
    TranscriptResult,
    Turn,
    TurnContext,
    TurnResult,
)

YAML = textwrap.dedent(
    """\
    id: "booking: phone"
    seed: 9
    conditions: [{gain: {db: -3}}]
    variants:
      - clean
      - phone
      - name: loud_cafe
        conditions: [cafe, {gain: {db: 6}}]
        threshold: 0.5
    turns:
      - user: "Book a table."
        audio: book.wav
        conditions: [{silence: {lead_s: 1}}]
      - user: "Thanks."
    """
)


def _load(text: str = YAML, **kwargs: object) -> Transcript:
    return load_transcript_text(text, path=Path("/evals/booking.yaml"), **kwargs)  # type: ignore[arg-type]


def test_variants_expand_into_transcripts_with_readable_ids_and_chained_conditions() -> None:
    transcript = _load()
    clean, phone, cafe = expand(transcript)
    assert [t.id for t in (clean, phone, cafe)] == [
        "booking: phone[clean]",
        "booking: phone[phone]",
        "booking: phone[loud_cafe]",
    ]
    assert {t.base_id for t in (clean, phone, cafe)} == {"booking: phone"}
    assert [t.variant for t in (clean, phone, cafe)] == ["clean", "phone", "loud_cafe"]
    assert [id_suffix(t) for t in (clean, phone, cafe)] == ["clean", "phone", "loud_cafe"]
    assert [t.threshold for t in (clean, phone, cafe)] == [0.8, 0.8, 0.5]
    assert all(not t.variants for t in (clean, phone, cafe))
    # The turn's own first, then the transcript's, then the variant's.
    kinds = [c.kind for c in turn_conditions(cafe, 0)]
    assert kinds == ["silence", "gain", "reverb", "noise", "gain"]
    assert [c.kind for c in turn_conditions(clean, 0)] == ["silence", "gain"]
    assert turn_conditions(phone, 1) == turn_conditions(phone, 1)  # a text turn: not streamed
    assert transcript.id == "booking: phone" and len(transcript.variants) == 3


def test_derive_composes_suffixes_for_other_expansions() -> None:
    base = Transcript(id="booking", turns=[Turn("hi")])
    case = derive(base, "case1", description="first case")
    both = derive(case, "phone", variant="phone")
    assert (case.id, both.id) == ("booking[case1]", "booking[case1-phone]")
    assert (both.base_id, both.id_suffixes, both.description) == (
        "booking",
        ["case1", "phone"],
        "first case",
    )
    with pytest.raises(ValueError, match="may hold letters"):
        derive(base, "two words")
    assert expand(base) == [base]


def test_each_turn_of_each_run_gets_its_own_stable_seed() -> None:
    clean, phone, _ = expand(_load())
    seeds = {
        (t.variant, turn, run): condition_seed(t, turn, run)
        for t in (clean, phone)
        for turn in (0, 1)
        for run in (0, 1, 2)
    }
    assert len(set(seeds.values())) == len(seeds), "every turn, run and variant draws apart"
    assert condition_seed(phone, 0, 1) == condition_seed(expand(_load())[1], 0, 1)
    reseeded = expand(_load(YAML.replace("seed: 9", "seed: 10")))[1]
    assert condition_seed(reseeded, 0, 1) != condition_seed(phone, 0, 1)


def test_user_presets_come_from_pyproject_and_compose() -> None:
    settings, warnings = parse_settings(
        {
            "conditions": {
                "street": [{"noise": {"color": "pink", "snr_db": 5}}],
                "street_phone": ["street", "phone"],
                "hall": {"reverb": {"room_size": 0.9}, "gain": {"db": -6}},
            }
        },
        rootdir=Path("."),
    )
    assert not warnings
    presets = settings.conditions
    assert set(BUILTIN_PRESETS) < set(presets)
    assert [c.kind for c in presets["street_phone"]] == ["noise", "telephone"]
    assert [c.kind for c in presets["hall"]] == ["reverb", "gain"]
    transcript = _load(YAML.replace("- phone", "- street_phone"), presets=presets)
    assert [c.kind for c in transcript.variants[1].conditions] == ["noise", "telephone"]
    with pytest.raises(TranscriptError, match="'street_phone' is neither"):
        _load(YAML.replace("- phone", "- street_phone"))  # the built-in presets only


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"clean": ["phone"]}, "'clean' is the built-in preset"),
        ({"noise": ["phone"]}, "'noise' is a condition kind"),
        ({"bad name": ["phone"]}, "letters, digits"),
        ({"x": "phone"}, "must be a list of conditions or a table"),
        ({"x": [{"reverb": {"roomsize": 1}}]}, "Did you mean 'room_size'"),
        ({"x": ["later"], "later": ["phone"]}, "'later' is neither a condition nor a preset"),
    ],
)
def test_bad_presets_are_config_errors_naming_the_preset(
    table: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        parse_settings({"conditions": table}, rootdir=Path("."))
    assert "[tool.agent_eval].conditions." in str(info.value)


@pytest.mark.parametrize(
    ("bad", "where", "message"),
    [
        ("conditions: [telephon]", "conditions[0]", "Did you mean 'telephone'"),
        ("conditions: gain", "conditions", "gain needs 'db'"),
        ("conditions: [{tempo: {factor: 3}}]", "conditions[0].tempo.factor", "maximum of 2"),
        ("variants: [{name: 'a b'}]", "variants[0].name", "may hold letters, digits"),
        ("variants: [phone, phone]", "variants[1]", "listed twice"),
    ],
)
def test_bad_conditions_in_yaml_name_the_file_line_and_field(
    bad: str, where: str, message: str
) -> None:
    text = f"id: t\n{bad}\nturns:\n  - user: hi\n    audio: a.wav\n"
    with pytest.raises(TranscriptError, match=message) as info:
        _load(text)
    assert f"/evals/booking.yaml:2, transcript 't', {where}" in str(info.value)


def test_conditions_that_could_only_pass_for_the_wrong_reason_are_refused() -> None:
    no_audio = "id: t\nvariants: [clean, phone]\nturns:\n  - user: hi\n"
    with pytest.raises(TranscriptError, match="need at least one turn with 'audio:'"):
        _load(no_audio)
    text_turn = "id: t\nturns:\n  - user: hi\n    conditions: [phone]\n"
    with pytest.raises(TranscriptError, match=r"turn 1, turns\[0\]\.conditions: audio conditions"):
        _load(text_turn)
    # Only clean variants on a text transcript change nothing: allowed.
    assert len(expand(_load("id: t\nvariants: [clean]\nturns:\n  - user: hi\n"))) == 1


def test_the_runner_refuses_unexpanded_variants_and_bad_interrupts() -> None:
    async def agent(history: object) -> str:
        return "ok"

    transcript = _load()
    with pytest.raises(TranscriptError, match="has variants, which make one test each"):
        asyncio.run(run_transcript(transcript, agent))
    first = Transcript(id="t", turns=[Turn("hi", audio="a.wav")])
    first.turns[0].interrupt = _interrupt()
    with pytest.raises(TranscriptError, match="turn 1: the first turn cannot interrupt"):
        asyncio.run(run_transcript(first, agent))


def _interrupt() -> object:
    from pytest_agent_eval.models import InterruptConfig

    return InterruptConfig(stop_within_ms=1000, after_ms=500)


def test_parse_conditions_reports_where_inside_the_value() -> None:
    with pytest.raises(ConditionProblem) as info:
        parse_conditions(["phone", {"noise": {"snr_db": "loud"}}])
    assert info.value.path == (1, "noise")
    assert "noise.snr_db must be a number" in str(info.value)
    assert parse_conditions("phone") == list(BUILTIN_PRESETS["phone"])


def _ctx(**kwargs: object) -> TurnContext:
    base: dict[str, object] = {
        "user": "Book a table.",
        "reply": "ok",
        "tool_calls": [],
        "history": [],
    }
    return TurnContext(**{**base, **kwargs})  # type: ignore[arg-type]


def test_heard_wer_max_compares_the_recorded_wer_and_errors_when_it_was_not_measured() -> None:
    check = HeardWerEvaluator(0.2)
    assert check._check(_ctx(audio=Path("a.wav"), heard="book a table", wer=0.0)).passed
    failed = check._check(_ctx(audio=Path("a.wav"), heard="cook a cable", wer=0.5))
    assert not failed.passed and not failed.errored
    assert "WER 0.50 > heard_wer_max 0.2: heard 'cook a cable'" in failed.reasoning
    text_turn = check._check(_ctx())
    assert text_turn.errored and "is a text turn" in text_turn.reasoning
    unheard = check._check(_ctx(audio=Path("a.wav")))
    assert (
        unheard.errored and "does not report what its speech recognizer heard" in unheard.reasoning
    )


def test_the_interrupt_check_cannot_pass_for_the_wrong_reason() -> None:
    check = InterruptEvaluator(800)
    assert check._check(_ctx(barge_in=None)).errored
    untested = check._check(_ctx(barge_in=BargeIn(precondition="the agent was not speaking")))
    assert untested.errored and "was not tested: the agent was not speaking" in untested.reasoning
    kept = check._check(_ctx(barge_in=BargeIn(reply_position_s=1.0, stopped=False, played_s=4.0)))
    assert not kept.passed and not kept.errored and "kept speaking" in kept.reasoning
    resumed = check._check(_ctx(barge_in=BargeIn(reply_position_s=1.0, resumed=True)))
    assert "resumed the same reply" in resumed.reasoning
    slow = check._check(_ctx(barge_in=BargeIn(stopped=True, stop_latency_s=0.95)))
    assert not slow.passed and "950 ms" in slow.reasoning
    assert check._check(_ctx(barge_in=BargeIn(stopped=True, stop_latency_s=0.6))).passed


def _result(latencies: list[list[float | None]]) -> TranscriptResult:
    runs = [
        RunResult(
            index=r,
            turns=[
                TurnResult(index=i, latency_s=value, audio="a.wav" if value is not None else None)
                for i, value in enumerate(row)
            ],
        )
        for r, row in enumerate(latencies)
    ]
    return TranscriptResult(passed=True, score=1.0, threshold=0.8, runs=runs)


def test_latency_percentiles_per_transcript_and_per_turn() -> None:
    result = _result([[0.2, None, 0.9], [0.4, None, 0.5], [0.3, None, 0.7]])
    assert result.p50_latency_s == 0.4 and result.p95_latency_s == 0.9
    assert result.turn_latency_percentiles() == [(0, 3, 0.3, 0.4), (2, 3, 0.7, 0.9)]
    assert LatencyP95Check(1000).check(result).passed
    over = LatencyP95Check(800).check(result)
    assert (
        not over.passed
        and "p95 900 ms (p50 400 ms) over 6 voice turn(s) of 3 run(s)" in over.reasoning
    )
    nothing = LatencyP95Check(800).check(_result([[None]]))
    assert nothing.errored and "no voice-turn latency was measured" in nothing.reasoning


def test_latency_and_wer_leave_out_runs_that_errored() -> None:
    """A run that could not evaluate the agent is left out of the latency as of the score: its
    turns measured something else (a worker that left, a refused fixture)."""
    result = _result([[0.2], [0.3], [5.0]])
    result.runs[2].error, result.runs[2].errored = "the worker left the room", True
    result.runs[2].turns[0].wer = 1.0
    result.runs[0].turns[0].wer = 0.0
    assert result.runs[2].verdict == "error"
    assert result.turn_latencies_s == [0.2, 0.3]
    assert result.p95_latency_s == 0.3
    assert result.turn_latency_percentiles() == [(0, 2, 0.2, 0.3)]
    assert result.mean_wer == 0.0
    within = LatencyP95Check(400).check(result)
    assert within.passed
    assert "over 2 voice turn(s) of 2 run(s); 1 ERROR run(s) left out" in within.reasoning


def test_a_failed_result_check_fails_the_transcript_whatever_its_pass_rate() -> None:
    async def agent(history: object) -> str:
        return "ok"

    transcript = Transcript(id="t", turns=[Turn("hi")], latency_p95_ms_max=500)
    result = asyncio.run(run_transcript(transcript, agent))
    assert result.score == 1.0 and not result.passed
    (check,) = result.checks
    assert check.errored and check.name == "latency_p95_ms_max"
    # A check that could not observe what it asserts: the eval is an ERROR, not a FAIL.
    assert result.verdict == "error"
    with pytest.raises(
        AssertionError, match="LLM eval ERROR: latency_p95_ms_max errored: cannot be checked"
    ):
        result.assert_threshold()
    restored = TranscriptResult.from_dict(result.to_dict())
    assert restored.checks == result.checks and not restored.passed


def test_conditions_describe_themselves_for_reports() -> None:
    condition = AudioCondition("noise", {"snr_db": 10.0, "color": "pink"})
    assert condition.describe() == "noise(snr_db=10, color=pink)"
