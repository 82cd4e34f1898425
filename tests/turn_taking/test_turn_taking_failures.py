"""A ``turn_taking:`` item whose stimuli raise: the agent's own exception is its crash (CRASHED,
as a transcript's), any other exception an ERROR, and the result is recorded either way (never
a bare pytest failure with a traceback missing from the reports and the results file)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest

from pytest_agent_eval._turn_gate._run import run_category
from pytest_agent_eval._turn_gate._spec import TurnTakingSpec, load_turn_taking_file
from pytest_agent_eval._turn_taking._metrics import Observation
from pytest_agent_eval._turn_taking._observer import PlayedStimulus, TurnTakingObserver
from pytest_agent_eval._turn_taking._stimulus import Category
from pytest_agent_eval.models import Transcript
from pytest_agent_eval.voice._clip import AudioClip

TURNS = """\
id: turns
turn_taking:
  categories: [pause]
  voices: 1
  budgets:
    pause_takeover_rate_max: 0.0
"""


def _spec(tmp_path: Path) -> TurnTakingSpec:
    path = tmp_path / "turns.yaml"
    path.write_text(TURNS, encoding="utf-8")
    return load_turn_taking_file(path)


def _played(spec: TurnTakingSpec, rate: int = 16_000) -> list[PlayedStimulus]:
    (_, stimulus), *_ = spec.stimuli(Category.PAUSE)
    return [PlayedStimulus(stimulus, AudioClip(np.zeros(rate // 10, np.float32), rate), ())]


def test_an_exception_from_the_agents_own_code_is_a_crash_and_recorded(tmp_path: Path) -> None:
    spec = _spec(tmp_path)

    async def observe(played: PlayedStimulus) -> Observation:
        raise RuntimeError("session factory broke")  # the user's code

    result, record = asyncio.run(
        run_category(
            spec,
            Category.PAUSE,
            transcript=Transcript(id="turns[pause]", turns=[]),
            observer=TurnTakingObserver(framework="livekit", clock="virtual", observe=observe),
            played=_played(spec),
        )
    )
    (run,) = result.runs
    assert run.verdict == "crashed" and not result.passed and not result.errored
    assert run.crash is not None and run.crash.type == "RuntimeError"
    assert "test_turn_taking_failures.py" in (run.crash.where or "")
    assert "session factory broke" in (run.error or "")
    assert record.category == "pause" and record.budgets == ()


def test_an_exception_of_ours_is_an_error_and_recorded(tmp_path: Path) -> None:
    pytest.importorskip("livekit.agents")
    from pytest_agent_eval.adapters.livekit._turn_taking import adapter_observer

    spec = _spec(tmp_path)

    class Adapter:  # never asked for a session: the clip is refused first
        def session_factory(self) -> None:
            raise AssertionError("not reached")

    transcript = Transcript(id="turns[pause]", turns=[])
    observer = adapter_observer(Adapter(), transcript, tail_s=0.5)
    result, _ = asyncio.run(
        run_category(
            spec,
            Category.PAUSE,
            transcript=transcript,
            observer=observer,
            played=_played(spec, rate=8_000),  # our ValueError: the runner streams 16 kHz
        )
    )
    (run,) = result.runs
    assert run.verdict == "error" and result.errored and run.crash is None
    assert "ValueError: the runner streams 16 kHz audio" in (run.error or "")
    assert "outside the agent's code" in (run.error or "")


def test_an_item_that_cannot_run_at_all_is_recorded_as_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(
        "import pytest\n\n@pytest.fixture\ndef llm_eval_agent():\n    return lambda h: 'hi'\n"
    )
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(TURNS, encoding="utf-8")
    result = pytester.runpytest(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
    )
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*does not run them*LiveKitAdapter*"])
    document = json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))
    (entry,) = document["evals"]
    assert entry["verdict"] == "error" and entry["turn_taking"]["category"] == "pause"
