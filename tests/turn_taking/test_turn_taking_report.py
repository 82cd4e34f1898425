"""The turn-taking conformance table in the terminal, markdown and HTML reports, and the record
under ``turn_taking`` in the results file, from a record as a turn-taking item leaves it."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Literal

import numpy as np
import pytest

from pytest_agent_eval._records import EvalRecord, SessionRecords
from pytest_agent_eval._report._html import render_html
from pytest_agent_eval._report._markdown import render_markdown
from pytest_agent_eval._report._records import ReportData
from pytest_agent_eval._report._results_file import _eval_entry
from pytest_agent_eval._report._terminal import turn_taking_lines
from pytest_agent_eval._report._turn_taking import conformance_html, conformance_rows, miss_lines
from pytest_agent_eval.models import EvalResult, RunResult, TranscriptResult, TurnResult
from pytest_agent_eval.models._turn_taking import (
    BudgetVerdict,
    CallerSpan,
    Metric,
    StimulusMiss,
    TurnTakingRecord,
)
from pytest_agent_eval.voice._clip import AudioClip, write_wav_atomic

MISS = StimulusMiss(
    stimulus_id="pause-04",
    seed=0,
    text="I'd like a table for [pause 1.9s] four people on Friday.",
    expect="respond",
    what="took the turn at 2.91 s, 1.20 s before the caller was done",
    audio=".agent_eval_cache/turn_taking/seed-0/pause-04.wav",
    clip_s=4.3,
    tail_s=3.0,
    caller=(
        CallerSpan(kind="speech", start_s=0.2, end_s=1.4, text="I'd like a table for"),
        CallerSpan(kind="pause", start_s=1.4, end_s=3.3),
        CallerSpan(kind="speech", start_s=3.3, end_s=4.11, text="four people on Friday."),
    ),
    caller_end_s=4.11,
    agent_turn_start_s=2.91,
)


def _player(path: str, label: str) -> str:
    return f"<audio {label}={path}>"


def _record() -> EvalRecord:
    budget = BudgetVerdict(
        key="pause_takeover_rate_max",
        metric="pause_takeover_rate",
        bound="max",
        limit=0.1,
        value=0.5,
        verdict="failed",
        reason="pause_takeover_rate = 0.5 (2 of 4), budget <= 0.1: over budget",
        location="turns.yaml:7",
    )
    taken = TurnTakingRecord(
        spec_id="turns",
        category="pause",
        framework="livekit",
        clock="virtual",
        stimuli=4,
        seeds=(0,),
        voices=("hibari/heart",),
        metrics=(
            Metric(
                name="pause_takeover_rate",
                value=0.5,
                count=4,
                hits=2,
                interval=(0.15, 0.85),
                unit="ratio",
            ),
            Metric(name="end_of_turn_latency_ms_p95", value=None, count=0, unit="ms"),
        ),
        budgets=(budget,),
        missed=2,
        misses=(MISS,),
    )
    turn = TurnResult(index=0, user="4 pause stimuli", evaluations=[budget.check()])
    result = TranscriptResult(
        passed=False, score=0.0, threshold=1.0, runs=[RunResult(index=0, turns=[turn])]
    )
    return EvalRecord(
        nodeid="evals/turns.yaml::turns[pause]",
        transcript_id="turns[pause]",
        result=result,
        turn_taking=taken,
    )


def test_a_row_per_metric_with_value_interval_count_budget_and_verdict() -> None:
    rows = conformance_rows([_record()])
    assert rows == [
        ["turns[pause]", "pause_takeover_rate", "0.50", "0.15–0.85", "2/4", "<= 0.1", "FAIL"],
        ["turns[pause]", "end_of_turn_latency_ms_p95", "unmeasured", "–", "0", "–", ""],
    ]
    plain = EvalRecord(nodeid="t.yaml::t", transcript_id="t")
    assert conformance_rows([plain]) == []
    assert conformance_html([plain], _player) == ""


def test_the_terminal_table_colours_a_broken_budget_red() -> None:
    data = ReportData(session=SessionRecords(records=(_record(),)))
    lines = turn_taking_lines(data)
    assert lines[0].text.split() == [
        "eval",
        "metric",
        "value",
        "95%",
        "interval",
        "n",
        "budget",
        "verdict",
    ]
    assert lines[2].color == "red" and "FAIL" in lines[2].text
    assert lines[3].color is None
    markdown = render_markdown(data)
    assert "## Turn-taking conformance" in markdown
    assert "| turns[pause] | pause_takeover_rate | 0.50 | 0.15–0.85 | 2/4 | <= 0.1 | FAIL |" in (
        markdown
    )
    assert "**turns[pause]: 2 of 4 stimuli went wrong (the first 1 below)**" in markdown
    assert (
        "- `pause-04` (I'd like a table for [pause 1.9s] four people on Friday.): took the turn "
        "at 2.91 s, 1.20 s before the caller was done"
    ) in markdown


def test_after_an_error_the_misses_are_counted_of_the_stimuli_observed() -> None:
    """An error that ended an item after 3 of its 4 stimuli: its headline counts the miss of
    the 3 observed and says the fourth was never judged, rather than "1 of 4"."""
    record = _record()
    taken = record.turn_taking
    assert taken is not None
    ended = replace(taken, observed=3, missed=1)
    record = replace(record, turn_taking=ended)
    record = EvalRecord.from_dict(record.to_dict())  # as xdist carries it
    assert record.turn_taking is not None and record.turn_taking.observed == 3
    markdown = "\n".join(miss_lines([record]))
    assert (
        "turns[pause]: 1 of the 3 stimuli observed went wrong; an error ended the item there, "
        "and the other 1 of its 4 were not judged"
    ) in markdown
    assert "1 of 4 stimuli" not in markdown
    assert _eval_entry(record)["turn_taking"]["observed"] == 3
    assert _eval_entry(_record())["turn_taking"]["observed"] is None


def test_the_html_section_escapes_its_cells() -> None:
    section = conformance_html([_record()], _player)
    assert section.startswith('<section id="turn-taking">')
    assert "<td>&lt;= 0.1</td>" in section


def test_each_stimulus_that_went_wrong_is_drawn_with_its_clip(tmp_path: Path) -> None:
    section = conformance_html([_record()], _player)
    [miss] = re.findall(r'<details class="tt-miss".*?</details>', section)
    assert 'data-stimulus="pause-04"' in miss
    assert "took the turn at 2.91 s, 1.20 s before the caller was done" in miss
    assert "<audio caller clip=.agent_eval_cache/turn_taking/seed-0/pause-04.wav>" in miss
    # The caller's two stretches of words in the user lane (the pause is not a sound), the
    # answer in the agent's, from when it began; VAD and end of turn named as not kept.
    assert miss.count('data-kind="user_speech"') == 2
    assert miss.count('data-kind="agent_speech"') == 1
    assert "agent speech 2.910 s to the end of the turn" in miss
    assert "not kept for a stimulus: vad speech, end of turn" in miss

    # In the whole page, the clip is embedded from the rootdir's cache, and says so if gone.
    wav = tmp_path / MISS.audio
    wav.parent.mkdir(parents=True)
    write_wav_atomic(wav, AudioClip(np.zeros(1600, dtype=np.float32), 16000))
    data = ReportData(session=SessionRecords(records=(_record(),)))
    page = render_html(data, rootdir=tmp_path, report_dir=tmp_path)
    assert 'title="caller clip: .agent_eval_cache/turn_taking/seed-0/pause-04.wav"' in page
    wav.unlink()
    page = render_html(data, rootdir=tmp_path, report_dir=tmp_path)
    assert "caller clip: audio file not found: .agent_eval_cache" in page


def test_the_record_travels_through_serialization_into_the_results_file() -> None:
    record = EvalRecord.from_dict(_record().to_dict())  # as xdist carries it
    assert record.turn_taking == _record().turn_taking
    entry = _eval_entry(record)
    taken = entry["turn_taking"]
    assert taken["category"] == "pause" and taken["clock"] == "virtual"
    assert taken["metrics"][0]["interval"] == [0.15, 0.85]
    assert taken["budgets"][0]["verdict"] == "failed"
    assert taken["missed"] == 2
    assert taken["misses"][0]["what"].startswith("took the turn at 2.91 s")
    assert taken["misses"][0]["caller"][1] == {
        "kind": "pause",
        "start_s": 1.4,
        "end_s": 3.3,
        "text": "",
    }
    assert "turn_taking" not in _eval_entry(EvalRecord(nodeid="t.yaml::t", transcript_id="t"))


def test_a_budget_check_is_a_check_of_the_result() -> None:
    check = _record().result.runs[0].turns[0].evaluations[0]  # type: ignore[union-attr]
    assert isinstance(check, EvalResult)
    assert check.key == "turn_taking.budgets.pause_takeover_rate_max"
    assert check.location == "turns.yaml:7" and not check.passed and not check.errored


# A barge-in the agent talked through, and a backchannel it stopped for and then resumed.
BARGE_IN = StimulusMiss(
    stimulus_id="barge_in-01",
    seed=0,
    text="Wait, stop.",
    expect="yield",
    what="never stopped for the barge-in",
    audio="",
    clip_s=2.0,
    tail_s=3.0,
    caller=(CallerSpan(kind="speech", start_s=0.5, end_s=1.2, text="Wait, stop."),),
    agent_speaking=True,
    caller_end_s=1.2,
)
BACKCHANNEL = StimulusMiss(
    stimulus_id="backchannel-01",
    seed=0,
    text="[pause 1.2s] Uh-huh.",
    expect="keep_speaking",
    what="stopped speaking at 1.71 s, then went back to its speech",
    audio="",
    clip_s=1.8,
    tail_s=3.0,
    caller=(
        CallerSpan(kind="pause", start_s=0.0, end_s=1.2),
        CallerSpan(kind="backchannel", start_s=1.2, end_s=1.6, text="Uh-huh."),
    ),
    agent_speaking=True,
    agent_stopped_s=1.71,
    agent_resumed=True,
)


@pytest.mark.parametrize(
    ("miss", "clock", "drawn"),
    [
        (
            BARGE_IN,
            "virtual",
            [
                ("stream", 0.0, 5.0, None),
                ("agent_speech", 0.0, None, None),  # never stopped: when its line ended is not kept
                ("user_speech", 0.5, 1.2, None),
            ],
        ),
        (
            BACKCHANNEL,
            "real",
            [
                ("stream", 0.0, 4.8, None),
                ("agent_speech", 0.0, 1.71, None),
                ("user_speech", 1.2, 1.6, None),
                ("interruption", 1.71, None, "resumed"),  # a false interruption, recovered
            ],
        ),
    ],
    ids=["barge-in talked through", "backchannel stopped for"],
)
def test_a_miss_as_a_timeline(
    miss: StimulusMiss,
    clock: Literal["virtual", "real"],
    drawn: list[tuple[str, float, float | None, str | None]],
) -> None:
    timeline = miss.timeline(clock)
    assert [(e.kind, e.t_start, e.t_end, e.detail.get("kind")) for e in timeline.events] == drawn
    assert timeline.clock == clock
    assert [e.detail["sound"] for e in timeline.of("user_speech")] == [
        span.kind for span in miss.caller if span.kind != "pause"
    ]


def test_a_miss_is_named_with_its_seed_when_the_item_played_several_packs() -> None:
    one = _record()
    assert one.turn_taking is not None
    two = replace(one, turn_taking=replace(one.turn_taking, seeds=(0, 1)))
    assert "- `pause-04` (" in "\n".join(miss_lines([one]))
    assert "- `seed-0/pause-04` (" in "\n".join(miss_lines([two]))
    assert 'data-stimulus="seed-0/pause-04"' in conformance_html([two], _player)
