"""What the LiveKit turn-taking runner makes of the agent's audio halts: only a halt at or after
the caller's barge-in started is the agent yielding to it."""

from __future__ import annotations

import pytest

from pytest_agent_eval._turn_taking._pack import build_pack
from pytest_agent_eval._turn_taking._stimulus import Category


def test_a_halt_before_the_barge_in_started_is_not_a_yield() -> None:
    # Imported here: the LiveKit runner loads LiveKit's Silero plugin, which collection
    # outside the voice tier must not (tests/unit/test_suite_tiers.py).
    pytest.importorskip("livekit.agents")
    from pytest_agent_eval.adapters.livekit._turn_taking import _observation

    stimulus = next(s for s in build_pack(0) if s.category is Category.BARGE_IN)
    events = [{"kind": "speech", "start_s": 1.5, "end_s": 2.5, "text": "wait, stop"}]
    before = _observation(stimulus, events, turns=[], states=[], halts=[1.0], resumes=[])
    assert before.agent_stopped_s is None  # it stopped before the caller said a word
    both = _observation(stimulus, events, turns=[], states=[], halts=[1.0, 1.8], resumes=[])
    assert both.agent_stopped_s == 1.8 and both.interrupt_start_s == 1.5
    assert both.overlap_s == pytest.approx(0.3)
