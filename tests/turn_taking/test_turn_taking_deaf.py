"""An agent whose VAD hears nothing is an ERROR in every category, on both frameworks: the words
of a short answer or a backchannel are too short to tell a deaf VAD from an agent ignoring
them, so each item first plays the hearing probe (a whole sentence), which a deaf VAD hears
none of. Without it a deaf agent fails short_answer's unanswered rate and passes
backchannel's keep-speaking budgets. The real LiveKit session and Pipecat pipeline, one deaf
configuration each (Silero asked for minutes of speech before it starts)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pytest_agent_eval._turn_gate._run import hearing_probe, prepare_stimuli, run_category
from pytest_agent_eval._turn_gate._spec import TurnTakingSpec, load_turn_taking_file
from pytest_agent_eval._turn_taking._metrics import Observation
from pytest_agent_eval._turn_taking._observer import PlayedStimulus, TurnTakingObserver
from pytest_agent_eval._turn_taking._stimulus import Category
from pytest_agent_eval.models import Transcript

SPEC = """\
id: deaf
turn_taking:
  categories: [short_answer, backchannel]
  voices: 1
  budgets:
    unanswered_rate_max: 1.0
    backchannel_takeover_rate_max: 0.0
"""


def _items(tmp_path: Path, observer: TurnTakingObserver) -> list[str | None]:
    """Each category's error, with its first stimulus played after the probe."""
    (tmp_path / "deaf.yaml").write_text(SPEC, encoding="utf-8")
    spec: TurnTakingSpec = load_turn_taking_file(tmp_path / "deaf.yaml")
    errors = []
    for category in (Category.SHORT_ANSWER, Category.BACKCHANNEL):
        probe = hearing_probe(category, spec.seeds[0])
        assert probe is not None
        probe_played, *played = prepare_stimuli(
            tmp_path / "cache", [probe, spec.stimuli(category)[0]]
        )
        result, record = asyncio.run(
            run_category(
                spec,
                category,
                transcript=Transcript(id=f"deaf[{category.value}]", turns=[]),
                observer=observer,
                played=played,
                probe=probe_played,
            )
        )
        assert result.errored == (result.runs[0].error is not None)
        assert record.budgets == () or result.runs[0].error is None
        errors.append(result.runs[0].error)
    return errors


def test_a_deaf_livekit_vad_is_an_error_for_short_answers_and_backchannels(
    tmp_path: Path,
) -> None:
    from livekit.plugins import silero

    from pytest_agent_eval.adapters.livekit._turn_taking import observe_livekit

    deaf = silero.VAD.load(min_speech_duration=60.0)

    async def observe(played: PlayedStimulus) -> Observation:
        return await observe_livekit(played.stimulus, played.clip, played.events, vad=deaf)

    errors = _items(tmp_path, TurnTakingObserver("livekit", "virtual", observe))
    for error in errors:
        assert error is not None and "hearing probe pause-01" in error
        assert "never heard the caller speak" in error and "min_speech_duration" in error


def test_a_deaf_pipecat_vad_is_an_error_for_short_answers_and_backchannels(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")
    from test_turn_taking_pipecat import bot

    from pytest_agent_eval.adapters.pipecat._turn_taking import observe_bot

    deaf = bot(start_secs=60.0)

    async def observe(played: PlayedStimulus) -> Observation:
        return await observe_bot(played.stimulus, played.clip, played.events, deaf)

    errors = _items(tmp_path, TurnTakingObserver("pipecat", "virtual", observe))
    for error in errors:
        assert error is not None and "hearing probe pause-01" in error
        assert "never heard the caller speak" in error and "start_secs" in error
