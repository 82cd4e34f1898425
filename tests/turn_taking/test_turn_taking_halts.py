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


def test_a_stimulus_is_unobservable_when_a_vad_heard_none_of_a_second_of_words() -> None:
    from pytest_agent_eval._turn_taking._observer import unheard_speech

    sentence = [{"kind": "speech", "start_s": 0.25, "end_s": 1.67, "text": "I'd like a table"}]
    word = [{"kind": "speech", "start_s": 2.25, "end_s": 2.54, "text": "Yeah."}]
    assert unheard_speech(sentence, heard=False) == "I'd like a table"
    assert unheard_speech(sentence, heard=True) is None
    # One short word unheard is, for an agent that hears, its choice (measured); whether it
    # hears at all its item's hearing probe tells (test_turn_taking_deaf.py).
    assert unheard_speech(word, heard=False) is None
    assert unheard_speech([{"kind": "noise", "start_s": 0, "end_s": 2}], heard=False) is None


def test_every_category_whose_words_are_short_is_played_after_the_hearing_probe() -> None:
    from pytest_agent_eval._turn_gate._run import hearing_probe

    probed = {c for c in Category if hearing_probe(c, 3) is not None}
    assert probed == set(Category) - {Category.PAUSE, Category.FILLER}
    assert hearing_probe(Category.NOISE, 3) == (3, build_pack(3)[0])
