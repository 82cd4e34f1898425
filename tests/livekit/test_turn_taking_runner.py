"""The first turn-taking runner: pack stimuli through a real in-process LiveKit AgentSession
(Silero VAD, LiveKit's endpointing and interruptions), in real time, scored by the metrics."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from corpus_agents import VAD

from pytest_agent_eval._turn_taking._metrics import compute_metrics
from pytest_agent_eval._turn_taking._pack import build_pack, write_pack
from pytest_agent_eval.adapters.livekit._turn_taking import observe_pack, session_arguments
from pytest_agent_eval.errors import ConfigError

PAUSE, BARGE_IN, ANSWER = "pause-12", "barge_in-01", "short_answer-01"


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pack")
    write_pack(folder, seed=0, only=(PAUSE, BARGE_IN, ANSWER))
    return folder


def test_the_chosen_stimuli_are_what_the_tests_say() -> None:
    by_id = {s.id: s for s in build_pack(0)}
    assert "[pause 1.5s]" in by_id[PAUSE].text
    assert by_id[BARGE_IN].agent_speaking and by_id[BARGE_IN].expect.value == "yield"
    assert by_id[ANSWER].category.value == "short_answer"


def test_livekit_defaults_take_over_a_long_pause_and_yield_to_a_barge_in(pack: Path) -> None:
    observations = asyncio.run(observe_pack(pack, vad=VAD))
    metrics = compute_metrics(observations)
    # 1.5 s of silence is far past the VAD's 0.55 s and LiveKit's default 0.5 s endpointing.
    assert (metrics["pause_takeover_rate"].hits, metrics["pause_takeover_rate"].count) == (1, 1)
    assert (metrics["barge_in_yield_rate"].hits, metrics["barge_in_yield_rate"].count) == (1, 1)
    barge = next(o for o in observations if o.stimulus_id == BARGE_IN)
    assert barge.interrupt_start_s is not None and barge.agent_stopped_s is not None
    assert barge.agent_stopped_s > barge.interrupt_start_s
    answer = next(o for o in observations if o.stimulus_id == ANSWER)
    assert answer.agent_turn_start_s is not None
    assert answer.agent_turn_start_s > answer.caller_end_s
    assert metrics["unanswered_rate"].hits == 0


def test_a_longer_endpointing_delay_waits_through_the_pause(pack: Path) -> None:
    slow = {"turn_handling": {"endpointing": {"min_delay": 2.5, "max_delay": 3.0}}}
    (observation,) = asyncio.run(
        observe_pack(pack, [PAUSE], vad=VAD, session_kwargs=slow, tail_s=5.0)
    )
    assert not observation.took_over_early
    assert observation.agent_turn_start_s is not None
    assert observation.agent_turn_start_s - observation.caller_end_s > 2.0


def test_session_arguments_keep_the_vad_turn_detection_under_given_endpointing() -> None:
    merged = session_arguments({"turn_handling": {"endpointing": {"min_delay": 1.0}}})
    assert merged["turn_handling"]["turn_detection"] == "vad"
    assert merged["turn_handling"]["endpointing"] == {"min_delay": 1.0}
    assert merged["aec_warmup_duration"] is None


def test_an_id_the_pack_folder_lacks_is_a_clear_error(pack: Path) -> None:
    with pytest.raises(ConfigError, match="lists no stimulus 'noise-01'; write the pack"):
        asyncio.run(observe_pack(pack, ["noise-01"], vad=VAD))
