"""What both turn-taking runners make of the agent's audio halts (`observation_of`, the one
place the LiveKit and the Pipecat runner turn what the agent did into an observation): only a
halt at or after the caller's barge-in started is the agent yielding to it."""

from __future__ import annotations

import pytest

from pytest_agent_eval._turn_taking._observer import observation_of
from pytest_agent_eval._turn_taking._pack import build_pack
from pytest_agent_eval._turn_taking._stimulus import Category


def test_a_halt_before_the_barge_in_started_is_not_a_yield() -> None:
    stimulus = next(s for s in build_pack(0) if s.category is Category.BARGE_IN)
    events = [{"kind": "speech", "start_s": 1.5, "end_s": 2.5, "text": "wait, stop"}]
    before = observation_of(stimulus, events, turns=[], began=[], halts=[1.0], resumes=[])
    assert before.agent_stopped_s is None  # it stopped before the caller said a word
    both = observation_of(stimulus, events, turns=[], began=[], halts=[1.0, 1.8], resumes=[])
    assert both.agent_stopped_s == 1.8 and both.interrupt_start_s == 1.5
    assert both.overlap_s == pytest.approx(0.3)
