"""Model work heard before (`adapters.pipecat._memo`, `voice._reply_voice`): a conversation
answered from what Silero, smart-turn and the offline TTS said before captures exactly what one
computing everything captures, timings included; and the memory is really used, keyed by
everything a model is given."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from corpus_bots import SCENARIOS, Scenario
from pipecat_support import PHRASES, converse, run, transcript

from pytest_agent_eval.adapters.pipecat import PipecatAdapter, _memo
from pytest_agent_eval.models import AgentReply, Greeting, Turn
from pytest_agent_eval.voice._reply_voice import SPOKEN

BY_ID = {s.id: s for s in SCENARIOS}


def everything(greeting: Greeting, replies: list[AgentReply]) -> list[Any]:
    """Every field of every reply (latencies, event times, audio lengths), less the wall
    time a turn took."""
    out: list[Any] = [dataclasses.asdict(greeting)]
    for reply in replies:
        fields = dataclasses.asdict(reply)
        fields["metadata"]["pipecat"].pop("turn_wall_s", None)
        out.append(fields)
    return out


def script(scenario: Scenario, audio: dict[str, Path]) -> Any:
    turns = [
        Turn(user=PHRASES[key], audio=audio[key], **scenario.extra.get(index, {}))
        if spoken
        else Turn(user=key)
        for index, (key, spoken) in enumerate(scenario.turns)
    ]
    return transcript(*turns, id=scenario.id)


def hold(scenario: Scenario, audio: dict[str, Path]) -> list[Any]:
    return everything(
        *run(converse(PipecatAdapter(scenario.bot, speed=0), script(scenario, audio)))
    )


@pytest.mark.parametrize("scenario_id", ["smart_turn_v3", "barge_in", "functions_that_await"])
def test_a_conversation_heard_before_captures_what_one_computed_afresh_does(
    scenario_id: str, phrases: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    scenario = BY_ID[scenario_id]
    monkeypatch.setenv("AGENT_EVAL_PIPECAT_MEMO", "0")
    computed = hold(scenario, phrases)
    monkeypatch.delenv("AGENT_EVAL_PIPECAT_MEMO")
    _memo.RESULTS.clear()
    SPOKEN.clear()
    first = hold(scenario, phrases)
    hits, misses, speech = _memo.RESULTS.hits, _memo.RESULTS.misses, SPOKEN.hits
    again = hold(scenario, phrases)
    # Heard before: every model run, loudness and sentence answered from memory ...
    assert _memo.RESULTS.hits - hits > 200
    assert _memo.RESULTS.misses == misses
    assert SPOKEN.hits > speech
    # ... and nothing a verdict or a report reads changed, to the millisecond.
    assert first == computed
    assert again == computed


def test_the_sessions_and_functions_are_in_place_on_the_supported_pipecat() -> None:
    from pipecat.audio import volume
    from pipecat.audio.turn.smart_turn import local_smart_turn_v3
    from pipecat.audio.vad import silero
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    placed = _memo.share_model_sessions()
    assert "pipecat.audio.vad.silero" in placed
    assert "pipecat.audio.turn.smart_turn.local_smart_turn_v3" in placed
    assert "pipecat.audio.volume.calculate_audio_volume" in placed
    assert isinstance(silero.onnxruntime, _memo.SharedSessions)
    assert isinstance(local_smart_turn_v3.ort, _memo.SharedSessions)
    assert getattr(volume.calculate_audio_volume, "_agent_eval_memo", False)
    # Two analyzers of one model file share a session: the second loads nothing.
    one, two = SileroVADAnalyzer(), SileroVADAnalyzer()
    assert one._model.session is two._model.session
    assert isinstance(one._model.session, _memo.MemoSession)
    assert _memo.share_model_sessions() == placed  # idempotent


def test_a_window_is_remembered_with_the_state_it_was_heard_in() -> None:
    """Silero's recurrent state is an input: the same 32 ms of audio after other audio is a
    different question, and gets the answer the model gives, not the one remembered."""
    from pipecat.audio.vad.silero import SileroVADAnalyzer

    _memo.share_model_sessions()
    rng = np.random.default_rng(7)
    speech = (rng.standard_normal(512) * 0.3).astype(np.float32)
    other = (rng.standard_normal(512) * 0.3).astype(np.float32)

    def answers(windows: list[np.ndarray]) -> list[float]:
        model = SileroVADAnalyzer()._model
        return [float(model(w, 16000)[0][0]) for w in windows]

    _memo.RESULTS.clear()
    fresh = answers([speech, speech])
    assert fresh[0] != fresh[1]  # the state moved between the two
    later = answers([other, speech])
    assert answers([speech, speech]) == fresh
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AGENT_EVAL_PIPECAT_MEMO", "0")
        _memo.share_model_sessions()
        assert answers([other, speech]) == later
    _memo.share_model_sessions()


def test_the_memory_is_bounded_in_bytes_and_drops_the_oldest() -> None:
    store: _memo.ByteBoundedLRU[int] = _memo.ByteBoundedLRU(100)
    store.put("a", 1, 40)
    store.put("b", 2, 40)
    assert store.get("a") == 1  # a is now the newest
    store.put("c", 3, 40)
    assert store.get("b") is None
    assert (store.get("a"), store.get("c")) == (1, 3)
    store.put("huge", 4, 101)  # larger than the whole store: not kept
    assert store.get("huge") is None and len(store) == 2


def test_a_function_given_something_else_than_plain_audio_is_not_remembered() -> None:
    calls: list[Any] = []

    def loud(audio: Any, rate: int) -> float:
        calls.append(audio)
        return float(len(audio)) / rate

    remembered = _memo.remembering(loud)
    _memo.RESULTS.clear()
    assert remembered(b"\0\1" * 10, 16000) == remembered(b"\0\1" * 10, 16000)
    assert len(calls) == 1
    assert remembered(b"\0\2" * 10, 16000) and len(calls) == 2  # other audio: computed
    assert remembered([0, 1], 16000) and remembered([0, 1], 16000) and len(calls) == 4
    strided = memoryview(np.arange(8, dtype=np.int16))[::2]  # not one run of bytes
    assert remembered(strided, 16000) == remembered(strided, 16000) and len(calls) == 6
