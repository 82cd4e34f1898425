"""Turn-taking on real Pipecat pipelines (Silero VAD, the user aggregator's turn strategies,
smart-turn v3 from Pipecat's wheel), on the virtual clock: the same stimuli give the same
metrics on a rerun, and the same decisions in real time; the metrics follow the bot's own
settings (a longer VAD stop time waits longer and takes over fewer pauses; smart-turn takes
over more of them than the VAD's silence timeout); and a ``turn_taking:`` file gates a Pipecat
project through pytest. About 240 s on the loaded 2-core machine (load ~10 to 15), half of it
the pytester run."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pipecat.frames.frames", reason="needs the pipecat extra")

from pytest_agent_eval._turn_taking._metrics import Observation, compute_metrics
from pytest_agent_eval._turn_taking._pack import build_pack, write_pack
from turn_decisions import decisions, rates

# The first voice's pauses (0.3, 0.9, 1.5 and 1.9 s mid-sentence) and a barge-in.
PAUSES = ("pause-01", "pause-04", "pause-07", "pause-10")
BARGE_IN = "barge_in-01"


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("pack")
    write_pack(folder, seed=0, only=(*PAUSES, BARGE_IN))
    return folder


def bot(
    *,
    stop_secs: float = 0.2,
    smart_turn: bool = False,
    start_secs: float = 0.2,
    llm: Callable[[], Any] | None = None,
    mute: bool = False,
    swallow: bool = False,
    drop_s: float = 0.0,
    heard: list[str] | None = None,
) -> Callable[[Any], Any]:
    """A bot as Pipecat's examples build one, offline: Silero VAD with ``stop_secs`` (and
    ``start_secs``), and the user's turn ended by smart-turn v3 (Pipecat's default) or by the
    VAD's silence timeout."""
    from pipecat.audio.vad.silero import SileroVADAnalyzer
    from pipecat.audio.vad.vad_analyzer import VADParams
    from pipecat.pipeline.pipeline import Pipeline
    from pipecat.processors.aggregators.llm_context import LLMContext
    from pipecat.processors.aggregators.llm_response_universal import (
        LLMContextAggregatorPair,
        LLMUserAggregatorParams,
    )
    from pipecat.turns.user_mute import AlwaysUserMuteStrategy
    from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import (
        SpeechTimeoutUserTurnStopStrategy,
    )
    from pipecat.turns.user_turn_strategies import UserTurnStrategies

    import pytest_agent_eval.adapters.pipecat as ours  # under pytest the plugin set its clock

    def make(transport: Any) -> Any:
        strategies = (
            None if smart_turn else UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy()])
        )
        user, assistant = LLMContextAggregatorPair(
            LLMContext(),
            user_params=LLMUserAggregatorParams(
                vad_analyzer=SileroVADAnalyzer(
                    params=VADParams(stop_secs=stop_secs, start_secs=start_secs)
                ),
                user_turn_strategies=strategies,
                user_mute_strategies=[AlwaysUserMuteStrategy()] if mute else [],
            ),
        )
        return Pipeline(
            [
                transport.input(),
                *([_drop_audio(drop_s)] if drop_s else []),
                ours.FixtureTextSTTService(),
                *([_heard(heard)] if heard is not None else []),
                user,
                llm() if llm else ours.ScriptedLLMService([], default_reply="What it says."),
                ours.SynthesizerTTSService(),
                *([_swallow_interruptions()] if swallow else []),
                transport.output(),
                assistant,
            ]
        )

    return make


def _drop_audio(seconds: float) -> Any:
    """A processor that drops the first ``seconds`` of the microphone's audio it is given and
    notes the transcriptions that come back past it: the STT after it receives fewer samples
    than the microphone played."""
    from pipecat.frames.frames import Frame, InputAudioRawFrame
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    class DropAudio(FrameProcessor):
        dropped = 0.0

        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, InputAudioRawFrame) and self.dropped < seconds:
                self.dropped += len(frame.audio) / 2 / frame.sample_rate
                return
            await self.push_frame(frame, direction)

    return DropAudio()


def _heard(into: list[str]) -> Any:
    """A processor that notes the text of every transcription passing it."""
    from pipecat.frames.frames import Frame, TranscriptionFrame
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    class Heard(FrameProcessor):
        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if isinstance(frame, TranscriptionFrame):
                into.append(frame.text)
            await self.push_frame(frame, direction)

    return Heard()


def _swallow_interruptions() -> Any:
    """A processor that drops every ``InterruptionFrame``: the output never hears one."""
    from pipecat.frames.frames import Frame, InterruptionFrame
    from pipecat.processors.frame_processor import FrameDirection, FrameProcessor

    class SwallowInterruptions(FrameProcessor):
        async def process_frame(self, frame: Frame, direction: FrameDirection) -> None:
            await super().process_frame(frame, direction)
            if not isinstance(frame, InterruptionFrame):
                await self.push_frame(frame, direction)

    return SwallowInterruptions()


def _observe(
    pack: Path, ids: tuple[str, ...], make: Callable[[Any], Any], *, speed: float = 0.0
) -> list[Observation]:
    from pytest_agent_eval.adapters.pipecat._turn_taking import observe_pack

    return asyncio.run(observe_pack(pack, list(ids), make, speed=speed))


_RUNS: dict[str, list[Observation]] = {}


def _plain(pack: Path, stop_secs: float) -> list[Observation]:
    """The pauses through the plain-VAD bot (each configuration played once per module)."""
    key = f"plain {stop_secs}"
    if key not in _RUNS:
        _RUNS[key] = _observe(pack, PAUSES, bot(stop_secs=stop_secs))
    return _RUNS[key]


def test_the_stimuli_are_what_the_tests_say() -> None:
    by_id = {s.id: s for s in build_pack(0)}
    assert [by_id[i].category.value for i in PAUSES] == ["pause"] * 4
    assert by_id[BARGE_IN].expect.value == "yield" and by_id[BARGE_IN].agent_speaking


def test_three_runs_give_identical_metrics_and_real_time_the_same_decisions(pack: Path) -> None:
    ids = (PAUSES[0], BARGE_IN)
    first, second, third = (_observe(pack, ids, bot()) for _ in range(3))
    assert first == second == third  # to the sample: the virtual clock is audio time
    assert compute_metrics(first) == compute_metrics(second) == compute_metrics(third)
    # The barge-in was yielded to and the pause waited through: the runs measured something.
    assert first[1].agent_stopped_s is not None and not first[0].took_over_early

    real = _observe(pack, ids, bot(), speed=1.0)
    # In real time the compute (Silero, the TTS) takes wall time, which the latencies include;
    # every decision, and so every rate, is the same.
    assert rates(real) == rates(first)
    assert decisions(real) == decisions(first)


def test_a_longer_vad_stop_time_waits_longer_and_takes_over_fewer_pauses(pack: Path) -> None:
    quick = compute_metrics(_plain(pack, 0.2))
    patient = compute_metrics(_plain(pack, 0.8))
    q_rate, p_rate = quick["pause_takeover_rate"], patient["pause_takeover_rate"]
    assert q_rate.count == p_rate.count == 4
    assert q_rate.hits is not None and p_rate.hits is not None
    assert p_rate.hits < q_rate.hits
    q_eot, p_eot = quick["end_of_turn_latency_ms_p50"], patient["end_of_turn_latency_ms_p50"]
    assert q_eot.value is not None and p_eot.value is not None
    # The turn ends stop_secs after the speech plus the strategy's own 0.6 s: 0.6 s later.
    assert p_eot.value == pytest.approx(q_eot.value + 600, abs=60)


def test_smart_turn_takes_over_more_pauses_than_the_vads_silence_timeout(pack: Path) -> None:
    smart = compute_metrics(_observe(pack, PAUSES, bot(smart_turn=True)))
    plain = compute_metrics(_plain(pack, 0.2))
    s_rate, p_rate = smart["pause_takeover_rate"], plain["pause_takeover_rate"]
    assert s_rate.hits is not None and p_rate.hits is not None
    assert s_rate.hits > p_rate.hits


def test_a_vad_that_hears_nothing_is_an_error_not_a_patient_bot(pack: Path) -> None:
    # A VAD that never hears speech would never take over a pause: a pause budget would pass
    # for the wrong reason.
    from pytest_agent_eval.errors import AdapterError

    with pytest.raises(AdapterError, match="the pipeline's VAD never heard the caller speak"):
        _observe(pack, PAUSES[:1], bot(start_secs=60.0))


def test_a_bot_that_mutes_the_caller_while_it_speaks_is_measured_not_yielding(
    pack: Path,
) -> None:
    # Pipecat's mute strategy drops the caller's audio before the VAD: the bot chose not to
    # listen, as a LiveKit agent with interruptions off, which is a measurement, not deafness.
    (muted,) = _observe(pack, (BARGE_IN,), bot(mute=True))
    assert muted.agent_stopped_s is None
    assert compute_metrics([muted])["barge_in_yield_rate"].value == 0.0


def test_an_interruption_swallowed_before_the_output_is_no_yield(pack: Path) -> None:
    # The bot decided to yield, but a processor kept the interruption from its output: its
    # audio played on, so the caller heard no yield (as LiveKit measures: the audio's stop).
    (kept_on,) = _observe(pack, (BARGE_IN,), bot(swallow=True))
    assert kept_on.agent_stopped_s is None


def test_the_stand_in_stt_hears_words_on_the_microphones_clock(pack: Path) -> None:
    # pause-01 is "I'm calling about the" (0.25 to 1.2 s), then "invoice I got last week."
    # (1.7 to 3.12 s). A processor before the STT drops the first 2 s of the microphone: the
    # STT receives the tail only, and hears its words where the microphone played them (on
    # the samples it received, 2 s early, it would hear the head's).
    heard: list[str] = []
    _observe(pack, PAUSES[:1], bot(drop_s=2.0, heard=heard))
    assert heard == ["invoice I got last week."]


def test_a_service_it_cannot_script_is_an_error_naming_the_offline_one(pack: Path) -> None:
    # The bot's own LLM (a cloud model's, say) would answer as it likes, or need a network.
    from pipecat.services.llm_service import LLMService

    from pytest_agent_eval.errors import AdapterError

    class OwnLLM(LLMService):  # type: ignore[misc]
        def __init__(self) -> None:
            from pipecat.services.settings import LLMSettings

            super().__init__(settings=LLMSettings(model="own"))

        async def process_frame(self, frame: Any, direction: Any) -> None:
            await super().process_frame(frame, direction)
            await self.push_frame(frame, direction)  # as a model's service passes frames on

    with pytest.raises(AdapterError, match="the pipeline's LLM is OwnLLM.*ScriptedLLMService"):
        _observe(pack, PAUSES[:1], bot(llm=OwnLLM))

    # Held inactive in an LLMSwitcher behind the scripted one, it is never played: no refusal.
    from pipecat.pipeline.llm_switcher import LLMSwitcher

    import pytest_agent_eval.adapters.pipecat as ours

    def switcher() -> Any:
        return LLMSwitcher([ours.ScriptedLLMService([], default_reply="Hi."), OwnLLM()])

    (answered,) = _observe(pack, PAUSES[:1], bot(llm=switcher))
    assert answered.agent_turn_start_s is not None


CONFTEST = """
import os

import pytest
from pipecat.audio.vad.silero import SileroVADAnalyzer
from pipecat.audio.vad.vad_analyzer import VADParams
from pipecat.pipeline.pipeline import Pipeline
from pipecat.processors.aggregators.llm_context import LLMContext
from pipecat.processors.aggregators.llm_response_universal import (
    LLMContextAggregatorPair,
    LLMUserAggregatorParams,
)
from pipecat.turns.user_stop.speech_timeout_user_turn_stop_strategy import (
    SpeechTimeoutUserTurnStopStrategy,
)
from pipecat.turns.user_turn_strategies import UserTurnStrategies

from pytest_agent_eval.adapters.pipecat import (
    FixtureTextSTTService,
    PipecatAdapter,
    ScriptedLLMService,
    SynthesizerTTSService,
)

STOP_SECS = float(os.environ["TT_STOP_SECS"])


def make_bot(transport):
    user, assistant = LLMContextAggregatorPair(
        LLMContext(),
        user_params=LLMUserAggregatorParams(
            vad_analyzer=SileroVADAnalyzer(params=VADParams(stop_secs=STOP_SECS)),
            user_turn_strategies=UserTurnStrategies(stop=[SpeechTimeoutUserTurnStopStrategy()]),
        ),
    )
    return Pipeline([
        transport.input(), FixtureTextSTTService(), user, ScriptedLLMService([]),
        SynthesizerTTSService(), transport.output(), assistant,
    ])


@pytest.fixture
def llm_eval_agent():
    return PipecatAdapter(make_bot)
"""

# The pack's first voice speaks four of the twelve pauses: 0.3, 0.9, 1.5 and 1.9 s.
TURNS = """\
id: turns
turn_taking:
  categories: [pause]
  voices: 1
  budgets:
    pause_takeover_rate_max: 0.3
"""


def test_a_pipecat_project_fails_a_pause_budget_with_one_vad_and_passes_with_another(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyprojecttoml('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    pytester.makeconftest(CONFTEST)
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "turns.yaml").write_text(TURNS, encoding="utf-8")

    def run(stop_secs: float) -> tuple[pytest.RunResult, dict[str, Any]]:
        pytester._monkeypatch.setenv("TT_STOP_SECS", str(stop_secs))  # type: ignore[attr-defined]
        result = pytester.runpytest_subprocess(
            "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
        )
        return result, json.loads((pytester.path / "r.json").read_text(encoding="utf-8"))

    quick, quick_doc = run(0.2)
    quick.assert_outcomes(failed=1)
    quick.stdout.fnmatch_lines(
        [
            "*pause_takeover_rate = 0.5 (2 of 4), budget <= 0.3: over budget*",
            "turns?pause?*pause_takeover_rate*2/4*<= 0.3*FAIL",
        ]
    )
    (entry,) = quick_doc["evals"]
    took = entry["turn_taking"]
    assert (took["framework"], took["clock"], took["stimuli"]) == ("pipecat", "virtual", 4)

    patient, patient_doc = run(0.8)
    patient.assert_outcomes(passed=1)
    (entry,) = patient_doc["evals"]
    assert entry["verdict"] == "passed"
    rate = next(m for m in entry["turn_taking"]["metrics"] if m["name"] == "pause_takeover_rate")
    assert (rate["hits"], rate["count"]) == (1, 4)
