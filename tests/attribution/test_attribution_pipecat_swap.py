"""The Pipecat hearing swap's choice of what to replace (issue 35), on real Pipecat pipelines
built as a bot builds them: the one STT service is taken out of the pipeline's list and its
links and the stand-in put in its place; a pipeline with nothing to replace, or too much, or
already hearing the fixture's words, is refused with the reason attribution writes."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("pipecat", reason="needs the pipecat extra")


def _pipeline(*middle: Any) -> Any:
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.processors.frame_processor import FrameProcessor

    return Pipeline([FrameProcessor(name="mic"), *middle, FrameProcessor(name="aggregator")])


def test_the_one_stt_service_is_replaced_in_the_list_and_the_links() -> None:
    from pytest_agent_eval.adapters.pipecat import WhisperSTTService
    from pytest_agent_eval.adapters.pipecat._hearing_twin import (
        PerfectHearingSTTService,
        _replace_stt,
        refuses_conditions,
    )

    own = WhisperSTTService()
    pipeline = _pipeline(own)
    stand_in = _replace_stt(pipeline)

    assert isinstance(stand_in, PerfectHearingSTTService) and not refuses_conditions(stand_in)
    held = pipeline.processors
    assert own not in held and held[2] is stand_in
    assert held[1].next is stand_in and stand_in.previous is held[1]
    assert stand_in.next is held[3] and held[3].previous is stand_in


@pytest.mark.parametrize(
    ("services", "reason"),
    [
        ((), "has no STT service"),
        (("whisper", "whisper"), "has 2 STT services (WhisperSTTService, WhisperSTTService)"),
        (("fixture",), "already hears with FixtureTextSTTService"),
    ],
)
def test_a_pipeline_with_nothing_or_too_much_to_replace_is_refused(
    services: tuple[str, ...], reason: str
) -> None:
    from pytest_agent_eval.adapters.pipecat import FixtureTextSTTService, WhisperSTTService
    from pytest_agent_eval.adapters.pipecat._hearing_twin import _replace_stt
    from pytest_agent_eval.errors import AdapterError

    made = {"whisper": WhisperSTTService, "fixture": FixtureTextSTTService}
    pipeline = _pipeline(*(made[s]() for s in services))
    before = list(pipeline.processors)
    with pytest.raises(AdapterError, match=reason.replace("(", r"\(").replace(")", r"\)")):
        _replace_stt(pipeline)
    assert pipeline.processors == before  # nothing was touched


def test_the_users_fixture_text_stt_refuses_conditions_and_the_stand_in_does_not() -> None:
    from pytest_agent_eval.adapters.pipecat import FixtureTextSTTService
    from pytest_agent_eval.adapters.pipecat._hearing_twin import (
        PerfectHearingSTTService,
        refuses_conditions,
    )

    assert refuses_conditions(FixtureTextSTTService())
    assert not refuses_conditions(PerfectHearingSTTService(FixtureTextSTTService()))
